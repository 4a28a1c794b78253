"""The manifest type (a Kubernetes object or sub-object as its JSON mapping) and its YAML form."""

from __future__ import annotations

from typing import Any

import yaml

# A Kubernetes object or sub-object (pod spec, container, probe, env var, ...) as the plain mapping
# the user wrote: checked against the CRD's own OpenAPI schema, never re-typed.
Manifest = dict[str, Any]


def dump_yaml(manifests: list[Manifest]) -> str:
    """Manifests as a multi-document YAML stream (block style, key order kept)."""
    return "---\n".join(
        yaml.safe_dump(m, sort_keys=False, default_flow_style=False, allow_unicode=True) for m in manifests
    )
