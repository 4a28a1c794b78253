"""Dynamic Resource Allocation: the per-component ResourceClaimTemplate and the shared pod claim that
replaces device-plugin GPUs when the GPU memory service runs in the pod."""

from __future__ import annotations

from dynamo_infra.api import DynamoValidationError, Problem
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.context import ComponentContext, GraphContext
from dynamo_infra.render.multinode import gpu_limit, is_gpu_resource

# resource.k8s.io API of ResourceClaimTemplates (GA in Kubernetes 1.34).
API_VERSION = "resource.k8s.io/v1"
# Pod-level claim every GMS client container shares.
CLAIM_NAME = "intrapod-shared-gpu"
# Device request name inside the component's ResourceClaimTemplate.
REQUEST_NAME = "gpus"
# DeviceClass of the NVIDIA DRA driver when the component names none.
DEFAULT_DEVICE_CLASS = "gpu.nvidia.com"
# Device-plugin GPUs whose nodes carry this NoSchedule taint; DRA pods tolerate it explicitly.
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# Operator error when a graph needs DRA on a cluster without it.
DRA_UNAVAILABLE = (
    "gpuMemoryService / inter-pod GMS failover requires DRA (Dynamic Resource Allocation), but DRA is "
    "not available (either the resource.k8s.io/v1 API is not registered on this cluster, which requires "
    "Kubernetes 1.34+, or DRA has been explicitly disabled in the operator configuration)"
)


def claim_template_name(graph: str, component: str) -> str:
    return f"{graph}-{component.lower()}-gpu"


def device_class(gms: Manifest | None) -> str:
    return str((gms or {}).get("deviceClassName") or DEFAULT_DEVICE_CLASS)


def exact_request(name: str, device_class_name: str, count: int) -> Manifest:
    return {
        "name": name,
        "exactly": {"deviceClassName": device_class_name, "allocationMode": "ExactCount", "count": count},
    }


def resource_claim_template(name: str, namespace: str, device_class_name: str, count: int) -> Manifest:
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        # The operator writes the template's empty ObjectMeta as `metadata: {}`; the server keeps it.
        "spec": {
            "metadata": {},
            "spec": {"devices": {"requests": [exact_request(REQUEST_NAME, device_class_name, count)]}},
        },
    }


def graph_claim_templates(g: GraphContext, contexts: list[ComponentContext]) -> list[Manifest]:
    """One template per component with a GPU memory service (the operator fails without DRA)."""
    needs = [c for c in contexts if c.gms is not None or c.inter_pod_failover]
    if needs and not g.options.dra.enabled:
        raise DynamoValidationError(
            [Problem(f"spec.components[{needs[0].name}].experimental", DRA_UNAVAILABLE)]
        )
    out = []
    for c in contexts:
        count = gpu_limit((c.container("main") or {}).get("resources"))
        if c.gms is None or count <= 0:
            continue
        out.append(
            resource_claim_template(
                claim_template_name(g.name, c.name), g.namespace, device_class(c.gms), count
            )
        )
    return out


def without_gpus(resources: Manifest | None) -> Manifest:
    """Resources with every GPU-like request and limit removed (DRA allocates the devices)."""
    out: Manifest = {}
    for key, value in (resources or {}).items():
        if key in ("limits", "requests"):
            kept = {k: v for k, v in (value or {}).items() if not is_gpu_resource(k)}
            if kept:
                out[key] = kept
        else:
            out[key] = value
    return out


def with_claim(container: Manifest, claim: str = CLAIM_NAME) -> Manifest:
    resources = without_gpus(container.get("resources"))
    claims = list(resources.get("claims") or [])
    if not any(c.get("name") == claim for c in claims):
        claims.append({"name": claim})
    return {**container, "resources": {**resources, "claims": claims}}


def with_toleration(pod: Manifest) -> Manifest:
    tolerations = list(pod.get("tolerations") or [])
    if any(
        t.get("key") == GPU_TOLERATION["key"] and t.get("effect") == GPU_TOLERATION["effect"]
        for t in tolerations
    ):
        return pod
    return {**pod, "tolerations": [*tolerations, dict(GPU_TOLERATION)]}


def apply_claim(pod: Manifest, template: str) -> Manifest:
    """The first container's GPUs become the shared pod claim `intrapod-shared-gpu`."""
    containers = list(pod.get("containers") or [])
    containers[0] = with_claim(containers[0])
    claims = [*(pod.get("resourceClaims") or []), {"name": CLAIM_NAME, "resourceClaimTemplateName": template}]
    tolerations = [*(pod.get("tolerations") or []), dict(GPU_TOLERATION)]
    return {**pod, "containers": containers, "tolerations": tolerations, "resourceClaims": claims}
