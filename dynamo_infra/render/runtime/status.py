"""Readiness and status as the operator computes them, from observed object statuses (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dynamo_infra.api.manifest import Manifest

# DGD states.
STATE_PENDING = "pending"
STATE_SUCCESSFUL = "successful"
STATE_FAILED = "failed"
# DGD Ready condition reasons.
REASON_ALL_READY = "all_resources_are_ready"
REASON_SOME_NOT_READY = "some_resources_are_not_ready"
# Grove classification of a not-ready component, aggregated into the DGD reason.
REASON_INSUFFICIENT_CAPACITY = "insufficient_capacity"
REASON_PODS_NOT_READY = "pods_not_ready"
REASON_UPDATING = "updating"
REASON_MIXED = "mixed_not_ready_reasons"
REASON_WAITING_FOR_CHECKPOINT = "waiting_for_checkpoint"
# Grove scheduling conditions that mean the cluster lacks capacity.
PODCLIQUE_SCHEDULED = "PodCliqueScheduled"
PODCLIQUE_INSUFFICIENT_SCHEDULED = "InsufficientScheduledPods"
PCSG_MIN_AVAILABLE_BREACHED = "MinAvailableBreached"
PCSG_INSUFFICIENT_SCHEDULED = "InsufficientScheduledPodCliqueScalingGroupReplicas"
# DCD condition reasons of the LeaderWorkerSet path.
LWS_READY = "LeaderWorkerSetReady"
LWS_NOT_READY = "LeaderWorkerSetNotReady"


@dataclass(frozen=True)
class Readiness:
    ready: bool
    reason: str
    message: str = ""
    desired: int | None = None
    ready_replicas: int | None = None
    updated_replicas: int | None = None
    available_replicas: int | None = None
    # Grove kinds: the DGD-level reason this not-ready component implies.
    graph_reason: str | None = None


def _condition(obj: Manifest, type_: str) -> Manifest | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


def deployment_readiness(obj: Manifest) -> Readiness:
    """Ready: not paused, status caught up with the spec, every desired replica updated and available."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    desired = int(spec.get("replicas", 1))
    updated = int(status.get("updatedReplicas", 0))
    available = int(status.get("availableReplicas", 0))
    ready_n = int(status.get("readyReplicas", 0))
    total = int(status.get("replicas", 0))
    name = (obj.get("metadata") or {}).get("name", "")

    def result(ready: bool, reason: str, message: str = "") -> Readiness:
        return Readiness(ready, reason, message, desired, ready_n, updated, available)

    if spec.get("paused"):
        return result(False, "DeploymentPaused", f"{name}: paused")
    generation = (obj.get("metadata") or {}).get("generation", 0)
    if status.get("observedGeneration", 0) < generation:
        return result(False, "DeploymentNotReady", f"{name}: spec change not observed yet")
    if desired == 0:
        return result(True, "DeploymentReady")
    available_cond = _condition(obj, "Available") or {}
    if updated < desired or available < desired or total != desired or available_cond.get("status") != "True":
        progressing = _condition(obj, "Progressing") or {}
        detail = progressing.get("message") or available_cond.get("message") or ""
        msg = f"{name}: {available}/{desired} available, {updated}/{desired} updated" + (
            f" ({detail})" if detail else ""
        )
        return result(False, "DeploymentNotReady", msg)
    return result(True, "DeploymentReady")


