"""Go's `encoding/json`, exactly, for the operator's DynamoComponentDeploymentSpec.

`marshal(value, type)` returns the bytes `json.Marshal` writes for the Go value that unmarshalling
`value` (a manifest: dicts, lists, scalars) into `type` gives: struct fields in Go declaration order,
absent fields as their zero value, `omitempty`/`omitzero` applied as Go applies them (an empty
struct is not omitted), map keys sorted, `<`, `>`, `&` escaped, and the types that marshal themselves
(Quantity, IntOrString, Time, Duration, raw JSON) written as they write themselves. The Go types
come from go_types.json, generated from the operator's API source by tools/gojson_table.py.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.render.go import quantity

TABLE_PATH = Path(__file__).with_name("go_types.json")
_POINTER, _SLICE, _MAP = "*", "[]", "map[string]"
# Escapes of encoding/json for control characters that have a short form.
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
# Characters escaped as \u00XX besides controls (HTML safety) and the JavaScript line separators.
_UNICODE_ESCAPED = frozenset("<>&\u2028\u2029")
# Any character `quote` writes otherwise than as itself (most strings have none: written as they are).
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f<>&\u2028\u2029\ud800-\udfff]')
# Lone surrogates: `quote` writes each as U+FFFD.
_SURROGATE = re.compile("[\ud800-\udfff]")


class GoJSONError(DynamoInfraError):
    """A value does not fit the Go type it is marshalled as."""


@dataclass(frozen=True)
class GoField:
    name: str
    type: str
    omitempty: bool = False
    omitzero: bool = False
    # omitzero asks the type's IsZero method rather than comparing with the zero value.
    zero_method: bool = False


@dataclass(frozen=True)
class GoTypes:
    """The struct types reachable from `root` (fields in encoding order) and the self-marshalling types."""

    root: str
    structs: Mapping[str, tuple[GoField, ...]]
    marshalers: frozenset[str]
    sources: Mapping[str, str]


@functools.cache
def go_types() -> GoTypes:
    raw = json.loads(TABLE_PATH.read_text(encoding="utf-8"))
    structs = {
        name: tuple(
            GoField(
                f["name"],
                f["type"],
                f.get("omitempty", False),
                f.get("omitzero", False),
                f.get("zeroMethod", False),
            )
            for f in fields
        )
        for name, fields in raw["structs"].items()
    }
    return GoTypes(raw["root"], structs, frozenset(raw["marshalers"]), raw["sources"])


def quote(s: str) -> str:
    """A Go string as encoding/json writes it (HTML-safe; lone surrogates become U+FFFD)."""
    if not _NEEDS_ESCAPE.search(s):
        return f'"{s}"'
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif code < 0x20 or ch in _UNICODE_ESCAPED:
            out.append(f"\\u{code:04x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_float(f: float, bits: int = 64) -> str:
    """strconv's shortest float text in encoding/json's choice of 'f' or 'e' form."""
    if math.isinf(f) or math.isnan(f):
        raise GoJSONError(f"unsupported float value {f}")
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    text = repr(f)
    if bits == 32:
        for precision in range(1, 10):
            text = f"{f:.{precision}g}"
            if _f32(float(text)) == _f32(f):
                break
    d = Decimal(text).normalize()
    if not 1e-6 <= abs(_f32(f) if bits == 32 else f) < 1e21:
        sign, digits, exp = d.as_tuple()
        mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
        e = int(exp) + len(digits) - 1
        return f"{'-' if sign else ''}{mantissa}e{'-' if e < 0 else '+'}{abs(e):02d}".replace("e-0", "e-")
    return f"{d:f}"


def _f32(f: float) -> float:
    import struct

    return float(struct.unpack("f", struct.pack("f", f))[0])


def raw_json(v: Any) -> str:
    """JSON as the API server stores it (keys sorted), compacted and HTML-escaped by encoding/json."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_float(v)
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, list):
        return "[" + ",".join(raw_json(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{quote(k)}:{raw_json(v[k])}" for k in sorted(v)) + "}"
    raise GoJSONError(f"{type(v).__name__} is not JSON")


def _quantity_text(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise GoJSONError(f"{v!r} is not a quantity")
    text = v.strip() if isinstance(v, str) else str(v) if isinstance(v, int) else go_float(v)
    return quantity.canonical(quantity.parse(text))


def _time(v: Any) -> str:
    if not v:
        return "null"
    t = datetime.fromisoformat(str(v)).astimezone(UTC)
    return quote(t.strftime("%Y-%m-%dT%H:%M:%SZ"))


_DURATION_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9}
_DURATION_UNITS |= {"m": 60 * 10**9, "h": 3600 * 10**9}
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]+)")


