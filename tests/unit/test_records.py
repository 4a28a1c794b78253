"""The graph's records (DGD and DGDSAs in the hub version) and their status, as Dynamo's planner reads them."""

from __future__ import annotations

from typing import Any

from dynamo_infra.api import v1alpha1
from dynamo_infra.api.loader import to_hub
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph
from dynamo_infra.render.records import (
    adapter_record,
    adapter_status,
    graph_record,
    graph_record_status,
    runtime_namespace,
)
from dynamo_infra.render.status import ComponentStatus, component_status

GRAPH: dict[str, Any] = {
    "apiVersion": "nvidia.com/v1alpha1",
    "kind": "DynamoGraphDeployment",
    "metadata": {"name": "g", "labels": {"team": "a"}},
    "spec": {
        "backendFramework": "vllm",
        "services": {
            "Frontend": {"componentType": "frontend", "replicas": 1},
            "decode": {
                "componentType": "worker",
                "subComponentType": "decode",
                "replicas": 2,
                "scalingAdapter": {"enabled": True},
                "extraPodSpec": {
                    "mainContainer": {"image": "img", "command": ["python3", "-m", "dynamo.vllm"]}
                },
            },
        },
    },
}


def deployment(name: str, replicas: int, ready: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "generation": 1},
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": 1,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "conditions": [{"type": "Available", "status": "True" if ready == replicas else "False"}],
        },
    }


def test_the_graph_record_is_the_hub_spec_with_the_adapters_replicas() -> None:
    dgd = v1alpha1.DynamoGraphDeployment.parse(GRAPH)
    hub = to_hub(dgd).to_manifest()
    record = graph_record(hub, "ns", {"nvidia.com/current-hash": "abc"}, {"decode": 5, "Frontend": 9})
    assert record["apiVersion"] == "nvidia.com/v1beta1" and record["kind"] == "DynamoGraphDeployment"
    meta = record["metadata"]
    assert (meta["name"], meta["namespace"], meta["labels"]) == ("g", "ns", {"team": "a"})
    # The operator's annotations, beside the conversion's record of v1alpha1-only fields.
    assert meta["annotations"] == {
        **(hub["metadata"].get("annotations") or {}),
        "nvidia.com/current-hash": "abc",
    }
    by_name = {c["name"]: c for c in record["spec"]["components"]}
    # The adapter owns the adapted component's replicas; the others are as written.
    assert by_name["decode"]["replicas"] == 5 and by_name["Frontend"]["replicas"] == 1
    assert "services" not in record["spec"]
    # The input is not modified.
    assert {c["name"]: c["replicas"] for c in hub["spec"]["components"]} == {"Frontend": 1, "decode": 2}


def test_adapter_record_and_status_in_the_hub_version() -> None:
    rendered = render_graph(v1alpha1.DynamoGraphDeployment.parse(GRAPH), ClusterOptions(), "ns")
    adapter = rendered.components["decode"].adapter
    assert adapter is not None
    record = adapter_record(adapter)
    assert record["apiVersion"] == "nvidia.com/v1beta1"
    assert record["metadata"]["name"] == "g-decode" and record["metadata"]["namespace"] == "ns"
    assert record["spec"] == {"replicas": 2, "dgdRef": {"name": "g", "componentName": "decode"}}
    assert adapter_status({**record, "spec": {**record["spec"], "replicas": 3}}) == {
        "replicas": 3,
        "selector": "nvidia.com/dynamo-component=decode,nvidia.com/dynamo-graph-deployment-name=g",
    }
    # The worker's Dynamo namespace, from its pod template.
    objects = rendered.components["decode"].objects
    assert str(runtime_namespace(objects)).startswith(rendered.dynamo_namespace)
    assert runtime_namespace([]) is None


def test_graph_record_status_reports_state_conditions_and_replicas() -> None:
    fe, worker = deployment("g-frontend", 1, 1), deployment("g-decode-abc", 2, 1)
    statuses = {"Frontend": component_status([fe]), "decode": component_status([worker])}
    status = graph_record_status(statuses, {"Frontend": fe, "decode": worker}, {"decode": "ns-g"}, 3)
    assert status["state"] == "pending" and status["observedGeneration"] == 3
    (ready,) = status["conditions"]
    assert ready["type"] == "Ready" and ready["status"] == "False" and "decode" in ready["message"]
    assert status["components"]["decode"] == {
        "componentKind": "Deployment",
        "componentNames": ["g-decode-abc"],
        "replicas": 2,
        "updatedReplicas": 2,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "runtimeNamespace": "ns-g",
    }
    assert "runtimeNamespace" not in status["components"]["Frontend"]
    # A workload not created yet has no replica entry; all ready is successful.
    done = {"Frontend": ComponentStatus(True, "DeploymentReady", "")}
    status = graph_record_status(done, {"Frontend": None})
    assert (
        status["state"] == "successful" and "components" not in status and "observedGeneration" not in status
    )
