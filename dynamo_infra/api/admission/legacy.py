"""The webhook's rules for the v1alpha1 view of a DGD or DCD: fields only v1alpha1 has (volume
mounts, ingress, the frontend sidecar object, per-service annotations, deprecated dynamoNamespace
and autoscaling, which only warn) and, for a v1alpha1 document, its main image's runtime version.

They run on a v1alpha1 document, and on the v1alpha1 view of a v1beta1 one that holds such fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, cast

from dynamo_infra.api import conversion, v1alpha1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.component import RUNTIME_VERSION_OVERRIDE_REQUIRED
from dynamo_infra.api.admission.field import Text
from dynamo_infra.api.admission.paths import At
from dynamo_infra.api.admission.runtimeversion import runtime_version_override_required
from dynamo_infra.api.base import Resource
from dynamo_infra.api.errors import DynamoValidationError, Problem

# Pod (and service) annotation choosing vLLM's multinode executor, and its values (any case).
ANNOTATION_VLLM_BACKEND = "nvidia.com/vllm-distributed-executor-backend"
VLLM_BACKENDS = ("mp", "ray")
# Container name the operator gives the sidecar a v1alpha1 `frontendSidecar` injects.
FRONTEND_SIDECAR_CONTAINER = "sidecar-frontend"
# Dynamo namespace of components with `globalDynamoNamespace: true`.
GLOBAL_DYNAMO_NAMESPACE = "dynamo"
INTRA_POD = "intraPod"
R = TypeVar("R", bound=Resource)
A = TypeVar("A", bound=Resource)
B = TypeVar("B", bound=Resource)


def view_as(obj: Resource, model: type[R]) -> R | None:
    """`obj` in the other API version; None where that version's schema cannot hold it (e.g. a
    negative v1beta1 shared memory size, a v1alpha1 `eppConfig` with neither source): the webhook
    then sees fields no rule of that view looks at, or the other view's rules deny them."""
    try:
        return conversion.convert_to(obj, model)
    except DynamoValidationError:
        return None


def both_views(obj: Resource, alpha: type[A], beta: type[B]) -> tuple[B | None, A | None]:
    """`obj` as the webhook validates it: its v1beta1 view and its v1alpha1 view (one is `obj`)."""
    if isinstance(obj, alpha):
        return view_as(obj, beta), obj
    return cast(B, obj), view_as(obj, alpha)


def dynamo_namespace(global_namespace: bool | None, namespace: str, graph: str) -> str:
    """The Dynamo namespace a component gets (`<namespace>-<graph>`, dots made dashes)."""
    return GLOBAL_DYNAMO_NAMESPACE if global_namespace else f"{namespace}-{graph.replace('.', '-')}"


def invalid_vllm_backend(annotations: dict[str, str] | None) -> str | None:
    """The annotation's value when it names no vLLM backend, else None."""
    value = (annotations or {}).get(ANNOTATION_VLLM_BACKEND)
    return None if value is None or value.lower() in VLLM_BACKENDS else value


