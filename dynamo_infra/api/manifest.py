"""Kubernetes manifests as YAML."""

from __future__ import annotations

from typing import Any

import yaml


def dump_yaml(manifests: list[dict[str, Any]]) -> str:
    """Manifests as a multi-document YAML stream (block style, key order kept)."""
    return "---\n".join(
        yaml.safe_dump(m, sort_keys=False, default_flow_style=False, allow_unicode=True) for m in manifests
    )
