"""The graph's records (DGD and DGDSAs in the hub version) and their status, as Dynamo's planner reads them."""

from __future__ import annotations

from typing import Any

from dynamo_infra.api import v1alpha1
from dynamo_infra.api.loader import to_hub
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph
from dynamo_infra.render.runtime.records import (
    adapter_record,
    adapter_status,
    graph_record,
    graph_record_status,
    runtime_namespace,
)
from dynamo_infra.render.runtime.status import ComponentStatus, component_status

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
    # The worker's Dynamo namespace, from its pod template: with its worker hash, as its runtime
    # registers it; the frontend's without.
    worker_hash = next(
        o["spec"]["template"]["metadata"]["labels"]["nvidia.com/dynamo-worker-hash"]
        for o in rendered.components["decode"].objects
        if o["kind"] == "Deployment"
    )
    objects = rendered.components["decode"].objects
    assert runtime_namespace(objects) == f"{rendered.dynamo_namespace}-{worker_hash}"
    assert runtime_namespace(rendered.components["Frontend"].objects) == rendered.dynamo_namespace
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


def test_records_props_watch_each_components_workload() -> None:
    from dynamo_infra.components.records import records_props

    dgd = v1alpha1.DynamoGraphDeployment.parse(GRAPH)
    rendered = render_graph(dgd, ClusterOptions(), "ns")
    props = records_props(dgd, rendered)
    assert props["dgd"]["apiVersion"] == "nvidia.com/v1beta1" and props["graph"] == "g"
    assert list(props["adapters"]) == ["decode"]
    decode = props["components"]["decode"]
    deployment = next(o for o in rendered.components["decode"].objects if o["kind"] == "Deployment")
    assert decode["workload"] == f"apps/v1/Deployment/ns/{deployment['metadata']['name']}"
    assert decode["workload"] in decode["watch"] and len(decode["watch"]) == len(
        rendered.components["decode"].objects
    )
    assert decode["runtimeNamespace"].startswith(rendered.dynamo_namespace)


def test_the_operators_dgd_is_adopted_with_its_ties_dropped() -> None:
    from dynamo_infra.reconcile.records_calls import adoption_operations, operator_dgd, storage_version

    user = {"manager": "kubectl-client-side-apply", "operation": "Update"}
    operator = {"manager": "manager", "operation": "Update", "subresource": "status"}
    meta = {
        "finalizers": ["nvidia.com/finalizer"],
        "annotations": {"nvidia.com/last-applied-generation": "3", "team": "a"},
        "managedFields": [user, operator, {"manager": "dynamo-infra", "operation": "Apply"}],
    }
    assert operator_dgd(meta)
    assert operator_dgd({"managedFields": [operator]}) and not operator_dgd({"managedFields": [user]})
    ops = adoption_operations(meta, ())
    assert {"op": "replace", "path": "/metadata/finalizers", "value": []} in ops
    assert {"op": "remove", "path": "/metadata/annotations/nvidia.com~1last-applied-generation"} in ops
    fields = next(o for o in ops if o["path"] == "/metadata/managedFields")
    assert [m["manager"] for m in fields["value"]] == ["kubectl-client-side-apply", "dynamo-infra"]
    crd = {
        "spec": {"versions": [{"name": "v1alpha1", "storage": False}, {"name": "v1beta1", "storage": True}]}
    }
    assert storage_version(crd) == "v1beta1" and storage_version({}) == ""


def test_condition_times_change_only_with_the_conditions_status() -> None:
    ready = {"Frontend": ComponentStatus(True, "DeploymentReady", "")}
    first = graph_record_status(ready, {}, now="2026-01-01T00:00:00Z")
    assert first["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    same = graph_record_status(ready, {}, previous=first, now="2026-01-02T00:00:00Z")
    assert same == first
    not_ready = {"Frontend": ComponentStatus(False, "DeploymentNotReady", "")}
    flipped = graph_record_status(not_ready, {}, previous=first, now="2026-01-02T00:00:00Z")
    assert flipped["conditions"][0]["lastTransitionTime"] == "2026-01-02T00:00:00Z"
