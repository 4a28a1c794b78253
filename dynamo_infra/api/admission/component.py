"""The webhook's rules for one component (a DGD's `components[]` entry or a DCD's spec), on the
v1beta1 view: min available, shared memory, EPP, frontend sidecar, GPU memory service, failover,
checkpoint, and the runtime version of the main container's image."""

from __future__ import annotations

from dataclasses import dataclass

from dynamo_infra.api import releases, v1alpha1, v1beta1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.features import OperatorFeatures
from dynamo_infra.api.admission.field import Text
from dynamo_infra.api.admission.gpus import gpu_count
from dynamo_infra.api.admission.override import force_scaling_group_problems
from dynamo_infra.api.admission.paths import At
from dynamo_infra.api.admission.roles import (
    has_role_pod_templates,
    role_experimental_problems,
    role_override_required,
    role_problems,
)
from dynamo_infra.api.admission.runtimeversion import runtime_version_override_required
from dynamo_infra.api.admission.sidecar import RUNTIME_CONTAINER, runtime_image, sidecar_problems
from dynamo_infra.api.admission.snapshot import snapshot_problems
from dynamo_infra.api.common import MAIN_CONTAINER
from dynamo_infra.api.errors import Problem
from dynamo_infra.api.manifest import Manifest

GMS_INTER_POD = "InterPod"
# The API group EPP components need served (the Gateway API Inference Extension).
INFERENCE_POOL_GROUP = "inference.networking.k8s.io"
NO_INFERENCE_POOL = (
    f"cannot deploy EPP component: InferencePool API group ({INFERENCE_POOL_GROUP}) is not available in the "
    "cluster; install the Gateway API Inference Extension before deploying EPP components"
)
RUNTIME_VERSION_OVERRIDE_REQUIRED = (
    "is required when the specified main container image has no parseable semantic-version tag"
)
CHECKPOINT_DISABLED = "checkpoint functionality is disabled in the operator configuration"
GMS_SNAPSHOT_DISABLED = "GMS + Snapshot is temporarily disabled; disable gpuMemoryService or enable the internal GMS + Snapshot gate"
# eppConfig of a native Rust EPP (NativeRustEPP; internal/webhook/validation/shared_v1beta1.go,
# eppRuntimeCompatibilityError, as of the 1.6.0 cut).
EPP_CONFIG_NATIVE = "must be omitted for native Rust EPP images with runtime version 1.5.0 or later"
# Component types failover cannot run on.
_NO_FAILOVER_TYPES = ("epp", "frontend", "planner")


@dataclass(frozen=True)
class Scope:
    """What a component's rules know beyond the component."""

    # The cluster's gates (None: at load, before the cluster is known: its rules wait).
    features: OperatorFeatures | None
    # The owner's Grove pathway (None: not known yet).
    grove: bool | None
    # Whether the owner needs the InferencePool API for an EPP (a DGD does, a DCD does not).
    inference_pool: bool
    # Check the main image's runtime version here (the document is v1beta1).
    runtime_version: bool
    # Whether a missing `runtimeVersionOverride` is allowed (a DCD's is).
    allow_missing_override: bool


def main_container_index(c: v1beta1.ComponentFields) -> int | None:
    containers = ((c.pod_template.spec if c.pod_template else None) or {}).get("containers") or []
    return next((i for i, x in enumerate(containers) if x.get("name") == MAIN_CONTAINER), None)


def main_image(c: v1beta1.ComponentFields, at: At) -> tuple[str, str]:
    """The main container's image and its path (the containers list when there is no main container)."""
    i = main_container_index(c)
    if i is None or c.pod_template is None or c.pod_template.spec is None:
        return "", at("podTemplate", "spec", "containers")
    return str(c.pod_template.spec["containers"][i].get("image") or ""), at(
        "podTemplate", "spec", "containers", i, "image"
    )


def _main_gpus(c: v1beta1.ComponentFields) -> int | str:
    """The main container's GPU count, or why it cannot be read."""
    main = c.pod_template.container(MAIN_CONTAINER) if c.pod_template else None
    try:
        return gpu_count((main or {}).get("resources"))
    except ValueError as e:
        return str(e)


