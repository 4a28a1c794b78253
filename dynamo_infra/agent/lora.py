"""LoRA adapters (DynamoModel) loaded into the matching workers (placeholder: its handlers come later)."""

from __future__ import annotations

import kopf


def register(registry: kopf.OperatorRegistry) -> None:
    """Register the DynamoModel handlers (none yet)."""
