"""The manifest type (a Kubernetes object or sub-object as its JSON mapping) and its YAML form."""

from __future__ import annotations

import copy
from typing import Any

import yaml

# A Kubernetes object or sub-object (pod spec, container, probe, env var, ...) as the plain mapping
# the user wrote: checked against the CRD's own OpenAPI schema, never re-typed.
Manifest = dict[str, Any]


# Immutable JSON values, shared by a copy as they are (checked by exact type: subclasses go the long way).
_SCALARS = frozenset({str, int, float, bool, type(None)})


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars; anything else is deep-copied): a few
    times faster than `copy.deepcopy`, which also keeps track of shared references such data lacks."""
    if isinstance(value, dict):
        return {k: v if v.__class__ in _SCALARS else copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if v.__class__ in _SCALARS else copy_json(v) for v in value]
    if value is None or isinstance(value, str | int | float):
        return value
    return copy.deepcopy(value)


def dump_yaml(manifests: list[Manifest]) -> str:
    """Manifests as a multi-document YAML stream (block style, key order kept)."""
    return "---\n".join(
        yaml.safe_dump(m, sort_keys=False, default_flow_style=False, allow_unicode=True) for m in manifests
    )
