"""The webhook's typed field errors (Kubernetes `field.Required`, `Invalid`, `Forbidden`, `NotSupported`)
as problems: our field path, and the message the API server returns for the cause, word for word."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from dynamo_infra.api.errors import Problem

# Kubernetes field error types, as their messages begin.
REQUIRED: Final = "Required value"
FORBIDDEN: Final = "Forbidden"
INVALID: Final = "Invalid value"
NOT_SUPPORTED: Final = "Unsupported value"
DUPLICATE: Final = "Duplicate value"

# Characters Go's JSON encoder escapes for HTML safety.
_GO_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
# Go strconv.Quote's escapes of control characters.
_GO_QUOTE_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


class Text(str):
    """A bad value of Go type `string` (printed quoted); other strings are named Go types (JSON)."""


def required(path: str, detail: str) -> Problem:
    return Problem(path, f"{REQUIRED}: {detail}")


def forbidden(path: str, detail: str) -> Problem:
    return Problem(path, f"{FORBIDDEN}: {detail}")


def invalid(path: str, value: Any, detail: str) -> Problem:
    """`value` as Go prints a bad value: `Text` and numbers plainly, anything else as JSON."""
    return Problem(path, f"{INVALID}: {bad_value(value)}: {detail}")


def duplicate(path: str, value: Any) -> Problem:
    return Problem(path, f"{DUPLICATE}: {bad_value(value)}")


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Problem:
    allowed = ", ".join(go_quote(s) for s in supported)
    return Problem(path, f"{NOT_SUPPORTED}: {bad_value(value)}: supported values: {allowed}")


def bad_value(value: Any) -> str:
    if isinstance(value, Text):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return go_json(value)


def go_quote(text: str) -> str:
    """`strconv.Quote`: double quotes, backslash escapes for quotes and control characters."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in _GO_QUOTE_ESCAPES:
            out.append(_GO_QUOTE_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def go_json(value: Any) -> str:
    """`json.Marshal`: compact, non-ASCII kept, HTML characters escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return "".join(_GO_JSON_ESCAPES.get(ch, ch) for ch in text)


def go_list(items: Iterable[str]) -> str:
    """A `[]string` printed with `%v`: `[a b]`."""
    return "[" + " ".join(items) + "]"
