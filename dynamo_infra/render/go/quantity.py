"""Kubernetes `resource.Quantity` as Go writes it to JSON: parsed, rounded up to nano units, and
printed in canonical form (or verbatim, when the parser keeps the text it was given)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dynamo_infra.errors import DynamoInfraError

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"
# Suffix -> power of ten (DecimalSI) and power of two (BinarySI).
DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
# Quantities are exact to 10^-9 (non-zero values are rounded up, away from zero).
NANO = 9
# Digits an int64 always holds (the parser's fast path works below it).
MAX_INT64_FACTORS = 18
# BinarySI values are capped at the largest int64.
MAX_ALLOWED = 2**63 - 1
_NUMBER = re.compile(r"^([+-]?)0*([0-9]*)(?:\.([0-9]*))?(.*)$")
_SUFFIX = re.compile(r"^[eEinumkKMGTP]*[+-]?[0-9]*$")


@dataclass(frozen=True)
class Quantity:
    """`nanos` * 10^-9, its format, and the text to print verbatim when the parser kept it."""

    nanos: int
    format: str
    text: str = ""


def _suffix(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix, as quantitySuffixer.interpret reads it."""
    if suffix in DECIMAL_SUFFIXES:
        return 10, DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in BINARY_SUFFIXES:
        return 2, BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        return 10, int(suffix[1:]), DECIMAL_EXPONENT
    raise DynamoInfraError(f"quantity suffix {suffix!r} is not one Kubernetes knows")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def parse(text: str) -> Quantity:
    """ParseQuantity."""
    if text == "":
        raise DynamoInfraError("a quantity is empty")
    if text == "0":
        return Quantity(0, DECIMAL_SI, text)
    m = _NUMBER.match(text)
    if not m or not _SUFFIX.match(m[4]):
        raise DynamoInfraError(f"{text!r} is not a quantity")
    positive = m[1] != "-"
    num = m[2] or "0"
    denom = m[3] or ""
    base, exponent, fmt = _suffix(m[4])
    if fmt == BINARY_SI:
        fast = exponent >= 0 and not denom
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1 if fast else -1
        scale = 0
    else:
        precision = MAX_INT64_FACTORS - len(num + denom)
        scale = exponent
    if precision >= 0 and scale - len(denom) >= -NANO:
        scale -= len(denom)
        shifted = num + denom
        value = int(shifted) << (exponent if fmt == BINARY_SI else 0)
        if value <= MAX_ALLOWED:
            nanos = value * 10 ** (scale + NANO)
            canonical = (
                exponent % 10 == 0 and int(shifted) & 0x07 != 0
                if fmt == BINARY_SI
                else scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
            )
            return Quantity(nanos if positive else -nanos, fmt, text if canonical else "")
    # Exact value, in units of 10^-(NANO + fraction digits), then rounded up to nano.
    digits = int(num + denom)
    unit = len(denom)
    if base == 10:
        unit -= exponent
    else:
        digits <<= exponent
    nanos = digits * 10 ** (NANO - unit) if unit <= NANO else _ceil_div(digits, 10 ** (unit - NANO))
    if fmt == BINARY_SI and nanos > MAX_ALLOWED * 10**NANO:
        nanos = MAX_ALLOWED * 10**NANO
    if fmt == BINARY_SI and 0 < nanos < 10**NANO:
        fmt = DECIMAL_SI
    return Quantity(nanos if positive else -nanos, fmt)


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    sign, value, times = (-1 if value < 0 else 1), abs(value), 0
    while value >= base and value % base == 0:
        value, times = value // base, times + 1
    return sign * value, times


def canonical(q: Quantity) -> str:
    """Quantity.MarshalJSON's text: the kept text, else CanonicalizeBytes."""
    if q.text:
        return q.text
    if q.nanos == 0:
        return "0"
    fmt = q.format
    if fmt == BINARY_SI and (-1024 * 10**NANO < q.nanos < 1024 * 10**NANO or q.nanos % 10**NANO):
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        amount, times = _remove_factors(q.nanos // 10**NANO, 1024)
        suffix = {v: k for k, v in BINARY_SUFFIXES.items()}.get(times * 10, "")
        return f"{amount}{suffix}"
    amount, times = _remove_factors(q.nanos, 10)
    exponent = times - NANO
    while exponent % 3:
        amount, exponent = amount * 10, exponent - 1
    if fmt == DECIMAL_EXPONENT:
        return f"{amount}e{exponent}" if exponent else str(amount)
    suffix = {v: k for k, v in DECIMAL_SUFFIXES.items()}.get(exponent, "")
    return f"{amount}{suffix}"


def is_zero(q: Quantity) -> bool:
    return q.nanos == 0