def leader_worker_set_readiness(obj: Manifest) -> Readiness:
    """Ready: no replicas wanted, or every group ready and the `Available` condition True."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    desired = int(spec.get("replicas", 1))
    ready_n = int(status.get("readyReplicas", 0))
    updated = int(status.get("updatedReplicas", 0))
    name = (obj.get("metadata") or {}).get("name", "")

    def result(ready: bool, reason: str, message: str = "") -> Readiness:
        return Readiness(ready, reason, message, desired, ready_n, updated, None)

    if desired == 0:
        return result(True, LWS_READY)
    available = (_condition(obj, "Available") or {}).get("status") == "True"
    if ready_n < desired or not available:
        return result(False, LWS_NOT_READY, f"{name}: {ready_n}/{desired} groups ready")
    return result(True, LWS_READY)


def _grove_readiness(obj: Manifest, counted: str, capacity: tuple[str, str, str]) -> Readiness:
    """CheckPodCliqueReady / CheckPCSGReady: caught up, then replicas == updated == `counted`."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    meta = obj.get("metadata") or {}
    name = meta.get("name", "")
    desired = int(spec.get("replicas", 0))
    count = int(status.get(counted, 0))
    updated = int(status.get("updatedReplicas", 0))
    total = int(status.get("replicas", 0))
    scheduled = int(status.get("scheduledReplicas", 0))
    kind = obj.get("kind", "")
    ready_n, available_n = (count, None) if counted == "readyReplicas" else (None, count)

    def result(ready: bool, message: str = "", graph_reason: str | None = None) -> Readiness:
        reason = f"{kind}Ready" if ready else f"{kind}NotReady"
        text = f"{name}: {message}" if message else ""
        return Readiness(ready, reason, text, desired, ready_n, updated, available_n, graph_reason)

    observed = status.get("observedGeneration")
    if observed is None:
        return result(False, "observedGeneration is nil", REASON_SOME_NOT_READY)
    if int(observed) < int(meta.get("generation", 0)):
        return result(
            False,
            f"spec not yet processed: generation={meta.get('generation')}, observedGeneration={observed}",
            REASON_SOME_NOT_READY,
        )
    if desired == 0 or (total == desired and updated == desired and count == desired):
        return result(True)
    if counted == "readyReplicas" and int(status.get("scheduleGatedReplicas", 0)) > 0:
        return result(
            False, f"schedule-gated replicas: {status['scheduleGatedReplicas']}", REASON_INSUFFICIENT_CAPACITY
        )
    cond_type, cond_status, cond_reason = capacity
    cond = _condition(obj, cond_type) or {}
    if cond.get("status") == cond_status and cond.get("reason") == cond_reason:
        return result(
            False,
            f"scheduling condition {cond_reason}: {cond.get('message', '')}",
            REASON_INSUFFICIENT_CAPACITY,
        )
    if 0 < scheduled < desired:
        return result(
            False,
            f"insufficient scheduled replicas: scheduled={scheduled}/{desired}",
            REASON_INSUFFICIENT_CAPACITY,
        )
    if updated != desired:
        return result(False, f"desired={desired}, updated={updated}", REASON_UPDATING)
    if total != desired:
        return result(
            False, f"performing rolling update: desired={desired}, replicas={total}", REASON_UPDATING
        )
    word = "ready" if counted == "readyReplicas" else "available"
    return result(False, f"scheduled but {word}={count}/{desired}", REASON_PODS_NOT_READY)


def podclique_readiness(obj: Manifest) -> Readiness:
    return _grove_readiness(
        obj, "readyReplicas", (PODCLIQUE_SCHEDULED, "False", PODCLIQUE_INSUFFICIENT_SCHEDULED)
    )


def scaling_group_readiness(obj: Manifest) -> Readiness:
    return _grove_readiness(
        obj, "availableReplicas", (PCSG_MIN_AVAILABLE_BREACHED, "False", PCSG_INSUFFICIENT_SCHEDULED)
    )


# Readiness functions per kind; kinds not listed are ready once they exist.
READINESS = {
    ("apps/v1", "Deployment"): deployment_readiness,
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): leader_worker_set_readiness,
    ("grove.io/v1alpha1", "PodClique"): podclique_readiness,
    ("grove.io/v1alpha1", "PodCliqueScalingGroup"): scaling_group_readiness,
}


def object_readiness(obj: Manifest) -> Readiness:
    check = READINESS.get((obj.get("apiVersion", ""), obj.get("kind", "")))
    if check is None:
        return Readiness(True, "Exists")
    return check(obj)


@dataclass(frozen=True)
class ComponentStatus:
    ready: bool
    reason: str
    message: str
    replicas: int | None = None
    ready_replicas: int | None = None
    updated_replicas: int | None = None
    available_replicas: int | None = None
    # Grove kinds: the DGD-level reason this not-ready component implies.
    graph_reason: str | None = None
    # Replicas held at 0 until the component's checkpoint is Ready.
    waiting_for_checkpoint: bool = False

    def to_dict(self) -> Manifest:
        """Wire form (camelCase, as Kubernetes statuses are), unset counts left out."""
        words = {k: v for k, v in self.__dict__.items() if v is not None}
        if not self.waiting_for_checkpoint:
            words.pop("waiting_for_checkpoint")
        return {k.split("_")[0] + "".join(w.title() for w in k.split("_")[1:]): v for k, v in words.items()}


