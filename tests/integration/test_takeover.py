"""Moving a graph from the Dynamo operator (docs/how-to/take-over.md), through the
real Pulumi CLI on the local control plane.

The cluster is set up as the operator leaves a graph once it is gone: the DGD and DCD CRDs as its
chart installs them (conversion through the operator's webhook, which nothing serves any more), the
user's DynamoGraphDeployment with the operator's finalizer, and every object the operator made for
it (`tests/data/corpus/operator-rendered/single/v1alpha1__vllm__agg.yaml`) written under the
operator's field manager with the ownerReferences it sets (DGD -> DCDs and discovery RBAC, DCD -> its
Deployment and Service; real uids), the annotations its change detection writes and the operator's
finalizer on each DCD. kwok runs the pods. Then `pulumi up` of the same graph must:

- take over every object it renders, with no pod restarted and no ReplicaSet replaced;
- leave none of them tied to the operator (no ownerReference to its DGD or DCDs, none of its
  managedFields entries or annotations) and remove its finalizer from the DCDs and the DGD;
- say what it took over (the graph's `takenOver` output and a progress line).

A second `up` changes nothing; deleting the DGD (once the garbage collector can read the Dynamo
kinds) deletes its DCDs but nothing we took over; `destroy` then leaves nothing behind.

Zero restarts needs our rendering to equal the operator's for the graph (names, worker hash and
every field of the pod templates): the parity work makes it so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi import automation as auto

from dynamo_infra.api import v1alpha1, v1beta1
from dynamo_infra.api.conversion import convert_to
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.platform_plan import crd_stub, without_descriptions
from dynamo_infra.kube.client import KubeClient, object_key, stub
from dynamo_infra.reconcile.ownership import INVENTORY_LABEL
from dynamo_infra.reconcile.takeover import (
    DCD_KIND,
    DGD_KIND,
    OPERATOR_ANNOTATIONS,
    OPERATOR_FIELD_MANAGERS,
    OPERATOR_FINALIZER,
)
from dynamo_infra.render.runtime.status import deployment_readiness
from tests.conftest import CORPUS
from tests.integration.harness import copy_project, destroy, kube_client, make_stack, namespace_object, up
from tests.wait import wait_until
from tools.localcluster import LocalCluster

GRAPH = CORPUS / "graphs" / "v1alpha1" / "vllm__agg.yaml"
LEFT = CORPUS / "operator-rendered" / "single" / "v1alpha1__vllm__agg.yaml"
CRDS = CORPUS / "crds" / "dynamo"
CRD_FILES = ("nvidia.com_dynamographdeployments.yaml", "nvidia.com_dynamocomponentdeployments.yaml")
# The cluster options the operator's objects were made with (the corpus README's `single` pass).
# The webhook was not running then (the corpus README), and it would deny this graph now: its images
# carry no semantic-version tag and it sets no runtimeVersionOverride.
OPTIONS: dict[str, Any] = {"dra": {"enabled": True}, "admission": {"enabled": False}}
# Field managers: the operator's (its image runs /manager), its chart's CRD installer, the user's.
OPERATOR = OPERATOR_FIELD_MANAGERS[0]
CRD_INSTALLER = "dynamo-crd-apply"
USER = "kubectl-create"
# The API version the operator writes its kinds and ownerReferences in.
OPERATOR_VERSION = v1beta1.API_VERSION
# The version 1.4.0's CRDs store (the only one readable without the operator's webhook).
STORED_VERSION = v1alpha1.API_VERSION
# How long the kwok pods, and the garbage collector, may take.
SETTLE_S = 90
# How long the garbage collector may take to collect the DCDs: it reads the DGD only after it has seen
# the CRDs' new conversion, and it backs off from the owners it failed to read before.
COLLECT_S = 300
# How often they are looked at.
POLL_S = 1.0


def docs(path: Path) -> list[Manifest]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def wait_for(what: str, done: Any) -> None:
    wait_until(done, SETTLE_S, POLL_S, what=what)


def crd_as_the_chart_installs_it(doc: Manifest, conversion: Manifest | None = None) -> Manifest:
    """The CRD with its conversion webhook (descriptions dropped, as etcd takes no object this size)."""
    spec = dict(doc["spec"])
    spec["versions"] = [
        {**v, "schema": {"openAPIV3Schema": without_descriptions(v["schema"]["openAPIV3Schema"])}}
        for v in spec["versions"]
    ]
    if conversion is not None:
        spec["conversion"] = conversion
    return {
        "apiVersion": doc["apiVersion"],
        "kind": doc["kind"],
        "metadata": {"name": doc["metadata"]["name"]},
        "spec": spec,
    }


def owner_reference(obj: Manifest) -> Manifest:
    """The controller reference the operator sets to one of its objects."""
    return {
        "apiVersion": OPERATOR_VERSION,
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def create(kube: KubeClient, obj: Manifest, manager: str = OPERATOR) -> Manifest:
    """POST, as a controller creates (an Update entry of `manager` in managedFields)."""
    meta = obj["metadata"]
    path = kube.resource(obj["apiVersion"], obj["kind"]).path(meta.get("namespace"))
    return kube.request("POST", path, body=obj, params={"fieldManager": manager})


def synced(obj: Manifest, owner: Manifest) -> Manifest:
    """The object as the operator's SyncResource creates it: owned by `owner`, with its bookkeeping."""
    meta = dict(obj["metadata"])
    digest = hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
    hash_key, generation_key = OPERATOR_ANNOTATIONS
    meta["annotations"] = {**(meta.get("annotations") or {}), hash_key: digest, generation_key: "1"}
    meta["ownerReferences"] = [owner_reference(owner)]
    return {**obj, "metadata": meta}


