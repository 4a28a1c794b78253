"""The graph's records in the cluster, through the real Pulumi CLI on the local control plane: the
stack's platform installs the DGD and DGDSA CRDs (v1beta1 only), the graph's provider writes its DGD
and its adapter's DGDSA with the status the operator would write, as `kubectl get dgd,dgdsa` and
Dynamo's planner read them (v1beta1; the DGDSA's scale subresource). A second `up` changes nothing,
refresh writes the status as it is now, `destroy` removes the records."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import stub
from dynamo_infra.reconcile.takeover import OPERATOR_FINALIZER
from tests.conftest import DATA
from tests.integration.harness import GraphStack, graph_stack
from tools.localcluster import LocalCluster

# Frontend, a worker with a scaling adapter (2 replicas) and a planner.
GRAPH = (DATA / "graphs" / "reconcile.yaml").read_text()
BETA = "nvidia.com/v1beta1"
# The operator's field manager.
OPERATOR = "manager"
SELECTOR = "nvidia.com/dynamo-component=Worker,nvidia.com/dynamo-graph-deployment-name=rec"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Iterator[GraphStack]:
    with graph_stack(tmp_path_factory, cluster, "rec", GRAPH) as r:
        r.up()
        yield r


def dgd(rig: GraphStack) -> Manifest | None:
    return rig.kube.get(stub(BETA, "DynamoGraphDeployment", rig.ns, "rec"))


def dgdsa(rig: GraphStack) -> Manifest | None:
    return rig.kube.get(stub(BETA, "DynamoGraphDeploymentScalingAdapter", rig.ns, "rec-worker"))


def scale_path(rig: GraphStack) -> str:
    info = rig.kube.resource(BETA, "DynamoGraphDeploymentScalingAdapter")
    return info.path(rig.ns, "rec-worker") + "/scale"


def test_the_dgd_is_recorded_with_live_status(rig: GraphStack) -> None:
    assert rig.outputs["graphs"].value["rec"]["recorded"] == ""
    live = dgd(rig)
    assert live is not None
    components = {c["name"]: c for c in live["spec"]["components"]}
    assert set(components) == {"Frontend", "Worker", "Planner"} and components["Worker"]["replicas"] == 2
    status = live["status"]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (status["state"], ready["status"]) == ("successful", "True"), status
    assert status["observedGeneration"] == live["metadata"]["generation"]
    worker = status["components"]["Worker"]
    assert worker["componentKind"] == "Deployment" and worker["componentNames"][0].startswith("rec-worker-")
    assert (worker["replicas"], worker["readyReplicas"], worker["availableReplicas"]) == (2, 2, 2)
    assert worker["runtimeNamespace"].startswith(rig.ns)
    # The same state as the stack's output.
    assert rig.outputs["graphs"].value["rec"]["state"] == "successful"
    # v1alpha1 is not served: a client of it gets a 404, never a truncated object.
    assert not rig.kube.serves("nvidia.com/v1alpha1", "DynamoGraphDeployment")


def test_the_adapter_is_recorded_and_scalable(rig: GraphStack) -> None:
    live = dgdsa(rig)
    assert live is not None
    assert live["spec"] == {"replicas": 2, "dgdRef": {"name": "rec", "componentName": "Worker"}}
    assert live["status"] == {"replicas": 2, "selector": SELECTOR}
    scale = rig.kube.request("GET", scale_path(rig))
    assert scale["spec"]["replicas"] == 2
    assert scale["status"] == {"replicas": 2, "selector": SELECTOR}


def test_a_second_up_changes_nothing(rig: GraphStack) -> None:
    preview = rig.stack.preview(diff=True, on_output=lambda _: None)
    assert set(preview.change_summary) == {"same"}, preview.stdout


def test_refresh_writes_the_status_as_it_is_now(rig: GraphStack) -> None:
    # The planner scales through the adapter's scale subresource.
    rig.kube.request(
        "PATCH", scale_path(rig), body={"spec": {"replicas": 3}}, params={"fieldManager": "planner"},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    rig.stack.refresh(on_output=lambda _: None)
    live = dgdsa(rig)
    assert live is not None and live["spec"]["replicas"] == 3 and live["status"]["replicas"] == 3
    # The next `up` keeps the planner's choice (carrying it to the workload is the agent's part).
    rig.up()
    live = dgdsa(rig)
    assert live is not None and live["spec"]["replicas"] == 3
    preview = rig.stack.preview(on_output=lambda _: None)
    assert set(preview.change_summary) == {"same"}


def test_the_operators_records_are_adopted(rig: GraphStack) -> None:
    """A DGD the operator reconciled and the DGDSA it made (owned by the DGD) are taken over in place."""
    before = dgd(rig)
    assert before is not None
    for obj in (dgdsa(rig), before):
        assert obj is not None and rig.kube.delete(obj)
        rig.kube.wait_deleted(obj, 60)
    # The user's DGD, as kubectl applies it; the operator's finalizer, status and adapter.
    users = {k: before[k] for k in ("apiVersion", "kind", "spec")}
    users["metadata"] = {"name": "rec", "namespace": rig.ns}
    rig.kube.apply(users, manager="kubectl")
    rig.kube.apply({**stub(BETA, "DynamoGraphDeployment", rig.ns, "rec"), "metadata": {
        "name": "rec", "namespace": rig.ns, "finalizers": [OPERATOR_FINALIZER]}}, manager=OPERATOR)  # fmt: skip
    theirs = rig.kube.get(stub(BETA, "DynamoGraphDeployment", rig.ns, "rec"))
    assert theirs is not None
    owner = {"apiVersion": BETA, "kind": "DynamoGraphDeployment", "name": "rec",
             "uid": theirs["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    adapter = {
        **stub(BETA, "DynamoGraphDeploymentScalingAdapter", rig.ns, "rec-worker"),
        "spec": {"replicas": 3, "dgdRef": {"name": "rec", "componentName": "Worker"}},
    }
    adapter["metadata"]["ownerReferences"] = [owner]
    rig.kube.apply(adapter, manager=OPERATOR)
    # `up --refresh` finds the records gone and creates them: over the operator's, which it adopts.
    rig.up(refresh=True)
    live, live_adapter = dgd(rig), dgdsa(rig)
    assert live is not None and live_adapter is not None
    assert live["metadata"]["uid"] == theirs["metadata"]["uid"] and not live["metadata"].get("finalizers")
    assert OPERATOR not in {m["manager"] for m in live["metadata"]["managedFields"]}
    assert not live_adapter["metadata"].get("ownerReferences")
    # The adapter's replicas are the planner's, and the DGD shows them.
    assert live_adapter["spec"]["replicas"] == 3 and live_adapter["status"]["replicas"] == 3
    assert {c["name"]: c.get("replicas") for c in live["spec"]["components"]}["Worker"] == 3
    assert live["status"]["state"] == "successful"
    taken = rig.outputs["graphs"].value["rec"]["takenOver"]["objects"]
    assert set(taken) >= {
        f"{BETA}/DynamoGraphDeployment/{rig.ns}/rec",
        f"{BETA}/DynamoGraphDeploymentScalingAdapter/{rig.ns}/rec-worker",
    }


def test_destroy_removes_the_records(rig: GraphStack) -> None:
    rig.stack.destroy(on_output=lambda _: None)
    assert dgd(rig) is None and dgdsa(rig) is None
