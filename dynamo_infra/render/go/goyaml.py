"""YAML text as the operator's Go writes it: `sigs.k8s.io/yaml.Marshal` (Go JSON, then go-yaml v2).

For JSON-shaped values (maps with string keys, lists, strings, numbers, booleans, null): numbers
take their Go JSON form (an integral float is an integer), map keys are sorted the go-yaml way (runs
of digits compare as numbers), a string that would read back as another type (YAML 1.1: `yes`, `on`,
`1e3`, `2024-01-01`, `1:20`, `""`, ...) is double-quoted, a string with a line break is a literal
block, floats are written like Go's `strconv.FormatFloat(f, 'g', -1, 64)`. Layout and line folding
(80 columns) are libyaml's, which both go-yaml and PyYAML port.
"""

from __future__ import annotations

import functools
import re
from datetime import date
from decimal import Decimal
from typing import Any

import yaml

# Go's encoding/json writes floats below 1e21 without an exponent: integral ones read back as ints.
_JSON_PLAIN_FLOAT_LIMIT = 1e21
# go-yaml's YAML 1.1 words that read back as booleans, null or special floats.
_RESOLVED_WORDS = frozenset(
    {
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
        "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
        "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF",
        "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
    }
)  # fmt: skip
_YAML_STYLE_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_BASE60_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
# The timestamp layouts go-yaml v2 tries (date, RFC 3339 with short fields, space-separated).
_TIMESTAMP = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:[Tt]\d{1,2}:\d{1,2}:\d{1,2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})|"
    r" \d{1,2}:\d{1,2}:\d{1,2}(?:\.\d{1,9})?)?$"
)
_GO_INT = re.compile(r"^[+-]?(0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[1-9][0-9]*|0)$")
_GO_INT64_MAX = 2**63 - 1
_GO_UINT64_MAX = 2**64 - 1


def _parses_as_go_int(s: str) -> bool:
    """strconv.ParseInt(s, 0, 64), else ParseUint(s, 0, 64), succeeds."""
    if not _GO_INT.match(s):
        return False
    body = s.lstrip("+-")
    base = {"x": 16, "o": 8, "b": 2}.get(body[1:2].lower(), 8 if len(body) > 1 and body[0] == "0" else 10)
    digits = body[2:] if body[1:2].lower() in ("x", "o", "b") else body
    value = int(digits, base) * (-1 if s.startswith("-") else 1)
    return -_GO_INT64_MAX - 1 <= value <= (_GO_UINT64_MAX if not s.startswith("-") else 0)


def _is_timestamp(s: str) -> bool:
    m = _TIMESTAMP.match(s)
    if not m:
        return False
    try:
        date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def _parses_as_float(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def resolves_to_other_type(s: str) -> bool:
    """go-yaml v2 `resolve("", s)` gives a tag other than !!str, or `s` looks like a base-60 float."""
    if s == "" or s in _RESOLVED_WORDS:
        return True
    first = s[0]
    if first == ".":
        return _parses_as_float(s)
    if first in "+-0123456789":
        plain = s.replace("_", "")
        return (
            _is_timestamp(s)
            or _parses_as_go_int(plain)
            or bool(_YAML_STYLE_FLOAT.match(plain))
            or bool(_BASE60_FLOAT.match(s))
        )
    return False


def format_float(f: float) -> str:
    """strconv.FormatFloat(f, 'g', -1, 64), with go-yaml's spellings of infinities and NaN."""
    if f != f:
        return ".nan"
    if f in (float("inf"), float("-inf")):
        return ".inf" if f > 0 else "-.inf"
    if f == 0:
        return "-0" if str(f).startswith("-") else "0"
    sign, digits, exponent = Decimal(repr(f)).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits))
    point = len(mantissa) + exponent  # digits before the decimal point
    neg = "-" if sign else ""
    exp = point - 1
    if exp < -4 or exp >= 6:
        rest = f".{mantissa[1:]}" if len(mantissa) > 1 else ""
        return f"{neg}{mantissa[0]}{rest}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * -point}{mantissa}"
    if point >= len(mantissa):
        return f"{neg}{mantissa}{'0' * (point - len(mantissa))}"
    return f"{neg}{mantissa[:point]}.{mantissa[point:]}"


def _number(value: int | float) -> str:
    """A number as stored by the API server (int64, else float64), written by Go's JSON and read
    back by go-yaml (an integer when the JSON text is one that fits 64 bits)."""
    if isinstance(value, int):
        if -_GO_INT64_MAX - 1 <= value <= _GO_INT64_MAX:
            return str(value)
        value = float(value)
    if value.is_integer() and abs(value) < _JSON_PLAIN_FLOAT_LIMIT:
        text = f"{Decimal(repr(value)).normalize():f}"
        if -_GO_INT64_MAX - 1 <= int(text) <= _GO_UINT64_MAX:
            return text
    return format_float(value)