def component_problems(c: v1beta1.ComponentFields, at: At, scope: Scope) -> list[Problem]:
    out: list[Problem] = []
    if c.min_available is not None and scope.grove is False:
        out.append(
            field.forbidden(
                at("minAvailable"),
                "is currently supported only for Grove-backed DynamoGraphDeployment components",
            )
        )
    if c.shared_memory_size is not None and v1alpha1.quantity_sign(c.shared_memory_size) < 0:
        out.append(
            field.invalid(at("sharedMemorySize"), Text(str(c.shared_memory_size)), "must be non-negative")
        )
    if c.type == "epp":
        out += _epp_problems(c, at, scope)
    if (
        c.epp_config is not None
        and c.epp_config.config_map_ref is not None
        and not c.epp_config.config_map_ref.name
    ):
        out.append(field.required(at("eppConfig", "configMapRef", "name"), "is required"))
    if c.frontend_sidecar is not None:
        out += _sidecar_problems(c, c.frontend_sidecar, at)
    runtime = _runtime_sidecar_spec(c)
    if runtime is not None:
        out += sidecar_problems(runtime, str(getattr(c, "name", None) or ""), at)
    if c.experimental is not None:
        out += experimental_problems(c, c.experimental, at, scope.features)
    out += role_problems(c, at)
    out += role_experimental_problems(c, at)
    out += force_scaling_group_problems(c, at, scope.grove)
    if scope.runtime_version and has_role_pod_templates(c):
        if not scope.allow_missing_override and role_override_required(c):
            out.append(field.required(at("runtimeVersionOverride"), RUNTIME_VERSION_OVERRIDE_REQUIRED))
    elif scope.runtime_version:
        located = runtime_image(runtime, at) if runtime is not None else None
        image, image_at = located or main_image(c, at)
        if not image:
            out.append(field.required(image_at, "is required"))
        elif not scope.allow_missing_override and runtime_version_override_required(
            image, c.runtime_version_override
        ):
            out.append(field.required(at("runtimeVersionOverride"), RUNTIME_VERSION_OVERRIDE_REQUIRED))
    return out


def _runtime_sidecar_spec(c: v1beta1.ComponentFields) -> Manifest | None:
    """The component's wire spec when it has a `runtime` init container (sidecar mode may apply)."""
    spec = (c.pod_template.spec if c.pod_template else None) or {}
    if not any(x.get("name") == RUNTIME_CONTAINER for x in spec.get("initContainers") or []):
        return None
    return c.to_wire()


def _epp_problems(c: v1beta1.ComponentFields, at: At, scope: Scope) -> list[Problem]:
    out = []
    if scope.inference_pool and scope.features is not None and not scope.features.inference_pool:
        out.append(field.forbidden(at("type"), NO_INFERENCE_POOL))
    if c.multinode is not None and c.multinode.node_count > 1:
        out.append(field.forbidden(at("multinode"), "EPP component cannot be multinode"))
    version = releases.resolve(main_image(c, at)[0], c.runtime_version_override)
    if releases.NATIVE_RUST_EPP.enabled(version):
        # The native Rust EPP replicates; its contract has no eppConfig.
        if c.epp_config is not None:
            out.append(field.forbidden(at("eppConfig"), EPP_CONFIG_NATIVE))
        return out
    if c.replicas is not None and c.replicas != 1:
        out.append(field.invalid(at("replicas"), c.replicas, "EPP component must have exactly 1 replica"))
    if c.epp_config is None:
        out.append(field.required(at("eppConfig"), "is required for EPP components"))
    return out


def _sidecar_problems(c: v1beta1.ComponentFields, sidecar: str, at: At) -> list[Problem]:
    if has_role_pod_templates(c):
        if not sidecar:
            return [field.invalid(at("frontendSidecar"), Text(sidecar), "must not be empty")]
        return [
            field.invalid(
                at("roles", i, "podTemplate", "spec", "containers"),
                Text(sidecar),
                "must contain the container named by frontendSidecar",
            )
            for i, role in enumerate(c.roles or [])
            if role.pod_template is not None and role.pod_template.container(sidecar) is None
        ]
    if c.pod_template is None:
        return [
            field.required(at("podTemplate", "spec", "containers"), "is required when frontendSidecar is set")
        ]
    if not sidecar:
        return [field.invalid(at("frontendSidecar"), Text(sidecar), "must not be empty")]
    if c.pod_template.container(sidecar) is None:
        return [
            field.invalid(
                at("frontendSidecar"), Text(sidecar), "must match a podTemplate.spec.containers name"
            )
        ]
    return []


