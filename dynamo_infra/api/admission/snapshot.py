"""The webhook's rules for a component's checkpoint (snapshot) that arrived after our pin: only an
explicit worker, prefill or decode component may enable it, and not with inter-pod GMS or failover.

Ported from 1.6-era `deploy/operator/internal/webhook/validation/shared_v1beta1.go`
(michaelfeil/dynamo@80b177f2c87c3c80dec88524bb0cda666cc3effc: `validateComponentCheckpointConfig`,
`validateExperimentalSpec`) and `internal/checkpoint/compatibility.go` (`ValidateCheckpointCompatibility`,
read at michaelfeil/dynamo@e00a35f9836675e59fa4f614956a7aef610a2894)."""

from __future__ import annotations

from typing import Final

from dynamo_infra.api import v1beta1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.paths import At
from dynamo_infra.api.errors import Problem

TYPE_REQUIRED: Final = (
    "checkpoint functionality requires component type to be explicitly set to worker, prefill, or decode"
)
WORKERS_ONLY: Final = "checkpoint functionality is supported only for worker, prefill, and decode components"
INTER_POD_UNSUPPORTED: Final = "Snapshot with gpuMemoryService.mode=InterPod is unsupported"
FAILOVER_UNSUPPORTED: Final = "Snapshot with active/passive failover is temporarily unsupported"
INTER_POD: Final = "InterPod"


def snapshot_problems(c: v1beta1.ComponentFields, at: At) -> list[Problem]:
    experimental = c.experimental
    checkpoint = experimental.checkpoint if experimental else None
    if experimental is None or checkpoint is None or not checkpoint.enabled:
        return []
    checkpoint_at = at("experimental", "checkpoint")
    out = []
    if not c.type:
        out.append(field.forbidden(checkpoint_at, TYPE_REQUIRED))
    elif not c.is_worker:
        out.append(field.forbidden(checkpoint_at, WORKERS_ONLY))
    gms = experimental.gpu_memory_service
    if gms is not None and gms.mode == INTER_POD:
        out.append(field.forbidden(checkpoint_at, INTER_POD_UNSUPPORTED))
    if experimental.failover is not None:
        out.append(field.forbidden(checkpoint_at, FAILOVER_UNSUPPORTED))
    return out