def _key_less(a: str, b: str) -> bool:
    """go-yaml v2 keyList.Less for two string keys: letters before other runes, digit runs by value."""
    for i in range(min(len(a), len(b))):
        ca, cb = a[i], b[i]
        if ca == cb:
            continue
        al, bl = ca.isalpha(), cb.isalpha()
        if al and bl:
            return ca < cb
        if al or bl:
            return bl
        an = bn = 0
        if ca == "0" or cb == "0":
            j = i - 1
            while j >= 0 and a[j].isdigit():
                if a[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(a) and a[ai].isdigit():
            an = an * 10 + int(a[ai])
            ai += 1
        bi = i
        while bi < len(b) and b[bi].isdigit():
            bn = bn * 10 + int(b[bi])
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ca < cb
    return len(a) < len(b)


def _key_order(a: str, b: str) -> int:
    return -1 if _key_less(a, b) else (1 if _key_less(b, a) else 0)


class _Scalar(str):
    """A scalar already written as text, with the style go-yaml gives it (None: plain)."""

    style: str | None = None


def _scalar(text: str, style: str | None = None) -> _Scalar:
    s = _Scalar(text)
    s.style = style
    return s


def _go_value(value: Any) -> Any:
    """The value as go-yaml holds it after reading Go's JSON, its scalars as styled text."""
    if isinstance(value, dict):
        keys = sorted((str(k) for k in value), key=functools.cmp_to_key(_key_order))
        return {_go_value(k): _go_value(value[k]) for k in keys}
    if isinstance(value, list | tuple):
        return [_go_value(v) for v in value]
    if value is None:
        return _scalar("null")
    if isinstance(value, bool):
        return _scalar("true" if value else "false")
    if isinstance(value, int | float):
        return _scalar(_number(value))
    s = str(value)
    if "\n" in s:
        return _scalar(s, "|")
    return _scalar(s, '"' if resolves_to_other_type(s) else None)


class _Dumper(yaml.SafeDumper):
    """Writes every scalar with the str tag (implicit) and the style chosen above."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode:
            return "tag:yaml.org,2002:str"
        return "tag:yaml.org,2002:map" if kind is yaml.MappingNode else "tag:yaml.org,2002:seq"


def _represent_scalar(dumper: yaml.SafeDumper, s: _Scalar) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(s), style=s.style)


_Dumper.add_representer(_Scalar, _represent_scalar)


# PyYAML ends a document whose last scalar keeps trailing line breaks (`|+`) with this marker;
# go-yaml does not write it.
_DOCUMENT_END = "\n...\n"


def marshal(value: Any) -> str:
    """`sigs.k8s.io/yaml.Marshal` of a JSON-shaped value."""
    text = yaml.dump(
        _go_value(value), Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )
    return text[: -len(_DOCUMENT_END) + 1] if text.endswith(_DOCUMENT_END) else text


# Nanoseconds per unit of Go's time.ParseDuration.
_DURATION_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)([a-z\u00b5\u03bc]+)")


def parse_duration(text: str) -> int:
    """time.ParseDuration, in nanoseconds (ValueError when Go would refuse it)."""
    sign, body = (-1, text[1:]) if text[:1] == "-" else (1, text[1:] if text[:1] == "+" else text)
    if body == "0":
        return 0
    total, pos = Decimal(0), 0
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        if not m or m[1] in ("", ".") or m[2] not in _DURATION_UNITS:
            raise ValueError(f'time: invalid duration "{text}"')
        total += Decimal(m[1]) * _DURATION_UNITS[m[2]]
        pos = m.end()
    if not body:
        raise ValueError(f'time: invalid duration "{text}"')
    return sign * int(total)


def _fraction(value: int, digits: int) -> str:
    whole, frac = divmod(value, 10**digits)
    tail = str(frac).rjust(digits, "0").rstrip("0") if digits else ""
    return f"{whole}.{tail}" if tail else str(whole)


def format_duration(ns: int) -> str:
    """time.Duration.String: `1h2m3.5s`, `1.5ms`, `0s`."""
    sign, u = ("-" if ns < 0 else ""), abs(ns)
    if u < _DURATION_UNITS["s"]:
        if u == 0:
            return "0s"
        if u < _DURATION_UNITS["us"]:
            return f"{sign}{u}ns"
        if u < _DURATION_UNITS["ms"]:
            return f"{sign}{_fraction(u, 3)}\u00b5s"
        return f"{sign}{_fraction(u, 6)}ms"
    out = f"{_fraction(u % 60_000_000_000, 9)}s"
    minutes = u // 60_000_000_000
    if minutes:
        out = f"{minutes % 60}m{out}"
        if minutes // 60:
            out = f"{minutes // 60}h{out}"
    return sign + out