def parse_duration(text: str) -> int:
    """time.ParseDuration, in nanoseconds."""
    sign, body = (-1, text[1:]) if text[:1] == "-" else (1, text.lstrip("+"))
    if body == "0":
        return 0
    total, pos = 0, 0
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        if not m or not (m[1] or m[2]) or m[3] not in _DURATION_UNITS:
            raise GoJSONError(f"invalid duration {text!r}")
        unit = _DURATION_UNITS[m[3]]
        total += int(m[1] or 0) * unit + (int(m[2]) * unit // 10 ** len(m[2]) if m[2] else 0)
        pos = m.end()
    if not body:
        raise GoJSONError(f"invalid duration {text!r}")
    return sign * total


def format_duration(ns: int) -> str:
    """time.Duration.String."""
    sign, u = ("-" if ns < 0 else ""), abs(ns)
    if u < 10**9:
        for limit, prec, unit in ((1, 0, "s"), (10**3, 0, "ns"), (10**6, 3, "µs"), (10**9, 6, "ms")):
            if u < limit:
                return sign + ("0s" if u == 0 else _frac(u, prec) + unit)
    seconds, minutes = _frac(u, 9), u // (60 * 10**9)
    whole, _, frac = seconds.partition(".")
    out = str(int(whole) % 60) + (f".{frac}" if frac else "") + "s"
    if minutes:
        out = f"{minutes % 60}m{out}"
        if minutes // 60:
            out = f"{minutes // 60}h{out}"
    return sign + out


def _frac(v: int, prec: int) -> str:
    whole, frac = divmod(v, 10**prec)
    digits = f"{frac:0{prec}d}".rstrip("0") if prec else ""
    return f"{whole}.{digits}" if digits else str(whole)


@dataclass(frozen=True)
class Marshaler:
    """A type with its own MarshalJSON: how it writes a manifest value, and its Go kind for omitempty."""

    write: Callable[[Any], str]
    kind: str
    is_zero: Callable[[Any], bool]


MARSHALERS: Mapping[str, Marshaler] = {
    "api/resource.Quantity": Marshaler(
        lambda v: quote(_quantity_text("0" if v is None else v)),
        "struct",
        lambda v: v is None or quantity.is_zero(quantity.parse(_quantity_text(v))),
    ),
    "util/intstr.IntOrString": Marshaler(
        lambda v: quote(v) if isinstance(v, str) else str(int(v or 0)), "struct", lambda v: not v
    ),
    "meta/v1.Time": Marshaler(_time, "struct", lambda v: not v),
    "meta/v1.Duration": Marshaler(
        lambda v: quote(format_duration(parse_duration(v) if v else 0)), "struct", lambda v: not v
    ),
    "meta/v1.FieldsV1": Marshaler(raw_json, "struct", lambda v: v is None),
    "encoding/json.RawMessage": Marshaler(raw_json, "slice", lambda v: v is None),
}


class Encoder:
    """json.Marshal over the struct table (and any extra structs a caller declares)."""

    def __init__(self, extra: Mapping[str, Sequence[GoField]] | None = None) -> None:
        types = go_types()
        missing = types.marshalers - MARSHALERS.keys()
        if missing:
            raise GoJSONError(f"no encoder for the self-marshalling Go types {sorted(missing)}")
        self.structs = {**types.structs, **{k: tuple(v) for k, v in (extra or {}).items()}}
        self._kinds: dict[str, str] = {}
        # Per type name: "struct", "scalar", or "" (pointer, slice, map, self-marshalling type).
        self._plain: dict[str, str] = {}
        # Per struct: each field with its quoted name and whether a null (absent) value is left out.
        self._fields = {
            name: tuple((f, quote(f.name), self._omits_null(f)) for f in fields)
            for name, fields in self.structs.items()
        }

    def _omits_null(self, f: GoField) -> bool:
        """Whether `omitempty`/`omitzero` leave the field out when its value is null: always for
        omitzero (a nil value is the zero value), for omitempty unless it is a struct (never empty)."""
        return f.omitzero or (f.omitempty and self._kind(f.type) != "struct")

    def marshal(self, value: Any, type_: str, path: str = "") -> str:
        # Structs and scalars (most values) first, by a table of the type names already seen.
        plain = self._plain.get(type_)
        if plain is None:
            plain = self._plain_of(type_)
        if plain == "struct":
            return self._struct(_expect(value or {}, dict, path), type_, path)
        if plain == "scalar":
            return _scalar(value, type_, path)
        if type_.startswith(_POINTER):
            return "null" if value is None else self.marshal(value, type_[1:], path)
        if type_.startswith(_SLICE):
            if value is None:
                return "null"
            items = _expect(value, list, path)
            return (
                "[" + ",".join(self.marshal(v, type_[2:], f"{path}[{i}]") for i, v in enumerate(items)) + "]"
            )
        if type_.startswith(_MAP):
            if value is None:
                return "null"
            m = _expect(value, dict, path)
            elem = type_[len(_MAP) :]
            return (
                "{"
                + ",".join(f"{quote(k)}:{self.marshal(m[k], elem, f'{path}.{k}')}" for k in sorted(m))
                + "}"
            )
        return MARSHALERS[type_].write(value)

    def _plain_of(self, type_: str) -> str:
        plain = self._plain[type_] = (
            "" if type_.startswith((_POINTER, _SLICE, _MAP)) or type_ in MARSHALERS
            else "struct" if type_ in self.structs
            else "scalar"
        )  # fmt: skip
        return plain

    def _omitted(self, f: GoField, omits_null: bool, v: Any) -> bool:
        """Whether Go leaves out field `f` holding `v` (null where it omits nulls, or by its tag)."""
        if v is None:
            return omits_null
        return bool((f.omitempty and self._empty(v, f.type)) or (f.omitzero and self._zero(v, f)))

    def _struct(self, value: Mapping[str, Any], type_: str, path: str) -> str:
        parts = []
        for f, key, omits_null in self._fields[type_]:
            v = value.get(f.name)
            if self._omitted(f, omits_null, v):
                continue
            parts.append(f"{key}:{self.marshal(v, f.type, f'{path}.{f.name}')}")
        return "{" + ",".join(parts) + "}"

    def _kind(self, type_: str) -> str:
        kind = self._kinds.get(type_)
        if kind is None:
            kind = self._kinds[type_] = self._kind_of(type_)
        return kind

    def _kind_of(self, type_: str) -> str:
        if type_.startswith((_POINTER, _SLICE, _MAP)):
            return type_[:1]
        if type_ in MARSHALERS:
            return MARSHALERS[type_].kind
        return "struct" if type_ in self.structs else type_

    def _empty(self, v: Any, type_: str) -> bool:
        """isEmptyValue: nil pointers, empty slices/maps/strings, false, 0; never a struct."""
        kind = self._kind(type_)
        if kind == "struct":
            return False
        if kind in ("*", "slice"):
            return v is None or (kind == "slice" and not v)
        if kind in ("[", "m"):
            return not v
        return v is None or v in ("", 0, False)

    def _zero(self, v: Any, f: GoField) -> bool:
        if f.zero_method and f.type in MARSHALERS:
            return MARSHALERS[f.type].is_zero(v)
        return self._zero_value(v, f.type)

    def _zero_value(self, v: Any, type_: str) -> bool:
        """The Go zero value (a nil slice or map, not an empty one)."""
        kind = self._kind(type_)
        if kind == "struct" and type_ in self.structs:
            return all(self._zero_value((v or {}).get(f.name), f.type) for f in self.structs[type_])
        if kind in ("*", "[", "m") or type_ in MARSHALERS:
            return v is None
        return v is None or v in ("", 0, False)

    def wire_value(self, value: Any, type_: str, *, keep_order: bool = False) -> Any:
        """`strip_empty_structs(json.loads(marshal(value, type_)), type_)` in one pass, without the text:
        the document Go's JSON of `value` parses to, with the v1beta1 normaliser's empty value structs
        dropped. With `keep_order`, `ordered_like(value, that)`: each mapping's keys in the order
        `value` has them, what Go adds after. A value that does not fit its type raises what
        `marshal` raises."""
        try:
            return self._wire(value, type_, keep_order)
        except Exception:  # noqa: BLE001 - `marshal`'s way raises its own error, with its path
            out = self.strip_empty_structs(json.loads(self.marshal(value, type_)), type_)
            return ordered_like(value, out) if keep_order else out

    def _wire(self, value: Any, type_: str, keep_order: bool) -> Any:
        plain = self._plain.get(type_)
        if plain is None:
            plain = self._plain_of(type_)
        if plain == "struct":
            return self._wire_struct(_expect(value or {}, dict, ""), type_, keep_order)
        if plain == "scalar":
            if type_ == "string":
                s = _expect("" if value is None else value, str, "")
                return s if s.isascii() else _SURROGATE.sub("\ufffd", s)
            if type_ == "bool":
                return _expect(bool(value) if value is None else value, bool, "")
            if type_ == "int":
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                if isinstance(value, bool) or not isinstance(value, int | None):
                    raise GoJSONError(type_)
                return int(value or 0)
            return json.loads(_scalar(value, type_, ""))
        if type_.startswith(_POINTER):
            return None if value is None else self._wire(value, type_[1:], keep_order)
        if type_.startswith(_SLICE):
            if value is None:
                return None
            elem = type_[2:]
            return [self._wire(v, elem, keep_order) for v in _expect(value, list, "")]
        if type_.startswith(_MAP):
            if value is None:
                return None
            m = _expect(value, dict, "")
            elem = type_[len(_MAP) :]
            out = {self._wire(k, "string", False): self._wire(m[k], elem, keep_order) for k in sorted(m)}
            if keep_order:
                if len(out) != len(m) or not all(k in out for k in m):
                    raise GoJSONError("a key Go writes otherwise")  # the text way orders it
                return {k: out[k] for k in m}
            return out
        out = json.loads(MARSHALERS[type_].write(value))
        return ordered_like(value, out) if keep_order else out

    def _wire_struct(self, value: Mapping[str, Any], type_: str, keep_order: bool) -> dict[str, Any]:
        out = {}
        for f, _, omits_null in self._fields[type_]:
            v = value.get(f.name)
            if self._omitted(f, omits_null, v):
                continue
            child = self._wire(v, f.type, keep_order)
            # The normaliser: `{}` of a value-typed struct field is dropped.
            if child == {} and self._kind(f.type) == "struct":
                continue
            out[f.name] = child
        if keep_order:
            keys = [k for k in value if k in out]
            if len(keys) < len(out):
                keys += [k for k in out if k not in value]
            if keys != list(out):
                return {k: out[k] for k in keys}
        return out

    def strip_empty_structs(self, value: Any, type_: str) -> Any:
        """The v1beta1 MarshalJSON normaliser: `{}` left by a value-typed struct field is dropped,
        depth first (a struct emptied that way goes too); `{}` of a pointer field stays."""
        base = type_.lstrip(_POINTER)
        if isinstance(value, list) and base.startswith(_SLICE):
            return [self.strip_empty_structs(v, base[2:]) for v in value]
        if not isinstance(value, dict):
            return value
        if base.startswith(_MAP):
            return {k: self.strip_empty_structs(v, base[len(_MAP) :]) for k, v in value.items()}
        fields = {f.name: f.type for f in self.structs.get(base, ())}
        out = {}
        for key, child in value.items():
            if key in fields:
                child = self.strip_empty_structs(child, fields[key])
                if child == {} and self._kind(fields[key]) == "struct":
                    continue
            out[key] = child
        return out


def _expect(value: Any, kind: type, path: str) -> Any:
    if not isinstance(value, kind):
        raise GoJSONError(f"{path or '.'}: {value!r} is not a {kind.__name__}")
    return value


def _scalar(value: Any, type_: str, path: str) -> str:
    if type_ == "string":
        return quote(_expect("" if value is None else value, str, path))
    if type_ == "bool":
        return "true" if _expect(bool(value) if value is None else value, bool, path) else "false"
    if type_ == "int":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int | None):
            raise GoJSONError(f"{path}: {value!r} is not an integer")
        return str(value or 0)
    if type_ in ("float32", "float64"):
        if isinstance(value, bool) or not isinstance(value, int | float | None):
            raise GoJSONError(f"{path}: {value!r} is not a number")
        return go_float(float(value or 0), 32 if type_ == "float32" else 64)
    raise GoJSONError(f"{path}: unknown Go type {type_}")