def experimental_problems(
    c: v1beta1.ComponentFields,
    experimental: v1beta1.ComponentExperimental,
    at: At,
    features: OperatorFeatures | None,
) -> list[Problem]:
    out: list[Problem] = []
    gms, failover, checkpoint = (
        experimental.gpu_memory_service,
        experimental.failover,
        experimental.checkpoint,
    )
    gms_at = at("experimental", "gpuMemoryService")
    # With role templates GMS and failover are refused as such (`roles`), not checked further.
    launched = not has_role_pod_templates(c)
    if gms is not None and launched:
        if not c.is_worker:
            out.append(
                field.forbidden(
                    gms_at, "GPU memory service is only supported for worker, prefill, or decode components"
                )
            )
        gpus = _main_gpus(c)
        if isinstance(gpus, str) or gpus < 1:
            out.append(
                field.forbidden(
                    gms_at,
                    "GPU memory service requires podTemplate.spec.containers[main].resources.limits.nvidia.com/gpu >= 1",
                )
            )
        if gms.mode != GMS_INTER_POD:
            out += _gms_client_problems(c, gms.extra_client_containers or [], at)
    if failover is not None and launched:
        out += _failover_problems(c, failover, gms, at)
    if checkpoint is not None:
        checkpoint_at = at("experimental", "checkpoint")
        if checkpoint.enabled and features is not None and not features.checkpoint:
            out.append(field.forbidden(checkpoint_at, CHECKPOINT_DISABLED))
        clients = checkpoint.job.gms_client_containers if checkpoint.job else None
        clients_at = at("experimental", "checkpoint", "job", "gmsClientContainers")
        if clients and gms is None:
            out.append(field.forbidden(clients_at, "requires gpuMemoryService to be set"))
        elif clients and gms is not None and gms.mode == GMS_INTER_POD:
            out.append(field.forbidden(clients_at, "is only supported with gpuMemoryService.mode=IntraPod"))
        if checkpoint.enabled and gms is not None and features is not None and not features.gms_snapshot:
            out.append(field.forbidden(checkpoint_at, GMS_SNAPSHOT_DISABLED))
        out += snapshot_problems(c, at)
    return out


def _gms_client_problems(c: v1beta1.ComponentFields, clients: list[str], at: At) -> list[Problem]:
    """Intra-pod GMS: each extra client names a distinct container of the pod template (PR #12580;
    1.6-era `shared_v1beta1.go` `validateGPUMemoryServiceSpec`, michaelfeil/dynamo@80b177f2)."""
    out, seen = [], set()
    for i, name in enumerate(clients):
        client_at = at("experimental", "gpuMemoryService", "extraClientContainers", i)
        if name in seen:
            out.append(field.duplicate(client_at, Text(name)))
            continue
        seen.add(name)
        if c.pod_template is None or c.pod_template.container(name) is None:
            out.append(
                field.invalid(
                    client_at, Text(name), "does not name a container in podTemplate.spec.containers"
                )
            )
    return out


def _failover_problems(
    c: v1beta1.ComponentFields,
    failover: v1beta1.Failover,
    gms: v1beta1.GPUMemoryService | None,
    at: At,
) -> list[Problem]:
    out: list[Problem] = []
    failover_at = at("experimental", "failover")
    if gms is None:
        out.append(
            field.forbidden(
                failover_at,
                f"gpuMemoryService is required when failover mode is {field.go_quote(failover.mode)}",
            )
        )
    elif gms.mode != failover.mode:
        out.append(
            field.invalid(
                at("experimental", "failover", "mode"),
                failover.mode,
                f"must match gpuMemoryService.mode {field.go_quote(gms.mode)}",
            )
        )
    if failover.mode != GMS_INTER_POD:
        return out
    gpus = _main_gpus(c)
    if isinstance(gpus, str):
        out.append(field.forbidden(failover_at, f"failed to read main-container GPU limit: {gpus}"))
    elif gpus < 1:
        out.append(
            field.forbidden(
                failover_at,
                "GMS failover requires at least 1 GPU in podTemplate.spec.containers[main].resources.limits.nvidia.com/gpu",
            )
        )
    if c.type in _NO_FAILOVER_TYPES:
        out.append(
            field.forbidden(
                failover_at,
                f"GMS failover is not supported for component type {field.go_quote(c.type or '')}",
            )
        )
    return out
