"""resource.Quantity as Go writes it (expected texts from k8s.io/apimachinery v0.36.2's MarshalJSON)."""

from __future__ import annotations

import pytest

from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.render.go import quantity

# (input, what Quantity.MarshalJSON writes after ParseQuantity(input)).
CASES = [
    # Kept verbatim: already canonical (or the parser's fast path keeps the text as written).
    ("1", "1"),
    ("+1", "+1"),
    ("1E3", "1E3"),
    ("12e6", "12e6"),
    ("100Mi", "100Mi"),
    ("500m", "500m"),
    ("2Gi", "2Gi"),
    ("-1Gi", "-1Gi"),
    ("1.", "1."),
    # Canonicalised.
    ("0", "0"),
    ("00", "0"),
    ("0.5", "500m"),
    ("1.5", "1500m"),
    ("1000", "1k"),
    ("1000m", "1"),
    ("1500m", "1500m"),
    ("3000u", "3m"),
    ("0.5m", "500u"),
    ("1e-3", "1e-3"),
    ("1.5e3", "1500"),
    ("1e-10", "1e-9"),
    ("0.1n", "1n"),
    ("1000E", "1"),
    ("1024Mi", "1Gi"),
    ("1024Ti", "1Pi"),
    ("8Gi", "8Gi"),
    ("1.5Gi", "1536Mi"),
    ("1.5Mi", "1536Ki"),
    ("0.5Ki", "512"),
    ("0.0001Ki", "102400u"),
    ("1024", "1024"),
    ("-1.5", "-1500m"),
    ("-0.5Ki", "-512"),
    ("9Ei", "9223372036854775807"),
    ("12345678901234567890", "12345678901234567890"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_canonical_text_is_what_go_writes(text: str, expected: str) -> None:
    assert quantity.canonical(quantity.parse(text)) == expected


@pytest.mark.parametrize("text", ["", "1e", "1Q", "abc", "1.5.5"])
def test_what_go_rejects_is_rejected(text: str) -> None:
    with pytest.raises(DynamoInfraError):
        quantity.parse(text)


def test_zero() -> None:
    assert quantity.is_zero(quantity.parse("0m"))
    assert not quantity.is_zero(quantity.parse("1n"))
