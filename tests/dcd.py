"""A standalone DynamoComponentDeployment rendered as the operator's DCD controller would (tests only:
the package renders DCDs as part of their graph)."""

from __future__ import annotations

from collections.abc import Sequence

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render.context import component_context
from dynamo_infra.render.features.pullsecrets import PullSecret
from dynamo_infra.render.workloads.deployment import model_service
from dynamo_infra.render.workloads.table import component_objects, workload_kind


def render_dcd(
    dcd: Manifest, options: ClusterOptions | None = None, pull_secrets: Sequence[PullSecret] | None = None
) -> list[Manifest]:
    """Objects for a standalone DynamoComponentDeployment (v1beta1 wire form)."""
    ctx = component_context(dcd, options or ClusterOptions())
    model = model_service(ctx)
    return [*component_objects(ctx, workload_kind(ctx), pull_secrets), *([model] if model else [])]
