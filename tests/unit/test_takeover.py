"""Taking over what the Dynamo operator left for the same graph; refusing the rest (decision 3)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import object_key
from dynamo_infra.kube.errors import Conflict, KubeError
from dynamo_infra.reconcile import base
from dynamo_infra.reconcile.ownership import INVENTORY_LABEL, ForeignObject
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider
from dynamo_infra.reconcile.pvc_provider import PersistentVolumeClaimProvider
from dynamo_infra.reconcile.takeover import (
    DCD_KIND,
    DGD_KIND,
    DYNAMO_API_VERSIONS,
    OPERATOR_FINALIZER,
    OperatorGraph,
    TakeOver,
    TakeOverFailed,
    finalizer_operations,
    merged_take_overs,
    pod_template_changes,
    release_operations,
)

NS, GRAPH = "n", "g"
OPERATOR = {"manager": "manager", "operation": "Update"}
OURS = {"manager": "dynamo-infra", "operation": "Apply"}


def ref(kind: str, name: str, uid: str) -> Manifest:
    return {"apiVersion": "nvidia.com/v1beta1", "kind": kind, "name": name, "uid": uid, "controller": True}


def dynamo(kind: str, name: str, uid: str, owners: list[Manifest] | None = None) -> Manifest:
    """A DGD or DCD as the operator left it (its finalizer on)."""
    meta: Manifest = {"name": name, "namespace": NS, "uid": uid, "resourceVersion": "1",
                      "finalizers": [OPERATOR_FINALIZER], "labels": {"nvidia.com/dynamo-graph-deployment-name": GRAPH},
                      "managedFields": [OPERATOR]}  # fmt: skip
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": DYNAMO_API_VERSIONS[0], "kind": kind, "metadata": meta}


def left(obj: Manifest, owner: Manifest, managers: list[Manifest] | None = None) -> Manifest:
    """`obj` as the operator made it: owned by `owner`, with its bookkeeping annotations."""
    out = copy.deepcopy(obj)
    out["metadata"].update(
        uid=f"uid-{obj['metadata']['name']}",
        resourceVersion="7",
        ownerReferences=[owner],
        annotations={"nvidia.com/last-applied-hash": "h", "nvidia.com/last-applied-generation": "1"},
        managedFields=[OPERATOR] if managers is None else managers,
    )
    return out


DGD = dynamo(DGD_KIND, GRAPH, "dgd-uid")
DCD = dynamo(DCD_KIND, "g-frontend", "dcd-uid", [ref(DGD_KIND, GRAPH, "dgd-uid")])
SVC = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "g-frontend", "namespace": NS}}
DEP = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "g-frontend", "namespace": NS},
       "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "main", "image": "i"}]}}}}  # fmt: skip


class Cluster:
    """A fake API server: objects by key; Dynamo kinds readable only in `readable` versions; records
    writes as (verb, key)."""

    def __init__(self, *objects: Manifest, readable: tuple[str, ...] = DYNAMO_API_VERSIONS) -> None:
        self.objects = {self._key(o): copy.deepcopy(o) for o in objects}
        self.readable = readable
        self.writes: list[tuple[str, str]] = []
        self.conflicts = 0
        # The operator's admission webhooks are registered but nothing answers them.
        self.webhook_down = False
        # Kinds whose CRD is installed (discovery lists them, whether or not conversion works).
        self.served = {DGD_KIND, DCD_KIND}

    @staticmethod
    def _key(obj: Manifest) -> str:
        kind, meta = obj["kind"], obj["metadata"]
        group = "nvidia.com" if kind in (DGD_KIND, DCD_KIND) else obj["apiVersion"]
        return f"{group}/{kind}/{meta.get('namespace', '')}/{meta['name']}"

    def _find(self, obj: Manifest) -> Manifest | None:
        if obj["kind"] in (DGD_KIND, DCD_KIND) and obj["apiVersion"] not in self.readable:
            raise KubeError("conversion webhook failed", 500)
        return self.objects.get(self._key(obj))

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def get(self, obj: Manifest) -> Manifest | None:
        return copy.deepcopy(self._find(obj))

    def get_metadata(self, obj: Manifest) -> Manifest | None:
        found = self._find(obj)
        return (
            {"kind": "PartialObjectMetadata", "metadata": copy.deepcopy(found["metadata"])} if found else None
        )

    def list(self, api_version: str, kind: str, namespace: str | None = None, **_: Any) -> list[Manifest]:
        self._find({"apiVersion": api_version, "kind": kind, "metadata": {"name": ""}})
        return [copy.deepcopy(o) for o in self.objects.values() if o["kind"] == kind]

    def apply(self, obj: Manifest, **_: Any) -> Manifest:
        key = self._key(obj)
        self.writes.append(("apply", key))
        live = self.objects.setdefault(key, {"metadata": {"resourceVersion": "1", "managedFields": []}})
        meta = {**live["metadata"], **obj["metadata"]}
        meta["managedFields"] = [*live["metadata"].get("managedFields", []), OURS]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        self.objects[key] = {**live, **obj, "metadata": meta}
        return copy.deepcopy(self.objects[key])

    def patch(self, obj: Manifest, operations: list[Manifest], **_: Any) -> Manifest:
        key = self._key(obj)
        live = self.objects[key]
        if self.webhook_down and obj["kind"] in (DGD_KIND, DCD_KIND):
            raise KubeError(
                'Internal error occurred: failed calling webhook "vdynamographdeployment.kb.io"', 500
            )
        self.writes.append(("patch", key))
        if self.conflicts:
            self.conflicts -= 1
            live["metadata"]["resourceVersion"] = str(int(live["metadata"]["resourceVersion"]) + 1)
            raise Conflict("the object has been modified", 409)
        for op in operations:
            parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
            parent = live
            for p in parts[:-1]:
                parent = parent[p]
            if op["op"] == "remove":
                del parent[parts[-1]]
            elif parts[-1] == "resourceVersion" and parent[parts[-1]] != op["value"]:
                raise Conflict("the object has been modified", 409)
            else:
                parent[parts[-1]] = op["value"]
        return copy.deepcopy(live)

    def serves(self, api_version: str, kind: str) -> bool:
        return kind in self.served


def test_release_drops_the_operators_owner_annotations_and_field_manager_only() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "other"}
    meta = left(SVC, ref(DCD_KIND, "g-frontend", "dcd-uid"), [OPERATOR, OURS])["metadata"]
    meta["ownerReferences"].append(other)
    meta["annotations"]["keep"] = "me"
    assert release_operations(meta, {"dcd-uid"}) == [
        {"op": "replace", "path": "/metadata/ownerReferences", "value": [other]},
        {"op": "remove", "path": "/metadata/annotations/nvidia.com~1last-applied-hash"},
        {"op": "remove", "path": "/metadata/annotations/nvidia.com~1last-applied-generation"},
        {"op": "replace", "path": "/metadata/managedFields", "value": [OURS]},
    ]
    assert release_operations({"managedFields": [OURS]}, {"dcd-uid"}) == []


def test_finalizer_operations_keep_other_finalizers() -> None:
    assert finalizer_operations({"finalizers": ["a", OPERATOR_FINALIZER]}) == [
        {"op": "replace", "path": "/metadata/finalizers", "value": ["a"]}
    ]
    assert finalizer_operations({"finalizers": ["a"]}) == []


def test_pod_template_changes_are_the_templates_only() -> None:
    scaled = {**DEP, "spec": {**DEP["spec"], "replicas": 3, "revisionHistoryLimit": 2}}
    assert pod_template_changes(DEP, scaled) == []
    changed = copy.deepcopy(DEP)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "j"
    assert pod_template_changes(DEP, changed) == ["spec.template.spec.containers[0].image"]


@pytest.mark.parametrize(
    ("owner", "managers", "cluster", "why"),
    [
        (ref(DCD_KIND, "g-frontend", "dcd-uid"), None, (DGD, DCD), None),
        (ref(DGD_KIND, GRAPH, "dgd-uid"), None, (DGD,), None),
        (ref(DGD_KIND, "h", "h-uid"), None, (DGD,), "of graph h, not g"),
        (ref(DCD_KIND, "g-frontend", "dcd-uid"), [{"manager": "kubectl"}], (DGD, DCD), "never written by the operator"),
        (ref(DCD_KIND, "g-frontend", "dcd-uid"), None, (DGD,), "DynamoComponentDeployment g-frontend no longer exists"),
        (ref(DGD_KIND, GRAPH, "old-uid"), None, (DGD,), "of an earlier DynamoGraphDeployment g"),
        (ref(DGD_KIND, GRAPH, "dgd-uid"), None, (), "DynamoGraphDeployment g no longer exists"),
        (
            ref(DCD_KIND, "g-frontend", "dcd-uid"),
            None,
            (DGD, dynamo(DCD_KIND, "g-frontend", "dcd-uid", [ref(DGD_KIND, "h", "h-uid")])),
            "of graph h, not g",
        ),
    ],
    ids=["dcd", "dgd", "other-graph", "other-manager", "dcd-gone", "earlier-dgd", "dgd-gone", "dcd-of-other-graph"],
)  # fmt: skip
def test_only_the_operators_objects_of_the_same_graph_are_taken_over(
    owner: Manifest, managers: list[Manifest] | None, cluster: tuple[Manifest, ...], why: str | None
) -> None:
    operator = OperatorGraph(Cluster(*cluster), NS, GRAPH)  # type: ignore[arg-type]
    refusal = operator.refusal(left(SVC, owner, managers)["metadata"])
    if why is None:
        assert refusal is None and owner["uid"] in operator.owners
    else:
        assert refusal is not None and why in refusal and operator.owners.isdisjoint({owner["uid"]})


def test_the_dgd_and_dcds_are_read_in_the_version_the_server_can_serve() -> None:
    readable = (DYNAMO_API_VERSIONS[1],)
    fake = Cluster(DGD, DCD, readable=readable)
    operator = OperatorGraph(fake, NS, GRAPH)  # type: ignore[arg-type]
    assert operator.refusal(left(SVC, ref(DCD_KIND, "g-frontend", "dcd-uid"))["metadata"]) is None
    assert operator.remove_finalizers() == [f"{DCD_KIND} g-frontend", f"{DGD_KIND} {GRAPH}"]
    assert all(not o["metadata"]["finalizers"] for o in fake.objects.values())


def test_a_conditional_write_is_retried_when_the_object_changed() -> None:
    fake = Cluster(DGD)
    fake.conflicts = 1
    assert OperatorGraph(fake, NS, GRAPH).remove_finalizers() == [f"{DGD_KIND} {GRAPH}"]  # type: ignore[arg-type]
    assert fake.writes == [("patch", "nvidia.com/DynamoGraphDeployment/n/g")] * 2
    assert fake.objects["nvidia.com/DynamoGraphDeployment/n/g"]["metadata"]["finalizers"] == []


def props(*objects: Manifest) -> dict[str, Any]:
    return {"kubeconfig": "k", "namespace": NS, "graph": GRAPH, "component": "Frontend",
            "objects": {object_key(o): o for o in objects}, "await": {"mode": "skip"}}  # fmt: skip


def test_create_takes_over_the_operators_objects_and_reports_them(monkeypatch: pytest.MonkeyPatch) -> None:
    owner = ref(DCD_KIND, "g-frontend", "dcd-uid")
    fake = Cluster(DGD, DCD, left(SVC, owner), left(DEP, owner))
    monkeypatch.setattr(base.Inputs, "client", lambda self: fake)
    lines: list[str] = []
    monkeypatch.setattr("dynamo_infra.reconcile.workload_calls.log", lines.append)
    outs = ComponentWorkloadProvider().create(props(SVC, DEP)).outs or {}
    for key in ("v1/Service/n/g-frontend", "apps/v1/Deployment/n/g-frontend"):
        meta = fake.objects[key]["metadata"]
        assert "ownerReferences" not in meta and meta["managedFields"] == [OURS], key
        assert set(meta["annotations"]) == {"dynamo-infra.io/owner"} and INVENTORY_LABEL in meta["labels"]
    assert [
        o["metadata"]["finalizers"] for o in (fake.objects[k] for k in fake.objects if "nvidia" in k)
    ] == [[], []]
    assert outs["takenOver"] == {
        "objects": {
            "apps/v1/Deployment/n/g-frontend": f"{DCD_KIND} g-frontend",
            "v1/Service/n/g-frontend": f"{DCD_KIND} g-frontend",
        },
        "finalizersRemoved": [f"{DCD_KIND} g-frontend", f"{DGD_KIND} {GRAPH}"],
        "podsReplaced": {},
    }
    text = "\n".join(lines)
    assert (
        "n/g/Frontend: took over Deployment g-frontend, Service g-frontend from the Dynamo operator" in text
    )
    assert "the operator's pods keep running" in text


def test_a_stopped_operators_webhook_fails_the_take_over_until_its_configurations_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner = ref(DCD_KIND, "g-frontend", "dcd-uid")
    fake = Cluster(DGD, DCD, left(SVC, owner))
    fake.webhook_down = True
    monkeypatch.setattr(base.Inputs, "client", lambda self: fake)
    with pytest.raises(TakeOverFailed, match="uninstall its Helm release"):
        ComponentWorkloadProvider().create(props(SVC))
    assert fake.objects["v1/Service/n/g-frontend"]["metadata"]["ownerReferences"] == [owner], "not released"
    fake.webhook_down = False
    outs = ComponentWorkloadProvider().create(props(SVC)).outs or {}
    assert outs["takenOver"]["objects"] == {"v1/Service/n/g-frontend": f"{DCD_KIND} g-frontend"}
    assert "ownerReferences" not in fake.objects["v1/Service/n/g-frontend"]["metadata"]


def test_create_refuses_another_graphs_objects_before_writing(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = Cluster(DGD, left(SVC, ref(DGD_KIND, "h", "h-uid")))
    monkeypatch.setattr(base.Inputs, "client", lambda self: fake)
    with pytest.raises(ForeignObject, match=r"v1/Service/n/g-frontend belongs to the Dynamo operator \(Dynamo"
                       r"GraphDeployment h\), of graph h, not g"):  # fmt: skip
        ComponentWorkloadProvider().create(props(SVC))
    assert fake.writes == []


def test_an_update_keeps_what_was_taken_over_in_its_output(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = Cluster()
    monkeypatch.setattr(base.Inputs, "client", lambda self: fake)
    taken = TakeOver({"v1/Service/n/g-frontend": f"{DCD_KIND} g-frontend"}, [f"{DGD_KIND} g"]).to_dict()
    olds = {**props(SVC), "inventory": ["v1/Service/n/g-frontend"], "takenOver": taken}
    assert ComponentWorkloadProvider().update("id", olds, props(SVC)).outs["takenOver"] == taken


CLAIM = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "cache", "namespace": NS}}


@pytest.mark.parametrize(("graph", "freed"), [(GRAPH, True), ("h", False)])
def test_a_claim_the_operator_made_for_the_graph_is_freed_from_its_dgd_and_kept_as_it_is(
    monkeypatch: pytest.MonkeyPatch, graph: str, freed: bool
) -> None:
    made = left(CLAIM, ref(DGD_KIND, GRAPH, "dgd-uid"))
    fake = Cluster(DGD, made)
    monkeypatch.setattr(base.Inputs, "client", lambda self: fake)
    claim = {"kubeconfig": "k", "namespace": NS, "name": "cache", "graph": graph, "manifest": CLAIM,
             "create": True, "await": {"mode": "skip"}}  # fmt: skip
    outs = PersistentVolumeClaimProvider().create(claim).outs or {}
    live = fake.objects["v1/PersistentVolumeClaim/n/cache"]
    assert outs["adopted"] is True and ("apply", "v1/PersistentVolumeClaim/n/cache") not in fake.writes
    assert {k: v for k, v in live["metadata"].items() if k not in ("ownerReferences", "resourceVersion")} == {
        k: v for k, v in made["metadata"].items() if k not in ("ownerReferences", "resourceVersion")
    }
    if freed:
        assert "ownerReferences" not in live["metadata"]
        assert outs["takenOver"]["objects"] == {"v1/PersistentVolumeClaim/n/cache": f"{DGD_KIND} {GRAPH}"}
    else:
        assert (
            live["metadata"]["ownerReferences"] == made["metadata"]["ownerReferences"] and fake.writes == []
        )
        assert outs["takenOver"] == {}


def test_take_overs_merge_across_components() -> None:
    a = TakeOver({"k1": "DCD a"}, ["DCD a", "DGD g"]).to_dict()
    b = TakeOver({"k2": "DCD b"}, ["DGD g"], {"k2": ["spec.template"]}).to_dict()
    assert merged_take_overs([a, None, {}, b]) == {
        "objects": {"k1": "DCD a", "k2": "DCD b"},
        "finalizersRemoved": ["DCD a", "DGD g"],
        "podsReplaced": {"k2": ["spec.template"]},
    }
    assert merged_take_overs([None, {}]) == {}


def test_without_the_dcd_crd_only_the_dgd_finalizer_is_removed() -> None:
    fake = Cluster(DGD)
    fake.served = {DGD_KIND}
    assert OperatorGraph(fake, NS, GRAPH).remove_finalizers() == [f"{DGD_KIND} {GRAPH}"]  # type: ignore[arg-type]
