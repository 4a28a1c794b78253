"""Readiness of LeaderWorkerSets, PodCliques and PodCliqueScalingGroups, and the DGD reasons Grove
components aggregate into (pure functions of observed objects)."""

from __future__ import annotations

from typing import Any

from dynamo_infra.render.runtime.status import (
    ComponentStatus,
    component_status,
    graph_status,
    leader_worker_set_readiness,
    object_readiness,
    replica_status,
)


def lws(desired: int = 2, ready: int = 2, available: str = "True") -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "w-0"},
        "spec": {"replicas": desired},
        "status": {
            "readyReplicas": ready,
            "replicas": desired,
            "conditions": [{"type": "Available", "status": available}],
        },
    }


def grove(kind: str, desired: int = 2, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "g-0-w", "generation": 2},
        "spec": {"replicas": desired},
        "status": {"observedGeneration": 2, **status},
    }


def test_lws_ready_needs_ready_groups_and_available() -> None:
    assert leader_worker_set_readiness(lws()).ready
    assert leader_worker_set_readiness(lws()).reason == "LeaderWorkerSetReady"
    assert not leader_worker_set_readiness(lws(ready=1)).ready
    assert leader_worker_set_readiness(lws(available="False")).reason == "LeaderWorkerSetNotReady"
    assert leader_worker_set_readiness(lws(desired=0, ready=0, available="False")).ready


def test_podclique_ready_when_replicas_updated_and_ready_agree() -> None:
    ok = grove("PodClique", replicas=2, updatedReplicas=2, readyReplicas=2)
    assert object_readiness(ok).ready
    stale = grove("PodClique", replicas=2, updatedReplicas=2, readyReplicas=2)
    stale["status"]["observedGeneration"] = 1
    assert object_readiness(stale).graph_reason == "some_resources_are_not_ready"
    missing = grove("PodClique", replicas=2)
    del missing["status"]["observedGeneration"]
    assert not object_readiness(missing).ready


def test_podclique_classifications() -> None:
    gated = grove("PodClique", replicas=2, updatedReplicas=2, readyReplicas=0, scheduleGatedReplicas=2)
    assert object_readiness(gated).graph_reason == "insufficient_capacity"
    partial = grove("PodClique", replicas=2, updatedReplicas=2, readyReplicas=1, scheduledReplicas=1)
    assert object_readiness(partial).graph_reason == "insufficient_capacity"
    rolling = grove("PodClique", replicas=3, updatedReplicas=1, readyReplicas=2, scheduledReplicas=2)
    assert object_readiness(rolling).graph_reason == "updating"
    waiting = grove("PodClique", replicas=2, updatedReplicas=2, readyReplicas=1, scheduledReplicas=2)
    r = object_readiness(waiting)
    assert r.graph_reason == "pods_not_ready" and r.message == "g-0-w: scheduled but ready=1/2"


def test_scaling_group_counts_available_replicas() -> None:
    ok = grove("PodCliqueScalingGroup", replicas=2, updatedReplicas=2, availableReplicas=2)
    assert object_readiness(ok).ready
    breached = grove(
        "PodCliqueScalingGroup",
        replicas=2,
        updatedReplicas=2,
        availableReplicas=0,
        conditions=[
            {
                "type": "MinAvailableBreached",
                "status": "False",
                "reason": "InsufficientScheduledPodCliqueScalingGroupReplicas",
            }
        ],
    )
    assert object_readiness(breached).graph_reason == "insufficient_capacity"
    status = replica_status(ok, "ns-g")
    assert status == {
        "componentKind": "PodCliqueScalingGroup",
        "componentNames": ["g-0-w"],
        "replicas": 2,
        "updatedReplicas": 2,
        "availableReplicas": 2,
        "runtimeNamespace": "ns-g",
    }


def test_dgd_reason_aggregates_grove_classifications() -> None:
    waiting = component_status(
        [grove("PodClique", replicas=2, updatedReplicas=2, readyReplicas=1, scheduledReplicas=2)]
    )
    rolling = component_status([grove("PodClique", replicas=3, updatedReplicas=1, readyReplicas=2)])
    assert graph_status({"a": waiting, "b": waiting}).conditions[0]["reason"] == "pods_not_ready"
    assert graph_status({"a": waiting, "b": rolling}).conditions[0]["reason"] == "mixed_not_ready_reasons"
    plain = ComponentStatus(False, "DeploymentNotReady", "")
    assert graph_status({"a": waiting, "b": plain}).conditions[0]["reason"] == "some_resources_are_not_ready"


def test_waiting_for_checkpoint_keeps_the_graph_pending() -> None:
    gated = ComponentStatus(True, "DeploymentReady", "", waiting_for_checkpoint=True)
    status = graph_status({"w": gated})
    assert status.state == "pending" and status.conditions[0]["reason"] == "waiting_for_checkpoint"
    assert gated.to_dict()["waitingForCheckpoint"] is True
    assert "waitingForCheckpoint" not in ComponentStatus(True, "x", "").to_dict()
