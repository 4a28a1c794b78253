"""A graph's destroy: its components' workloads send their deletes (background propagation) and return;
the graph's own workload (deleted after them) waits for the graph's pods that a workload controller runs
(and for pod owners an earlier version deleted in the foreground) to be gone."""

from __future__ import annotations

from typing import Any

import pytest

from dynamo_infra.kube.client import object_key
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.reconcile import base, workload_calls
from dynamo_infra.reconcile.inputs import WorkloadInputs
from dynamo_infra.reconcile.ownership import INVENTORY_ANNOTATION, INVENTORY_LABEL
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider
from dynamo_infra.reconcile.workload import POD_OWNERS, await_graph_deletions, delete_objects
from dynamo_infra.render.names import LABEL_GRAPH
from dynamo_infra.render.runtime import rbac


def dep(name: str, owner: str, deleting: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "labels": {INVENTORY_LABEL: "x"},
        "annotations": {INVENTORY_ANNOTATION: owner},
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-11-27T00:00:00Z"
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta}


def pod(name: str, graph: str, controller: str) -> dict[str, Any]:
    owner = {"kind": controller, "name": f"{name}-owner", "controller": True}
    meta = {"name": name, "namespace": "ns", "labels": {LABEL_GRAPH: graph}, "ownerReferences": [owner]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


class Cluster:
    """Serves Deployments and pods; records deletes (with their propagation), lists and waits in order.
    Pods are gone after `pod_lists` lists of them."""

    def __init__(self, live: list[dict[str, Any]], gone: bool = True, pod_lists: int = 1) -> None:
        self.live, self.gone, self.pod_lists = live, gone, pod_lists
        self.calls: list[tuple[str, str]] = []
        self.propagation: dict[str, str] = {}

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def serves(self, api_version: str, kind: str) -> bool:
        return (api_version, kind) == ("apps/v1", "Deployment")

    def resource(self, api_version: str, kind: str) -> Any:
        return type("Info", (), {"namespaced": True})()

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: str = ""
    ) -> Any:
        if kind == "Pod":
            self.calls.append(("list", "pods"))
            self.pod_lists -= 1
            key, _, value = label_selector.partition("=")
            pods = [o for o in self.live if o["kind"] == kind and o["metadata"]["labels"].get(key) == value]
            return pods if self.pod_lists >= 0 else []
        # The graph's wait selects every object we label; a sweep selects one resource's inventory id.
        self.calls.append(("list", "graph" if label_selector == INVENTORY_LABEL else "sweep"))
        return [o for o in self.live if o["kind"] == kind]

    def delete(self, obj: dict[str, Any], propagation: str = "Foreground") -> bool:
        self.calls.append(("delete", obj["metadata"]["name"]))
        self.propagation[obj["metadata"]["name"]] = propagation
        return True

    def wait_deleted(self, obj: dict[str, Any], timeout: float) -> bool:
        self.calls.append(("wait", obj["metadata"]["name"]))
        return self.gone


def test_deletes_without_waiting_when_someone_else_waits() -> None:
    cluster = Cluster([])
    keys = ["v1/Service/ns/s", "apps/v1/Deployment/ns/d"]
    delete_objects(cluster, keys, {}, lambda _: None, wait=False)  # type: ignore[arg-type]
    assert cluster.calls == [("delete", "d"), ("delete", "s")]
    # The API server removes them at once; the garbage collector deletes their pods after.
    assert cluster.propagation == {"d": "Background", "s": "Background"}
    waiting = Cluster([])
    delete_objects(waiting, keys, {}, lambda _: None)  # type: ignore[arg-type]
    assert waiting.propagation == {"d": "Foreground", "s": "Foreground"}


def test_the_graph_waits_for_its_objects_being_deleted_only() -> None:
    cluster = Cluster(
        [
            dep("mine-going", "ns/g/worker", deleting=True),
            dep("mine-staying", "ns/g/frontend", deleting=False),
            dep("other-graph-going", "ns/g2/worker", deleting=True),
        ]
    )
    lines: list[str] = []
    waited = await_graph_deletions(cluster, "ns", "g", lines.append)  # type: ignore[arg-type]
    assert waited == ["apps/v1/Deployment/ns/mine-going"]
    assert ("list", "graph") in cluster.calls
    assert [c for c in cluster.calls if c[0] == "wait"] == [("wait", "mine-going")]
    assert lines == ["waiting for 1 object(s) of ns/g to be gone"]
    with pytest.raises(KubeError, match="apps/v1/Deployment/ns/mine-going still exists"):
        await_graph_deletions(Cluster(cluster.live, gone=False), "ns", "g", lines.append)  # type: ignore[arg-type]


