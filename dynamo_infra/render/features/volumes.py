"""PersistentVolumeClaims a graph declares in (legacy) `spec.pvcs`."""

from __future__ import annotations

from dynamo_infra.api import DynamoValidationError, Problem
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.context import GraphContext


def pvcs(g: GraphContext) -> list[Manifest]:
    """PVCs with `create: true` (created if missing, never updated); others must already exist."""
    out: list[Manifest] = []
    for i, p in enumerate(g.legacy.pvcs):
        if not p.get("name") or not p.get("create"):
            continue
        missing = [k for k in ("size", "storageClass", "volumeAccessMode") if p.get(k) is None]
        if missing:
            raise DynamoValidationError(
                [Problem(f"spec.pvcs[{i}]", f"create is true but {', '.join(missing)} is not set")]
            )
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": p["name"], "namespace": g.namespace},
                "spec": {
                    "accessModes": [p["volumeAccessMode"]],
                    "resources": {"requests": {"storage": str(p["size"])}},
                    "storageClassName": p["storageClass"],
                },
            }
        )
    return out


def required_pvcs(g: GraphContext) -> list[str]:
    """Claims the graph expects to exist already (`create` unset or false)."""
    return [str(p["name"]) for p in g.legacy.pvcs if p.get("name") and not p.get("create")]