def stored_dcd(dcd: Manifest) -> Manifest:
    """A DCD as the API server stores what the operator wrote (its webhook converted it)."""
    return convert_to(
        v1beta1.DynamoComponentDeployment.parse(dcd), v1alpha1.DynamoComponentDeployment
    ).to_manifest()


class Left:
    """The graph as the operator left it: its objects by key, which the operator owned through which
    DGD/DCD, and the pods and ReplicaSets running then."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube
        objects = docs(LEFT)
        self.namespace = str(objects[0]["metadata"]["namespace"])
        (graph,) = [d for d in docs(GRAPH) if d["kind"] == DGD_KIND]
        self.graph = str(graph["metadata"]["name"])
        graph["metadata"] = {**graph["metadata"], "namespace": self.namespace}
        self.dgd = create(kube, graph, USER)
        # The operator's first reconcile adds its finalizer.
        finalizer = {"op": "add", "path": "/metadata/finalizers", "value": [OPERATOR_FINALIZER]}
        kube.patch(self.dgd, [finalizer], manager=OPERATOR)
        self.dcds = {
            d["metadata"]["name"]: create(kube, synced(stored_dcd(d), self.dgd))
            for d in objects
            if d["kind"] == DCD_KIND
        }
        # Key -> `Kind name` of the DGD or DCD that owned it.
        self.owned: dict[str, str] = {}
        for obj in objects:
            if obj["kind"] == DCD_KIND:
                continue
            name = str(obj["metadata"]["name"])
            if name in self.dcds:  # a component's Deployment and Service: its DCD's
                owner = self.dcds[name]
            elif name.startswith(f"{self.graph}-k8s-service-discovery"):  # the discovery RBAC: the DGD's
                owner = self.dgd
            else:
                create(kube, obj)  # the operator's per-namespace objects (the planner's account): no owner
                continue
            create(kube, synced(obj, owner))
            self.owned[object_key(obj)] = f"{owner['kind']} {owner['metadata']['name']}"
        wait_for("the operator's Deployments are available", self.available)
        self.pods = self.pod_uids()
        self.replica_sets = self.replica_set_uids()
        self.templates = {d["metadata"]["name"]: d["spec"]["template"] for d in self.deployments()}

    def deployments(self) -> list[Manifest]:
        return self.kube.list("apps/v1", "Deployment", self.namespace)

    def available(self) -> bool:
        deployments = self.deployments()
        return bool(deployments) and all(deployment_readiness(d).ready for d in deployments)

    def pod_uids(self) -> dict[str, str]:
        return {
            p["metadata"]["name"]: p["metadata"]["uid"] for p in self.kube.list("v1", "Pod", self.namespace)
        }

    def replica_set_uids(self) -> dict[str, str]:
        replica_sets = self.kube.list("apps/v1", "ReplicaSet", self.namespace)
        return {r["metadata"]["name"]: r["metadata"]["uid"] for r in replica_sets}

    def dynamo(self, kind: str, name: str) -> Manifest | None:
        """A DGD or DCD, read in the version the API server stores."""
        return self.kube.get(stub(STORED_VERSION, kind, self.namespace, name))


@pytest.fixture(scope="module")
def client(cluster: LocalCluster) -> Iterator[KubeClient]:
    with kube_client(cluster) as kube:
        yield kube


@pytest.fixture(scope="module")
def crds(cluster: LocalCluster, client: KubeClient) -> Iterator[list[Manifest]]:
    """The DGD and DCD CRDs as the operator's chart installed them; removed at the end (with every
    object of their kinds) so that later tests find the cluster without them."""
    installed = [crd_as_the_chart_installs_it(docs(CRDS / f)[0]) for f in CRD_FILES]
    for crd in installed:
        # An earlier stack's platform installed its own DGD CRD (kept on destroy): the chart's alone here.
        if client.delete(crd_stub(crd["metadata"]["name"]), propagation="Background"):
            client.wait_deleted(crd_stub(crd["metadata"]["name"]), SETTLE_S)
        cluster.apply(crd, field_manager=CRD_INSTALLER)
        cluster.wait_established(crd["metadata"]["name"])
    yield installed
    for crd in installed:
        client.delete(crd_stub(crd["metadata"]["name"]), propagation="Background")
        client.wait_deleted(crd_stub(crd["metadata"]["name"]), SETTLE_S)


@pytest.fixture(scope="module")
def left(client: KubeClient, crds: list[Manifest]) -> Iterator[Left]:
    namespace = str(docs(LEFT)[0]["metadata"]["namespace"])
    # Another module of the session (the operator-rendered comparison) may still be deleting it.
    assert client.wait_deleted(namespace_object(namespace), SETTLE_S), (
        f"namespace {namespace} still terminating"
    )
    client.apply(namespace_object(namespace))
    # The user's prerequisite the graph names (envFrom).
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf-token-secret", "namespace": namespace},
        "stringData": {"HF_TOKEN": "not-a-real-token"},
    }
    client.apply(secret, manager=USER)
    try:
        yield Left(client)
    finally:
        client.delete(namespace_object(namespace), propagation="Background")


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster, left: Left
) -> Iterator[auto.Stack]:
    project = copy_project(tmp_path_factory.mktemp("takeover"))
    graph = project / "examples" / GRAPH.name
    graph.write_bytes(GRAPH.read_bytes())
    stack = make_stack(project, cluster, "takeover", left.namespace, [graph], **OPTIONS)
    # The cluster's DeviceClass is not this test's to create or delete.
    stack.set_config("dynamo-infra:platform", auto.ConfigValue(json.dumps({"deviceClass": False})))
    yield stack
    stack.destroy(on_output=lambda _: None)


@pytest.fixture(scope="module")
def first_up(stack: auto.Stack) -> tuple[auto.UpResult, str]:
    lines: list[str] = []
    result = up(stack, lines)
    return result, "\n".join(lines)


def test_up_takes_over_the_graph_without_restarting_a_pod(
    left: Left, first_up: tuple[auto.UpResult, str]
) -> None:
    result, output = first_up
    assert left.pod_uids() == left.pods, "no pod was replaced"
    assert left.replica_set_uids() == left.replica_sets, "no Deployment rolled"
    assert {d["metadata"]["name"]: d["spec"]["template"] for d in left.deployments()} == left.templates
    taken = result.outputs["graphs"].value[left.graph]["takenOver"]
    assert taken["objects"] == left.owned
    assert taken["podsReplaced"] == {}
    assert taken["finalizersRemoved"] == sorted(
        [*(f"{DCD_KIND} {n}" for n in left.dcds), f"{DGD_KIND} {left.graph}"]
    )
    assert "took over" in output and "the operator's pods keep running" in output, output[-3000:]


def test_nothing_taken_over_is_tied_to_the_operator(left: Left, first_up: tuple[auto.UpResult, str]) -> None:
    for key in left.owned:
        parts = key.split("/")
        live = left.kube.get(stub("/".join(parts[:-3]), parts[-3], parts[-2], parts[-1]))
        assert live is not None, key
        meta = live["metadata"]
        assert [r["kind"] for r in meta.get("ownerReferences") or []] == [], key
        assert {m["manager"] for m in meta["managedFields"]} & set(OPERATOR_FIELD_MANAGERS) == set(), key
        assert set(meta.get("annotations") or {}) & set(OPERATOR_ANNOTATIONS) == set(), key
        assert INVENTORY_LABEL in meta["labels"], key
    for kind, name in [*((DCD_KIND, n) for n in left.dcds), (DGD_KIND, left.graph)]:
        live = left.dynamo(kind, name)
        assert live is not None and OPERATOR_FINALIZER not in (live["metadata"].get("finalizers") or []), name


def test_a_second_up_changes_nothing(
    stack: auto.Stack, left: Left, first_up: tuple[auto.UpResult, str]
) -> None:
    again = up(stack)
    assert set(again.summary.resource_changes or {}) == {"same"}, again.summary.resource_changes
    taken = again.outputs["graphs"].value[left.graph]["takenOver"]
    assert taken["objects"] == left.owned, "the output still says what was taken over"
    assert left.pod_uids() == left.pods


def test_deleting_the_dgd_collects_its_dcds_but_nothing_taken_over(
    cluster: LocalCluster, crds: list[Manifest], left: Left, first_up: tuple[auto.UpResult, str]
) -> None:
    # The garbage collector reads the Dynamo kinds in their preferred version: with nothing serving
    # the operator's webhook it cannot, so let it (strategy None converts the metadata it needs).
    for crd in crds:
        cluster.apply(crd_as_the_chart_installs_it(crd, {"strategy": "None"}), field_manager=CRD_INSTALLER)
    assert left.kube.delete(
        stub(STORED_VERSION, DGD_KIND, left.namespace, left.graph), propagation="Background"
    )
    wait_for("the DGD is deleted (no finalizer holds it)", lambda: left.dynamo(DGD_KIND, left.graph) is None)
    wait_until(
        lambda: all(left.dynamo(DCD_KIND, n) is None for n in left.dcds),
        COLLECT_S,
        POLL_S,
        what="the garbage collector deletes the DGD's DCDs",
    )
    assert left.pod_uids() == left.pods
    assert left.replica_set_uids() == left.replica_sets


def test_destroy_leaves_nothing_behind(
    stack: auto.Stack, left: Left, first_up: tuple[auto.UpResult, str]
) -> None:
    destroy(stack)
    for key in left.owned:
        parts = key.split("/")
        assert left.kube.get(stub("/".join(parts[:-3]), parts[-3], parts[-2], parts[-1])) is None, key
    wait_for("the pods are gone", lambda: not left.pod_uids())
