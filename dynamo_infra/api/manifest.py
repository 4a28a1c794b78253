"""The manifest type (a Kubernetes object or sub-object as its JSON mapping), its YAML form, and
manifests packed as one string (what the state keeps of large inputs)."""

from __future__ import annotations

import base64
import copy
import json
import zlib
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


# How an output holds a large input packed: this prefix, then base64 of zlib-compressed JSON. The state
# keeps such an input readable once, as an input (what `preview --diff` shows), and every checkpoint the
# engine writes after each step serializes one string instead of every field of every manifest.
PACKED_PREFIX = "dynamo-infra.packed/v1:"
# zlib level of packed outputs: the default's trade of speed for size.
PACK_LEVEL = 6


def pack(value: Any) -> str:
    """`value` (plain JSON data) as one string: PACKED_PREFIX + base64(zlib(canonical JSON))."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return PACKED_PREFIX + base64.b64encode(zlib.compress(text.encode(), PACK_LEVEL)).decode("ascii")


def unpack(value: Any) -> Any:
    """The value `pack` made `value` from; any other value as it is (outputs written unpacked)."""
    if isinstance(value, str) and value.startswith(PACKED_PREFIX):
        return json.loads(zlib.decompress(base64.b64decode(value[len(PACKED_PREFIX) :])))
    return value
