"""Field tables of the v1alpha1 ⇄ v1beta1 mapping, and the one interpreter both directions run.

A `Field` names where a value lives in each version (a dotted path; None: no home there) and how
the value changes each way; a `Custom` rule maps several fields at once. A rule writes nothing when
its source is absent (unless it has a default) or when its codec returns `ABSENT`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from dynamo_infra.api.manifest import Manifest, copy_json


class _Absent:
    """No value: the path is not there, or a codec writes nothing."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
# A value's change from one version to the other.
Codec = Callable[[Any], Any]


def copied(value: Any) -> Any:
    """The value unchanged (a deep copy, so converted objects share nothing with their source)."""
    return copy_json(value)


@dataclass(frozen=True)
class Field:
    """One field: its path in v1alpha1 and in v1beta1, its codec each way, its default each side."""

    alpha: str | None
    hub: str | None
    to_hub: Codec = copied
    from_hub: Codec = copied
    # Written when the source version lacks the field.
    alpha_default: Any = ABSENT
    hub_default: Any = ABSENT


@dataclass(frozen=True)
class Custom:
    """Several fields at once: `to_hub(alpha, out)` and `from_hub(hub, out)` write into `out`."""

    to_hub: Callable[[Manifest, Manifest], None]
    from_hub: Callable[[Manifest, Manifest], None]


@dataclass(frozen=True)
class Table:
    """The rules of one object (a spec or a status), applied in order."""

    rules: tuple[Field | Custom, ...]
    # Copy the fields no rule names (status objects: both versions share most of them).
    keep_rest: bool = False


def same(*names: str) -> tuple[Field, ...]:
    """Fields with one name and value in both versions."""
    return tuple(Field(n, n) for n in names)


def to_hub(table: Table, alpha: Manifest) -> Manifest:
    """A v1alpha1 object (wire dict) -> v1beta1 (native mapping only)."""
    return _apply(table, alpha, hub=True)


def from_hub(table: Table, hub: Manifest) -> Manifest:
    """A v1beta1 object (wire dict) -> v1alpha1 (native mapping only)."""
    return _apply(table, hub, hub=False)


def _apply(table: Table, src: Manifest, *, hub: bool) -> Manifest:
    out: Manifest = {}
    if table.keep_rest:
        named = {_head(r.alpha if hub else r.hub) for r in table.rules if isinstance(r, Field)}
        out.update({k: copy_json(v) for k, v in src.items() if k not in named})
    for rule in table.rules:
        if isinstance(rule, Custom):
            (rule.to_hub if hub else rule.from_hub)(src, out)
            continue
        src_path, dst_path = (rule.alpha, rule.hub) if hub else (rule.hub, rule.alpha)
        if dst_path is None:
            continue
        value = _get(src, src_path)
        if value is ABSENT:
            default = rule.hub_default if hub else rule.alpha_default
            if default is not ABSENT:
                _set(out, dst_path, copy_json(default))
            continue
        value = (rule.to_hub if hub else rule.from_hub)(value)
        if value is not ABSENT:
            _set(out, dst_path, value)
    return out


def _head(path: str | None) -> str | None:
    return None if path is None else path.split(".", 1)[0]


def _get(obj: Manifest, path: str | None) -> Any:
    if path is None:
        return ABSENT
    node: Any = obj
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return ABSENT
        node = node[key]
    return node


def _set(obj: Manifest, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for key in parents:
        obj = obj.setdefault(key, {})
    obj[last] = value