@functools.cache
def default_encoder() -> Encoder:
    return Encoder()


def marshal(value: Any, type_: str | None = None) -> str:
    """json.Marshal of `value` as the Go `type_` (default: DynamoComponentDeploymentSpec)."""
    return default_encoder().marshal(value, type_ or go_types().root)


def v1beta1_wire(spec: Any, *, keep_order: bool = False) -> Any:
    """A DCD spec as the operator writes it: Go's JSON of the struct, then the v1beta1 normaliser
    (with `keep_order`, keys in the order `spec` has them: `ordered_like(spec, ...)`)."""
    return default_encoder().wire_value(spec, go_types().root, keep_order=keep_order)


def ordered_like(original: Any, value: Any) -> Any:
    """`value` with the keys `original` has first, in its order (what Go or defaulting added after)."""
    if isinstance(original, dict) and isinstance(value, dict):
        keys = [k for k in original if k in value] + [k for k in value if k not in original]
        # Only containers are reordered: a scalar is itself.
        return {
            k: ordered_like(original.get(k), v) if isinstance(v := value[k], dict | list) else v for k in keys
        }
    if isinstance(original, list) and isinstance(value, list) and len(original) == len(value):
        return [
            ordered_like(o, v) if isinstance(v, dict | list) else v
            for o, v in zip(original, value, strict=True)
        ]
    return value