@dataclass
class Legacy:
    """The v1alpha1 rules of one document, collecting problems and warnings."""

    # Check the main image's runtime version (the document is v1alpha1 and is being created).
    runtime_version: bool
    # Whether a missing `runtimeVersionOverride` is allowed (a DCD's is).
    allow_missing_override: bool

    def __post_init__(self) -> None:
        self.problems: list[Problem] = []
        self.warnings: list[str] = []

    def pvcs(self, spec: v1alpha1.DynamoGraphDeploymentSpec) -> None:
        for i, pvc in enumerate(spec.pvcs or []):
            if not pvc.name:
                self.problems.append(field.required(f"spec.pvcs[{i}].name", "is required"))

    def component(self, s: v1alpha1.ComponentSpec, at: At, namespace: str) -> None:
        """One service (or DCD spec); `namespace` is the Dynamo namespace it will get."""
        bad = invalid_vllm_backend(s.annotations)
        if bad is not None:
            self.problems.append(
                field.invalid(
                    f"{at('annotations')}[{ANNOTATION_VLLM_BACKEND}]", Text(bad), 'must be "mp" or "ray"'
                )
            )
        if s.dynamo_namespace:
            self.warnings.append(
                f"{at('dynamoNamespace')} is deprecated and ignored. Value {field.go_quote(s.dynamo_namespace)} "
                f"will be replaced with {field.go_quote(namespace)}. Remove this field from your configuration"
            )
        if s.autoscaling is not None:
            self.warnings.append(
                f"{at('autoscaling')} is deprecated and ignored. Use DynamoGraphDeploymentScalingAdapter with HPA, "
                "KEDA, or Planner for autoscaling instead. See docs/kubernetes/autoscaling.md"
            )
        for i, mount in enumerate(s.volume_mounts or []):
            if not mount.use_as_compilation_cache and not mount.mount_point:
                self.problems.append(
                    field.required(
                        at("volumeMounts", i, "mountPoint"), "is required when useAsCompilationCache is false"
                    )
                )
        if s.ingress is not None and s.ingress.enabled and not s.ingress.host:
            self.problems.append(field.required(at("ingress", "host"), "is required when ingress is enabled"))
        if s.epp_config is not None and (s.epp_config.config_map_ref is None) == (
            s.epp_config.config is None
        ):
            self.problems.append(
                field.forbidden(at("eppConfig"), "exactly one of configMapRef or config is required")
            )
        containers = (s.extra_pod_spec or {}).get("containers") or []
        if s.frontend_sidecar is not None and any(
            c.get("name") == FRONTEND_SIDECAR_CONTAINER for c in containers
        ):
            self.problems.append(
                field.forbidden(
                    at("frontendSidecar"),
                    f"cannot inject frontend sidecar: a container named {field.go_quote(FRONTEND_SIDECAR_CONTAINER)} "
                    "already exists in extraPodSpec.containers",
                )
            )
        failover = s.failover
        if (
            failover is not None
            and failover.enabled
            and failover.mode == INTRA_POD
            and failover.num_shadows > 1
        ):
            self.problems.append(
                field.invalid(
                    at("failover", "numShadows"),
                    failover.num_shadows,
                    'is invalid for mode="intraPod": intraPod uses a fixed 1 primary + 1 shadow sidecar; '
                    'use failover.mode="interPod" to configure numShadows',
                )
            )
        if self.runtime_version:
            self._runtime_version(s, at)

    def _runtime_version(self, s: v1alpha1.ComponentSpec, at: At) -> None:
        image = str(((s.extra_pod_spec or {}).get("mainContainer") or {}).get("image") or "")
        if not image:
            self.problems.append(field.required(at("extraPodSpec", "mainContainer", "image"), "is required"))
        elif not self.allow_missing_override and runtime_version_override_required(
            image, s.runtime_version_override
        ):
            self.problems.append(
                field.required(at("runtimeVersionOverride"), RUNTIME_VERSION_OVERRIDE_REQUIRED)
            )


def has_legacy_fields(s: v1alpha1.ComponentSpec, *, graph: bool) -> bool:
    """Whether a service (`graph`) or DCD spec holds fields the v1alpha1 rules look at."""
    common = bool(
        s.annotations
        or s.dynamo_namespace is not None
        or s.autoscaling is not None
        or s.ingress is not None
        or s.volume_mounts
        or s.epp_config is not None
        or s.frontend_sidecar is not None
        or s.failover is not None
    )
    if not graph:
        return common
    return (
        common
        or s.shared_memory is not None
        or (s.gpu_memory_service is not None and not s.gpu_memory_service.enabled)
    )


def graph_has_legacy_fields(dgd: v1alpha1.DynamoGraphDeployment) -> bool:
    spec = dgd.spec
    return bool(spec.pvcs) or any(has_legacy_fields(s, graph=True) for s in (spec.services or {}).values())
