"""The webhook's rules for a DGD component's GPU power limit (the `dynamo.nvidia.com/gpu-power-limit`
pod-template annotation the 1.6 planner's power-aware planning reads): a positive decimal number of
watts, never with DRA-allocated devices; once set, it and the main container's GPU count are fixed.

Ported from 1.6-era `deploy/operator/internal/webhook/validation/dynamographdeployment.go` and
`dynamographdeployment_helpers.go` (michaelfeil/dynamo@80b177f2c87c3c80dec88524bb0cda666cc3effc:
`validateDGDComponentPowerAnnotation`, `validateDynamoGraphDeploymentSharedSpecUpdate`). Left out: the
update rule on the pod's whole GPU footprint (`dra.ResolvePodGPUCount` over auxiliary containers)."""

from __future__ import annotations

import re
from typing import Any, Final

from dynamo_infra.api import v1beta1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.field import Text
from dynamo_infra.api.admission.gpus import quantity
from dynamo_infra.api.admission.paths import At
from dynamo_infra.api.common import MAIN_CONTAINER
from dynamo_infra.api.errors import Problem

ANNOTATION_GPU_POWER_LIMIT: Final = "dynamo.nvidia.com/gpu-power-limit"
# The scalar GPU resource the planner counts (`consts.KubeResourceGPUNvidia`).
GPU_RESOURCE: Final = "nvidia.com/gpu"
# `apivalidation.FieldImmutableErrorMsg`.
FIELD_IMMUTABLE: Final = "field is immutable"
DRA_WITH_POWER_LIMIT: Final = (
    f"cannot be combined with annotation {field.go_quote(ANNOTATION_GPU_POWER_LIMIT)}: power-aware planning "
    "does not support DRA-backed device allocation"
)
# Go `strconv.Atoi` on a 64-bit platform: an optional sign and decimal digits, within int64.
_ATOI = re.compile(r"[+-]?[0-9]+")
_INT64_MAX = 2**63 - 1


def power_limit(c: v1beta1.ComponentFields) -> str | None:
    """The component's power-limit annotation (None when absent)."""
    if c.pod_template is None:
        return None
    annotations = (c.pod_template.metadata or {}).get("annotations") or {}
    value = annotations.get(ANNOTATION_GPU_POWER_LIMIT) if isinstance(annotations, dict) else None
    return None if value is None else str(value)


def _annotation_at(at: At) -> str:
    return f"{at('podTemplate', 'metadata', 'annotations')}[{ANNOTATION_GPU_POWER_LIMIT}]"


def power_limit_problems(c: v1beta1.ComponentFields, at: At) -> list[Problem]:
    """Creating (or the new state of) a DGD component with the annotation."""
    value = power_limit(c)
    if value is None:
        return []
    out = []
    if not _ATOI.fullmatch(value) or not -_INT64_MAX - 1 <= int(value) <= _INT64_MAX:
        out.append(field.invalid(_annotation_at(at), Text(value), "must be a decimal integer"))
    elif int(value) <= 0:
        out.append(field.invalid(_annotation_at(at), Text(value), "must be greater than zero"))
    dra_at = _dra_at(c, at)
    if dra_at is not None:
        out.append(field.forbidden(dra_at, DRA_WITH_POWER_LIMIT))
    return out


def _dra_at(c: v1beta1.ComponentFields, at: At) -> str | None:
    """Where the component asks for DRA devices: GMS (its shared GPU claim), else the first container
    (then init container) consuming a resource claim."""
    if c.experimental is not None and c.experimental.gpu_memory_service is not None:
        return at("experimental", "gpuMemoryService")
    spec = (c.pod_template.spec if c.pod_template else None) or {}
    for group in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(group) or []):
            if ((container.get("resources") or {}).get("claims")) if isinstance(container, dict) else None:
                return at("podTemplate", "spec", group, i, "resources", "claims")
    return None


def _main_gpus(c: v1beta1.ComponentFields, at: At) -> tuple[Any, str]:
    """The main container's `nvidia.com/gpu` (limit, else request; None when absent) and its path."""
    containers = ((c.pod_template.spec if c.pod_template else None) or {}).get("containers") or []
    for i, container in enumerate(containers):
        if container.get("name") != MAIN_CONTAINER:
            continue
        resources = container.get("resources") or {}
        for section in ("limits", "requests"):
            value = (resources.get(section) or {}).get(GPU_RESOURCE)
            if value is not None:
                return (
                    value,
                    f"{at('podTemplate', 'spec', 'containers', i, 'resources', section)}[{GPU_RESOURCE}]",
                )
        return None, at("podTemplate", "spec", "containers", i, "resources")
    return None, at("podTemplate", "spec", "containers")


def power_limit_update(new: v1beta1.ComponentFields, old: v1beta1.ComponentFields, at: At) -> list[Problem]:
    """A DGD component that exists before and after the update."""
    value, old_value = power_limit(new), power_limit(old)
    out = []
    if value != old_value:
        out.append(field.invalid(_annotation_at(at), None if value is None else Text(value), FIELD_IMMUTABLE))
    if old_value is None:
        return out
    (gpus, gpus_at), (old_gpus, _) = _main_gpus(new, at), _main_gpus(old, at)
    same = (gpus is None and old_gpus is None) or (
        gpus is not None and old_gpus is not None and quantity(gpus) == quantity(old_gpus)
    )
    if not same:
        out.append(field.invalid(gpus_at, None if gpus is None else Text(str(gpus)), FIELD_IMMUTABLE))
    return out
