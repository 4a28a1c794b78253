"""GPUs of rendered pods as the 1.6 operator counts them for `gpusPerEngine` / `gpusPerReplica` (pure).

Ported from `deploy/operator/internal/dra/dra.go` (`ResolvePodSetGPUCount`, `effectivePodScalarGPUCount`,
`ExtractGPUCountFromResourceRequirements`, `gpuCountFromClaimSpec`) and `internal/dynamo/gpu_shape.go`
(`ResolveGPUShape`, `engineMainContainerPods`) as michaelfeil/dynamo holds them at 80b177f2 (1.6.0 cut).

Where the operator reads the cluster (ResourceClaimTemplates, ResourceClaims, DeviceClasses), we read the
objects the graph renders; a claim that names anything else, or whose device class cannot be told a GPU
class from its name or its request's `device.driver` selector, leaves the count unknown (None) — as the
operator's resolution error leaves the shape unpublished.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from dynamo_infra.api.admission.gpus import quantity
from dynamo_infra.api.manifest import Manifest

# The container the operator counts as the inference engine.
MAIN_CONTAINER = "main"
# An init container with this restart policy is a native sidecar (runs beside the app containers).
SIDECAR_RESTART_POLICY = "Always"
# DRA allocation modes with a fixed device count ("" is the API default, ExactCount).
EXACT_COUNT_MODES = ("", "ExactCount")
# Positive `device.driver == "..."` constraints of a CEL selector conjunction.
_DRIVER_EQUALS = re.compile(r"""(?:^|&&)\s*\(*\s*device\.driver\s*==\s*["']([^"']+)["']""")


@dataclass(frozen=True)
class PodSet:
    """A rendered pod spec and how many copies of it one component replica runs."""

    spec: Manifest
    count: int = 1


@dataclass(frozen=True)
class GPUShape:
    """GPUs of one inference engine, and the unique GPUs one more component replica adds."""

    gpus_per_engine: int
    gpus_per_replica: int

    def to_dict(self) -> Manifest:
        return {"gpusPerEngine": self.gpus_per_engine, "gpusPerReplica": self.gpus_per_replica}


def is_gpu_resource(name: str) -> bool:
    """`isGPUResourceName`: nvidia.com/gpu, gpu, */gpu, MIG shapes, gpu.*."""
    n = name.lower()
    return n in ("nvidia.com/gpu", "gpu") or n.endswith("/gpu") or "/mig-" in n or n.startswith("gpu.")


def looks_like_gpu(name: str) -> bool:
    """`looksLikeGPUIdentifier`: a driver or DeviceClass name that names GPUs."""
    n = name.lower()
    return n == "gpu" or n.startswith(("gpu.", "gpu/")) or n.endswith("/gpu") or "/gpu." in n or "/gpu-" in n


def container_gpus(resources: Manifest | None) -> int | None:
    """Scalar GPUs of a container: its one GPU resource name, limits first; None when two names make
    it ambiguous or the quantity is not whole (the operator refuses both)."""
    sections = [(resources or {}).get(s) or {} for s in ("limits", "requests")]
    names = sorted({n for s in sections for n in s if is_gpu_resource(n)})
    if not names:
        return 0
    if len(names) > 1:
        return None
    raw = sections[0].get(names[0], sections[1].get(names[0]))
    value = quantity(raw)
    if value is None or value != math.ceil(value):
        return None
    return int(value)


def pod_scalar_gpus(spec: Manifest) -> int | None:
    """The pod's scalar GPU scheduling footprint: the peak of every init phase and the app phase,
    native sidecars counted in both."""
    app = 0
    for c in spec.get("containers") or []:
        n = container_gpus(c.get("resources"))
        if n is None:
            return None
        app += n
    sidecars = peak = 0
    for c in spec.get("initContainers") or []:
        n = container_gpus(c.get("resources"))
        if n is None:
            return None
        if c.get("restartPolicy") == SIDECAR_RESTART_POLICY:
            sidecars += n
            peak = max(peak, sidecars)
        else:
            peak = max(peak, sidecars + n)
    return max(peak, app + sidecars)


def _exact_count(mode: str | None, count: int | None) -> int | None:
    if (mode or "") not in EXACT_COUNT_MODES or (count is not None and int(count) < 0):
        return None
    return int(count or 0) or 1


def _is_gpu_class(device_class: str, selectors: Sequence[Manifest]) -> bool | None:
    """Whether a request selects GPUs: its `device.driver` selector, else the DeviceClass's name."""
    drivers = {
        looks_like_gpu(d)
        for s in selectors
        if "||" not in str((s.get("cel") or {}).get("expression") or "")
        for d in _DRIVER_EQUALS.findall(str((s.get("cel") or {}).get("expression") or ""))
    }
    if len(drivers) > 1:
        return None
    if drivers:
        return drivers.pop()
    return True if not selectors and looks_like_gpu(device_class) else None


def _request_gpus(request: Manifest) -> int | None:
    """GPUs of one device request (0 when it asks for other devices); None when unknown."""
    exactly = request.get("exactly")
    if exactly is not None:
        gpu = _is_gpu_class(str(exactly.get("deviceClassName") or ""), exactly.get("selectors") or [])
        if gpu is None:
            return None
        return _exact_count(exactly.get("allocationMode"), exactly.get("count")) if gpu else 0
    counts = set()
    kinds = set()
    for sub in request.get("firstAvailable") or []:
        gpu = _is_gpu_class(str(sub.get("deviceClassName") or ""), sub.get("selectors") or [])
        if gpu is None:
            return None
        kinds.add(gpu)
        if gpu:
            counts.add(_exact_count(sub.get("allocationMode"), sub.get("count")))
    if not kinds or len(kinds) > 1 or len(counts) > 1 or None in counts:
        return None
    return counts.pop() if True in kinds else 0


def claim_spec_gpus(claim_spec: Manifest, requests: Iterable[str]) -> int | None:
    """GPUs of a ResourceClaim spec for the named requests ("" selects every request)."""
    total = 0
    all_requests = (claim_spec.get("devices") or {}).get("requests") or []
    for wanted in requests:
        chosen = [r for r in all_requests if not wanted or r.get("name") == wanted]
        if wanted and not chosen:
            return None
        for r in chosen:
            n = _request_gpus(r)
            if n is None:
                return None
            total += n
    return total


def _claim_requests(spec: Manifest) -> dict[str, list[str]]:
    """Per pod claim name, the requests its containers use ([""] when one uses the whole claim)."""
    out: dict[str, list[str]] = {}
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        for claim in (c.get("resources") or {}).get("claims") or []:
            name = str(claim.get("name") or "")
            chosen = out.setdefault(name, [])
            request = str(claim.get("request") or "")
            if chosen == [""]:
                continue
            if not request:
                out[name] = [""]
            elif request not in chosen:
                chosen.append(request)
    return out


def pod_set_gpus(pods: Sequence[PodSet], claims: Mapping[tuple[str, str], Manifest]) -> int | None:
    """`ResolvePodSetGPUCount`: scalar footprints times their pod counts, plus DRA devices — a claim
    template's per pod, a named ResourceClaim's once across the set. `claims`: the claim specs by
    (kind, name), kind `ResourceClaimTemplate` or `ResourceClaim`."""
    total = 0
    direct: dict[str, list[str]] = {}
    for pod in pods:
        if pod.count <= 0:
            return None
        scalar = pod_scalar_gpus(pod.spec)
        if scalar is None:
            return None
        total += scalar * pod.count
        pod_claims = {str(c.get("name")): c for c in pod.spec.get("resourceClaims") or []}
        for name, requests in _claim_requests(pod.spec).items():
            ref = pod_claims.get(name)
            if ref is None:
                return None
            if ref.get("resourceClaimTemplateName"):
                spec = claims.get(("ResourceClaimTemplate", str(ref["resourceClaimTemplateName"])))
                n = claim_spec_gpus(spec, requests) if spec is not None else None
                if n is None:
                    return None
                total += n * pod.count
            elif ref.get("resourceClaimName"):
                chosen = direct.setdefault(str(ref["resourceClaimName"]), [])
                chosen[:] = [""] if "" in [*chosen, *requests] else sorted({*chosen, *requests})
            else:
                return None
    for name, requests in direct.items():
        spec = claims.get(("ResourceClaim", name))
        n = claim_spec_gpus(spec, requests) if spec is not None else None
        if n is None:
            return None
        total += n
    return total


def claim_specs(objects: Iterable[Manifest]) -> dict[tuple[str, str], Manifest]:
    """The claim specs among rendered objects, by (kind, name)."""
    out: dict[tuple[str, str], Manifest] = {}
    for o in objects:
        name = str((o.get("metadata") or {}).get("name") or "")
        if o.get("kind") == "ResourceClaimTemplate":
            out[("ResourceClaimTemplate", name)] = ((o.get("spec") or {}).get("spec")) or {}
        elif o.get("kind") == "ResourceClaim":
            out[("ResourceClaim", name)] = o.get("spec") or {}
    return out


def main_container_pod(pod_template: Manifest | None) -> Manifest:
    """`mainContainerPodSpec`: the authored pod spec with only its main container (no init containers)."""
    spec = dict((pod_template or {}).get("spec") or {})
    main = [c for c in spec.get("containers") or [] if c.get("name") == MAIN_CONTAINER]
    spec.pop("initContainers", None)
    spec["containers"] = main[:1]
    return spec


def role_template(component: Manifest, role: str) -> Manifest | None:
    """The pod template of a role (`roles[name=role].podTemplate`), None when it has none."""
    for r in component.get("roles") or []:
        if r.get("name") == role and r.get("podTemplate") is not None:
            return dict(r["podTemplate"])
    return None


def node_count(component: Manifest) -> int:
    return int((component.get("multinode") or {}).get("nodeCount") or 1)


def engine_pods(component: Manifest) -> list[PodSet]:
    """`engineMainContainerPods`: the main containers of one engine, across its nodes (role pod templates
    when the component has them: the leader once, the worker on every other node)."""
    nodes = node_count(component)
    leader, worker = role_template(component, "leader"), role_template(component, "worker")
    if leader is None and worker is None:
        return [PodSet(main_container_pod(component.get("podTemplate")), nodes)]
    default = component.get("podTemplate")
    out = [PodSet(main_container_pod(leader if leader is not None else default), 1)]
    if nodes > 1:
        out.append(PodSet(main_container_pod(worker if worker is not None else default), nodes - 1))
    return out