def test_the_graph_waits_for_its_pods_that_a_workload_controller_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(base.time, "sleep", slept.append)
    pods = [
        pod("worker-0", "g", "ReplicaSet"),
        pod("leader-0", "g", "StatefulSet"),
        pod("prefill-0", "g", "PodClique"),
        pod("capture-0", "g", "Job"),  # a checkpoint capture's pod: stays after its Job completes
        pod("other-0", "g2", "ReplicaSet"),
    ]
    cluster = Cluster(pods, pod_lists=2)
    lines: list[str] = []
    waited = await_graph_deletions(cluster, "ns", "g", lines.append)  # type: ignore[arg-type]
    assert waited == ["v1/Pod/ns/worker-0", "v1/Pod/ns/leader-0", "v1/Pod/ns/prefill-0"]
    assert lines == ["waiting for 3 pod(s) of ns/g to be gone"]
    assert [c for c in cluster.calls if c == ("list", "pods")] == [("list", "pods")] * 3 and len(slept) == 2
    with pytest.raises(KubeError, match=r"3 pod\(s\) of ns/g still exist"):
        monkeypatch.setattr("dynamo_infra.reconcile.workload.DELETE_TIMEOUT_S", 0.0)
        await_graph_deletions(Cluster(pods, pod_lists=10**6), "ns", "g", lines.append)  # type: ignore[arg-type]


def inputs(component: str, awaited: bool) -> WorkloadInputs:
    obj = dep(component or "shared", f"ns/g/{component}", deleting=False)
    return WorkloadInputs(
        namespace="ns",
        graph="g",
        component=component,
        objects={object_key(obj): obj},
        graph_awaits_deletion=awaited,
    )


@pytest.mark.parametrize(
    ("component", "awaited", "expected"),
    [
        # A component of a graph with shared objects: deletes and returns.
        ("worker", True, [("delete", "worker"), ("list", "sweep")]),
        # A component written before the flag (or of a graph without shared objects): waits itself.
        ("worker", False, [("delete", "worker"), ("wait", "worker"), ("list", "sweep")]),
        # The graph's own workload: waits for its components' objects first, then deletes its own.
        (
            "",
            False,
            [
                ("list", "graph"),
                ("list", "pods"),
                ("delete", "shared"),
                ("wait", "shared"),
                ("list", "sweep"),
            ],
        ),
    ],
)
def test_a_workload_delete_waits_as_its_graph_says(
    monkeypatch: pytest.MonkeyPatch, component: str, awaited: bool, expected: list[tuple[str, str]]
) -> None:
    cluster = Cluster([])
    monkeypatch.setattr(WorkloadInputs, "client", lambda self: cluster)
    ins = inputs(component, awaited)
    workload_calls.delete(ins, ins.to_props())
    got = [(op, what.split(INVENTORY_LABEL)[0]) if op == "list" else (op, what) for op, what in cluster.calls]
    assert got == [
        (op, what.split(INVENTORY_LABEL)[0]) if op == "list" else (op, what) for op, what in expected
    ]


def test_the_flag_is_not_diffed_so_existing_workloads_update_nothing() -> None:
    p = ComponentWorkloadProvider()
    olds = inputs("worker", False).to_props()
    news = inputs("worker", True).to_props()
    assert "graphAwaitsDeletion" not in p.inputs.diffed()
    assert p.diff("id", olds, news).changes is False
    assert p.typed(news).graph_awaits_deletion is True and p.typed({}).graph_awaits_deletion is False


def test_the_graph_identity_may_list_what_the_graph_waits_for() -> None:
    """The least-privilege Role (`dynamo-infra rbac`) grants the lists the wait makes."""
    for api_version, kind in POD_OWNERS:
        group = api_version.rpartition("/")[0]
        assert rbac.covers(group, f"{kind.lower()}s", "list"), kind
    assert rbac.covers("", "pods", "list")