def component_status(live: list[Manifest]) -> ComponentStatus:
    """A component's status from its live objects (the workload decides the replica counts)."""
    results = [object_readiness(o) for o in live]
    workload = next(
        (r for r, o in zip(results, live, strict=True) if (o.get("apiVersion"), o.get("kind")) in READINESS),
        None,
    )
    not_ready = [r for r in results if not r.ready]
    return ComponentStatus(
        ready=not not_ready,
        reason=not_ready[0].reason if not_ready else (workload.reason if workload else "Exists"),
        message="; ".join(r.message for r in not_ready if r.message),
        replicas=workload.desired if workload else None,
        ready_replicas=workload.ready_replicas if workload else None,
        updated_replicas=workload.updated_replicas if workload else None,
        available_replicas=workload.available_replicas if workload else None,
        graph_reason=next((r.graph_reason for r in not_ready if r.graph_reason), None),
    )


@dataclass(frozen=True)
class GraphStatus:
    state: str
    conditions: list[Manifest] = field(default_factory=list)

    def to_dict(self) -> Manifest:
        return {"state": self.state, "conditions": self.conditions}


def _not_ready_reason(statuses: list[ComponentStatus]) -> str:
    """One Grove classification shared by every not-ready component, else mixed (or generic)."""
    reasons = {s.graph_reason for s in statuses}
    if None in reasons:
        return REASON_SOME_NOT_READY
    return str(reasons.pop()) if len(reasons) == 1 else REASON_MIXED


def graph_status(components: dict[str, ComponentStatus]) -> GraphStatus:
    """DGD `state` and `Ready` condition from its components' statuses."""
    waiting = sorted(n for n, s in components.items() if s.waiting_for_checkpoint)
    if waiting:
        cond = {
            "type": "Ready",
            "status": "False",
            "reason": REASON_WAITING_FOR_CHECKPOINT,
            "message": f"Waiting for checkpoint: {', '.join(waiting)}",
        }
        return GraphStatus(STATE_PENDING, [cond])
    not_ready = {n: s for n, s in sorted(components.items()) if not s.ready}
    if not not_ready:
        cond = {
            "type": "Ready",
            "status": "True",
            "reason": REASON_ALL_READY,
            "message": "All resources are ready",
        }
        return GraphStatus(STATE_SUCCESSFUL, [cond])
    detail = "; ".join(f"{n}: {s.reason}" for n, s in not_ready.items())
    cond = {
        "type": "Ready",
        "status": "False",
        "reason": _not_ready_reason(list(not_ready.values())),
        "message": f"Resources not ready: {detail}",
    }
    return GraphStatus(STATE_PENDING, [cond])


# Replica counts each workload kind reports in `status.components[name]`.
REPORTED_COUNTS = {
    "Deployment": ("readyReplicas", "availableReplicas"),
    "LeaderWorkerSet": ("readyReplicas",),
    "PodClique": ("readyReplicas",),
    "PodCliqueScalingGroup": ("availableReplicas",),
}


def replica_status(workload: Manifest, runtime_namespace: str | None = None) -> Manifest:
    """`status.components[name]` of the DGD for a component's workload (observed counts)."""
    status = workload.get("status") or {}
    kind = workload.get("kind", "Deployment")
    out: Manifest = {
        "componentKind": kind,
        "componentNames": [(workload.get("metadata") or {}).get("name", "")],
        "replicas": int(status.get("replicas", 0)),
        "updatedReplicas": int(status.get("updatedReplicas", 0)),
    }
    for key in REPORTED_COUNTS.get(kind, ("readyReplicas", "availableReplicas")):
        out[key] = int(status.get(key, 0))
    if runtime_namespace:
        out["runtimeNamespace"] = runtime_namespace
    return out


def dgd_status(
    components: dict[str, ComponentStatus], replicas: dict[str, Manifest] | None = None
) -> Manifest:
    """The DGD status the operator writes: `state`, the `Ready` condition, per-component replicas."""
    out = graph_status(components).to_dict()
    if replicas:
        out["components"] = {name: replicas[name] for name in sorted(replicas)}
    return out
