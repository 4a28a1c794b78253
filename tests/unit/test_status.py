"""Readiness and DGD status computed like the operator (pure functions)."""

from __future__ import annotations

from dynamo_infra.render.runtime.status import (
    ComponentStatus,
    component_status,
    deployment_readiness,
    graph_status,
)


def deployment(desired: int = 2, **status: object) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "generation": 3},
        "spec": {"replicas": desired},
        "status": {"observedGeneration": 3, **status},
    }


AVAILABLE = {"conditions": [{"type": "Available", "status": "True"}]}


def test_deployment_ready_when_all_replicas_updated_and_available() -> None:
    d = deployment(2, replicas=2, updatedReplicas=2, availableReplicas=2, readyReplicas=2, **AVAILABLE)
    r = deployment_readiness(d)
    assert r.ready and r.reason == "DeploymentReady" and r.ready_replicas == 2


def test_deployment_not_ready_while_rolling_or_unobserved() -> None:
    rolling = deployment(2, replicas=3, updatedReplicas=1, availableReplicas=2, readyReplicas=2, **AVAILABLE)
    assert not deployment_readiness(rolling).ready
    stale = deployment(2, replicas=2, updatedReplicas=2, availableReplicas=2, **AVAILABLE)
    stale["status"]["observedGeneration"] = 2
    assert deployment_readiness(stale).message == "d: spec change not observed yet"
    no_condition = deployment(2, replicas=2, updatedReplicas=2, availableReplicas=2)
    assert not deployment_readiness(no_condition).ready


def test_zero_replicas_is_ready_and_paused_is_not() -> None:
    assert deployment_readiness(deployment(0)).ready
    paused = deployment(1, replicas=1, updatedReplicas=1, availableReplicas=1, **AVAILABLE)
    paused["spec"]["paused"] = True
    assert deployment_readiness(paused).reason == "DeploymentPaused"


def test_component_status_uses_the_workload_counts() -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    d = deployment(1, replicas=1, updatedReplicas=1, availableReplicas=1, readyReplicas=1, **AVAILABLE)
    s = component_status([svc, d])
    assert s.ready and s.replicas == 1 and s.ready_replicas == 1


def test_graph_state_and_ready_condition() -> None:
    ok = ComponentStatus(True, "DeploymentReady", "")
    bad = ComponentStatus(False, "DeploymentNotReady", "0/1")
    assert graph_status({"a": ok}).state == "successful"
    assert graph_status({"a": ok}).conditions[0]["reason"] == "all_resources_are_ready"
    pending = graph_status({"a": ok, "w": bad})
    assert pending.state == "pending"
    assert pending.conditions[0] == {
        "type": "Ready",
        "status": "False",
        "reason": "some_resources_are_not_ready",
        "message": "Resources not ready: w: DeploymentNotReady",
    }
