"""Readiness and status as the operator computes them, from observed object statuses (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

# DGD states.
STATE_PENDING = "pending"
STATE_SUCCESSFUL = "successful"
STATE_FAILED = "failed"
# DGD Ready condition reasons.
REASON_ALL_READY = "all_resources_are_ready"
REASON_SOME_NOT_READY = "some_resources_are_not_ready"


@dataclass(frozen=True)
class Readiness:
    ready: bool
    reason: str
    message: str = ""
    desired: int | None = None
    ready_replicas: int | None = None
    updated_replicas: int | None = None
    available_replicas: int | None = None


def _condition(obj: Obj, type_: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


def deployment_readiness(obj: Obj) -> Readiness:
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


# Readiness functions per kind; kinds not listed are ready once they exist.
READINESS = {("apps/v1", "Deployment"): deployment_readiness}


def object_readiness(obj: Obj) -> Readiness:
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

    def to_dict(self) -> Obj:
        """Wire form (camelCase, as Kubernetes statuses are), unset counts left out."""
        words = {k: v for k, v in self.__dict__.items() if v is not None}
        return {k.split("_")[0] + "".join(w.title() for w in k.split("_")[1:]): v for k, v in words.items()}


def component_status(live: list[Obj]) -> ComponentStatus:
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
    )


@dataclass(frozen=True)
class GraphStatus:
    state: str
    conditions: list[Obj] = field(default_factory=list)

    def to_dict(self) -> Obj:
        return {"state": self.state, "conditions": self.conditions}


def graph_status(components: dict[str, ComponentStatus]) -> GraphStatus:
    """DGD `state` and `Ready` condition from its components' statuses."""
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
        "reason": REASON_SOME_NOT_READY,
        "message": f"Resources not ready: {detail}",
    }
    return GraphStatus(STATE_PENDING, [cond])


def replica_status(workload: Obj, runtime_namespace: str | None = None) -> Obj:
    """`status.components[name]` of the DGD for a Deployment-backed component (observed counts)."""
    status = workload.get("status") or {}
    out: Obj = {
        "componentKind": workload.get("kind", "Deployment"),
        "componentNames": [(workload.get("metadata") or {}).get("name", "")],
        "replicas": int(status.get("replicas", 0)),
        "updatedReplicas": int(status.get("updatedReplicas", 0)),
        "readyReplicas": int(status.get("readyReplicas", 0)),
        "availableReplicas": int(status.get("availableReplicas", 0)),
    }
    if runtime_namespace:
        out["runtimeNamespace"] = runtime_namespace
    return out


def dgd_status(components: dict[str, ComponentStatus], replicas: dict[str, Obj] | None = None) -> Obj:
    """The DGD status the operator writes: `state`, the `Ready` condition, per-component replicas."""
    out = graph_status(components).to_dict()
    if replicas:
        out["components"] = {name: replicas[name] for name in sorted(replicas)}
    return out
