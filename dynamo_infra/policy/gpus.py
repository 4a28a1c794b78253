"""Do a stack's GPU requests fit a cluster? GPUs per pod, the cluster's GPUs per node, and the fit.

"Fit" (the `gpu-fit` policy):
(a) no pod asks for more GPUs than the node with the most allocatable GPUs has;
(b) the stack's GPUs (every pod template's GPUs times its pods: replicas, multinode groups counted
    per node, Grove cliques times their scaling groups) are at most the cluster's total.
A pod's GPUs are its containers' `nvidia.com/gpu` (limits, else requests; sidecar init containers
added, a plain init container counted when it asks for more than the rest) plus the devices of its
DRA claims whose ResourceClaimTemplate is among the manifests and whose device class names a GPU.
A node's GPUs are the larger of its allocatable `nvidia.com/gpu` and the GPU devices its
ResourceSlices publish (clusters publish the same GPUs one way or the other, some both); cordoned
nodes count for nothing. Allocatable, not free: what other workloads already use is not subtracted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.policy.pods import PodTemplate, containers

# The device-plugin resource the GPU operator advertises.
GPU_RESOURCE = "nvidia.com/gpu"
# A DRA device class or driver counts as GPUs when its name has this word (gpu.nvidia.com).
GPU_DEVICE_WORD = "gpu"


def _int(value: Any) -> int:
    """A whole count from an int, a whole float or a plain quantity string (0 otherwise)."""
    try:
        number = float(str(value))
    except ValueError:
        return 0
    return int(number) if number.is_integer() else 0


def container_gpus(resources: Any) -> int:
    """A container's `nvidia.com/gpu` limit, else its request (extended resources are whole numbers)."""
    for section in ("limits", "requests"):
        value = ((resources or {}).get(section) or {}).get(GPU_RESOURCE)
        if value is not None:
            return _int(value)
    return 0


def _is_gpu_class(name: Any) -> bool:
    return GPU_DEVICE_WORD in str(name or "").lower().split(".")


def claim_template_gpus(objects: Iterable[Manifest]) -> dict[tuple[str, str], int]:
    """(namespace, name) -> GPUs of each ResourceClaimTemplate (ExactCount requests of a GPU class)."""
    out: dict[tuple[str, str], int] = {}
    for obj in objects:
        if obj.get("kind") != "ResourceClaimTemplate":
            continue
        meta = obj.get("metadata") or {}
        requests = ((((obj.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests")) or []
        total = 0
        for request in requests:
            exactly = request.get("exactly") or request  # resource.k8s.io/v1, else v1beta1's flat request
            if (
                _is_gpu_class(exactly.get("deviceClassName"))
                and exactly.get("allocationMode", "ExactCount") == "ExactCount"
            ):
                total += _int(exactly.get("count", 1))
        out[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = total
    return out


def pod_gpus(
    spec: Manifest, namespace: str = "", templates: Mapping[tuple[str, str], int] | None = None
) -> int:
    """GPUs one pod of this spec asks for (device plugin + DRA claims from known templates)."""
    running, init_peak = 0, 0
    for kind, c in containers(spec):
        n = container_gpus(c.get("resources"))
        if kind == "containers" or c.get("restartPolicy") == "Always":
            running += n
        else:
            init_peak = max(init_peak, n)
    dra = sum(
        (templates or {}).get((namespace, str(claim.get("resourceClaimTemplateName"))), 0)
        for claim in spec.get("resourceClaims") or []
        if claim.get("resourceClaimTemplateName")
    )
    return max(running, init_peak) + dra


@dataclass(frozen=True)
class Demand:
    """GPUs one pod template asks for."""

    template: PodTemplate
    gpus_per_pod: int

    @property
    def total(self) -> int:
        return self.gpus_per_pod * self.template.pods

    @property
    def name(self) -> str:
        role = f" ({self.template.role})" if self.template.role else ""
        return f"{self.template.workload}{role}"


def demands(templates: Iterable[PodTemplate], objects: Iterable[Manifest]) -> list[Demand]:
    """The pod templates that ask for GPUs, with their GPUs per pod."""
    claims = claim_template_gpus(objects)
    out = []
    for t in templates:
        namespace = t.workload.split("/")[1]
        n = pod_gpus(t.spec, namespace, claims)
        if n:
            out.append(Demand(t, n))
    return out


@dataclass(frozen=True)
class ClusterGpus:
    """Allocatable GPUs per schedulable node."""

    nodes: Mapping[str, int] = field(default_factory=dict)

    @property
    def largest(self) -> int:
        return max(self.nodes.values(), default=0)

    @property
    def total(self) -> int:
        return sum(self.nodes.values())

    def describe(self) -> str:
        return f"{len(self.nodes)} nodes, {self.total} GPUs, at most {self.largest} on one node"


def cluster_gpus(nodes: Iterable[Manifest], resource_slices: Iterable[Manifest] = ()) -> ClusterGpus:
    """GPUs per node from Node objects (status.allocatable) and ResourceSlices (GPU devices)."""
    schedulable: dict[str, int] = {}
    for node in nodes:
        if (node.get("spec") or {}).get("unschedulable"):
            continue
        name = str((node.get("metadata") or {}).get("name", ""))
        schedulable[name] = _int(((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE, 0))
    dra: dict[str, int] = {}
    for rs in resource_slices:
        spec = rs.get("spec") or {}
        node_name = str(spec.get("nodeName") or "")
        if node_name and _is_gpu_class(spec.get("driver")):
            dra[node_name] = dra.get(node_name, 0) + len(spec.get("devices") or [])
    return ClusterGpus({n: max(g, dra.get(n, 0)) for n, g in schedulable.items()})


def fit_violations(demand: Iterable[Demand], cluster: ClusterGpus) -> list[str]:
    """Why the demand cannot schedule on the cluster ([] when it fits)."""
    demand = list(demand)
    out = [
        f"{d.name}: a pod asks for {d.gpus_per_pod} GPUs, but the largest node has {cluster.largest} "
        f"({cluster.describe()})"
        for d in demand
        if d.gpus_per_pod > cluster.largest
    ]
    total = sum(d.total for d in demand)
    if total > cluster.total:
        parts = ", ".join(f"{d.name} {d.template.pods}x{d.gpus_per_pod}" for d in demand)
        out.append(
            f"the stack asks for {total} GPUs ({parts}), but the cluster has {cluster.total} ({cluster.describe()})"
        )
    return out
