"""Who changed our fields: for each field we set that the live object holds differently, the field
managers (from its managedFields) that own it now. A refresh says it; the next `up` puts back only
those fields (a forced apply of ours), leaving the rest of what others wrote."""

from __future__ import annotations

import json
from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import FIELD_MANAGER

# What a changed field is said to be owned by when no other manager's entry covers it (a field
# removed, or written by an update that records no manager).
NO_MANAGER = "no field manager (removed?)"

# A path into an object: map keys, and list indexes.
Path = tuple[str | int, ...]


def changed_paths(live: Any, wanted: Any, path: Path = ()) -> list[Path]:
    """Paths of the fields `wanted` sets that `live` lacks or holds differently (into lists of the
    same length item by item; a list of another length is one path)."""
    if isinstance(wanted, dict):
        if not isinstance(live, dict):
            return [path]
        found: list[Path] = []
        for k, v in wanted.items():
            found.extend([(*path, k)] if k not in live else changed_paths(live[k], v, (*path, k)))
        return found
    if isinstance(wanted, list) and isinstance(live, list) and len(wanted) == len(live):
        return [
            p
            for i, (lv, wv) in enumerate(zip(live, wanted, strict=True))
            for p in changed_paths(lv, wv, (*path, i))
        ]
    return [] if live == wanted else [path]


def field_names(live: Any, path: Path) -> list[str]:
    """`path` as `fieldsV1` names it: `f:<key>`, and a list item by its `name` (`k:{"name":...}`),
    which the lists we set (containers, env, ports, volumes) key their items by; cut at an item
    without one."""
    names: list[str] = []
    node = live
    for step in path:
        if isinstance(step, int):
            item = node[step] if isinstance(node, list) and step < len(node) else None
            if not isinstance(item, dict) or "name" not in item:
                return names
            names.append("k:" + json.dumps({"name": item["name"]}, separators=(",", ":")))
            node = item
        else:
            names.append(f"f:{step}")
            node = node.get(step) if isinstance(node, dict) else None
    return names


def covers(fields: Any, names: list[str]) -> bool:
    """Whether a managedFields entry's `fieldsV1` owns the field `names` spell, or one under it."""
    node = fields
    for name in names:
        if not isinstance(node, dict):
            return False
        if not node:
            return True  # the entry owns the whole field above
        node = node.get(name)
        if node is None:
            return False
    return True


def spelled(path: Path) -> str:
    """`spec.template.spec.containers[0].env[3].value`."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def managers_of(live: Manifest, path: Path) -> list[str]:
    """The field managers other than ours that own `path` of `live` now (its main resource only)."""
    names = field_names(live, path)
    meta = live.get("metadata") or {}
    return sorted(
        {
            str(m.get("manager") or "")
            for m in meta.get("managedFields") or []
            if not m.get("subresource")
            and m.get("manager") != FIELD_MANAGER
            and covers(m.get("fieldsV1") or {}, names)
        }
    )


def drifted(observed: Manifest, wanted: Manifest, live: Manifest) -> dict[str, list[str]]:
    """{field path: managers now owning it} of the fields we set that were changed (empty: none);
    `observed` is `live` (or its fields we set)."""
    return {
        spelled(p): managers_of(live, p) or [NO_MANAGER]
        for p in changed_paths(observed, wanted)
        if p[:2] != ("metadata", "managedFields")
    }


def drift_lines(label: str, key: str, changes: dict[str, list[str]]) -> list[str]:
    """What a refresh says of one object's drift, one line per field."""
    return [
        f"{label}: {key}: field {field} was changed by {', '.join(managers)}; the next `up` puts it back"
        for field, managers in changes.items()
    ]
