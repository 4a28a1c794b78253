"""Operator parity on a real API server: the operator's expected outputs against what we create.

Each scenario of `tests/data/corpus/operator-expected/` is rendered, applied to the local control plane
through our provider (create, then delete), and every object of each expected kind is read back from
a fresh `clusterenv-…` namespace and matched with `tests.matcher`. The server adds its own defaults
here (no `tests.apiserver_defaults`): core defaults for Deployments, CRD schema defaults for
LeaderWorkerSets and PodCliqueSets, and the running LWS webhook's defaults (`networkConfig`, …).

LeaderWorkerSets are awaited until the real LWS controller reports them Available; PodCliqueSets are
not awaited (no Grove controller runs here), their Grove CRDs installed as the platform layer would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dynamo_infra.api import v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.crd_files import crd_documents
from dynamo_infra.components.platform_plan import CLUSTER_FIELD_MANAGER, DEFAULT_CRD_DIR, installable
from dynamo_infra.config import ClusterOptions
from dynamo_infra.kube.client import KubeClient, object_key
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider
from dynamo_infra.render import RenderedGraph, render_graph
from dynamo_infra.render.context import GraphContext
from dynamo_infra.render.features.discovery import discovery_rbac
from tests.conftest import REPO
from tests.dcd import render_dcd
from tests.matcher import match_sets
from tests.operator_expected import docs, expected_of, generated_dgd
from tools.localcluster import LocalCluster

OPTIONS = ClusterOptions()
# Cluster options of the operator's LWS and Grove test environments.
LWS = ClusterOptions.parse({"multinode": {"orchestrator": "lws"}})
GROVE = ClusterOptions.parse({"multinode": {"orchestrator": "grove"}})
# The DGDR's generated graph opts out of Grove by annotation, on a cluster that has LWS too.
GROVE_AND_LWS = ClusterOptions.parse({"multinode": {"orchestrator": "grove"}, "lws": {"enabled": True}})
# Provider await policy: kwok pods start at once, so a short timeout keeps failures quick.
AWAIT = {"mode": "wait", "timeoutSeconds": 60}
# Kinds we create and read back from the namespace.
SERVER_KINDS = {
    "Deployment": "apps/v1",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1",
    "PodCliqueSet": "grove.io/v1alpha1",
}
DCD = "DynamoComponentDeployment"
# Fresh namespaces match the operator tests' `clusterenv-…` patterns (nothing else is in them).
NAMESPACE_PREFIX = "clusterenv"

Apply = Callable[..., dict[str, Any]]


@pytest.fixture()
def apply(cluster: LocalCluster) -> Iterator[Apply]:
    """Create one set of objects through the provider (awaiting readiness); all deleted at teardown."""
    provider = ComponentWorkloadProvider()
    created: list[tuple[str, dict[str, Any]]] = []

    def create(
        namespace: str, graph: str, component: str, objects: list[Manifest], wait: bool = True
    ) -> dict[str, Any]:
        props = {
            "kubeconfig": cluster.kubeconfig.read_text(),
            "context": "",
            "namespace": namespace,
            "graph": graph,
            "component": component,
            "objects": {object_key(o): o for o in objects},
            "replicasExternal": False,
            "await": AWAIT if component and wait else {**AWAIT, "mode": "skip"},
        }
        result = provider.create(props)
        outs = dict(result.outs or {})
        created.append((str(result.id), outs))
        return outs

    yield create
    for id_, outs in reversed(created):
        provider.delete(id_, outs)


@pytest.fixture(scope="module")
def grove_crds(cluster: LocalCluster) -> None:
    """The Grove CRDs as `installCrds: [grove]` installs them (same field manager, kept afterwards)."""
    for crd in crd_documents(REPO / DEFAULT_CRD_DIR, "grove"):
        cluster.apply(installable(crd), field_manager=CLUSTER_FIELD_MANAGER)
        cluster.wait_established(crd["metadata"]["name"])


def apply_graph(apply: Apply, rendered: RenderedGraph) -> None:
    """Shared objects first, then the Grove PodCliqueSet (not awaited: no Grove controller), then
    one provider resource per component, as the program does; only components off Grove are awaited."""
    apply(rendered.namespace, rendered.name, "", list(rendered.shared))
    if rendered.workloads:
        apply(rendered.namespace, rendered.name, "", list(rendered.workloads))
    for c in rendered.components.values():
        outs = apply(rendered.namespace, rendered.name, c.name, list(c.objects), wait=not rendered.workloads)
        if not rendered.workloads:
            assert outs["status"]["ready"] is True, outs["status"]


def read_back(kube: KubeClient, namespace: str, kinds: set[str]) -> list[Manifest]:
    """Every object of the server-side `kinds` in the namespace, as the API server stores it.

    A LeaderWorkerSet's `status` is the LWS controller's (it must say Available) and is left out:
    the operator's tests ran no LWS controller, so their expected objects have none."""
    out = []
    for kind in sorted(kinds & SERVER_KINDS.keys()):
        for o in kube.list(SERVER_KINDS[kind], kind, namespace):
            if kind == "LeaderWorkerSet":
                conditions = {c["type"]: c["status"] for c in o["status"]["conditions"]}
                assert conditions.get("Available") == "True", o["status"]
                o = {k: v for k, v in o.items() if k != "status"}
            out.append(o)
    return out


def check(expected: list[Manifest], actual: list[Manifest]) -> None:
    problems = match_sets(expected, actual)
    assert not problems, "\n".join(problems)


def rendered_dcds(rendered: RenderedGraph) -> list[Manifest]:
    """Our DCDs as rendered: no operator runs here (and the DCD CRD need not be installed), so the
    DynamoComponentDeployments are compared as we would have written them, not read back."""
    return [c.dcd for c in rendered.components.values() if c.dcd is not None]


def hf_token_secret(namespace: str) -> Manifest:
    """The secret the graphs' `envFrom` names, created first as a user would."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf-token-secret", "namespace": namespace},
        "stringData": {"HF_TOKEN": "not-a-real-token"},
    }


def standalone_dcd(scenario: Path, namespace: str, apply: Apply) -> Manifest:
    """The scenario's DCD in `namespace`, with its discovery service account created first: a
    standalone DCD runs as its graph's discovery account (named after the DCD, which stands in for
    the graph); the graph would own it, so it is created here for the pods to start."""
    (dcd,) = docs(scenario / "input.yaml")
    dcd = {**dcd, "metadata": {**dcd["metadata"], "namespace": namespace}}
    parent = v1beta1.DynamoGraphDeployment.parse(
        {
            "apiVersion": v1beta1.API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": dcd["metadata"],
            "spec": {},
        }
    )
    apply(
        namespace,
        parent.name,
        "",
        discovery_rbac(GraphContext(dgd=parent, namespace=namespace, options=OPTIONS)),
    )
    return dcd


def test_dcd_deployment(corpus: Path, kube: KubeClient, namespace: str, apply: Apply) -> None:
    scenario = corpus / "operator-expected" / "dcd" / "deployment"
    dcd = standalone_dcd(scenario, namespace, apply)
    outs = apply(namespace, dcd["metadata"]["name"], dcd["spec"]["name"], render_dcd(dcd, OPTIONS))
    assert outs["status"]["ready"] is True, outs["status"]
    check(expected_of(scenario, {"Deployment"}), read_back(kube, namespace, {"Deployment"}))


def test_dcd_lws(corpus: Path, kube: KubeClient, namespace: str, apply: Apply) -> None:
    """A multinode DCD: one LeaderWorkerSet `{dcd}-0`, Available through the real LWS controller."""
    scenario = corpus / "operator-expected" / "dcd" / "lws"
    dcd = standalone_dcd(scenario, namespace, apply)
    outs = apply(namespace, dcd["metadata"]["name"], dcd["spec"]["name"], render_dcd(dcd, LWS))
    assert outs["status"]["ready"] is True, outs["status"]
    kinds = {"LeaderWorkerSet", "Deployment"}
    check(expected_of(scenario, kinds), read_back(kube, namespace, kinds))


def test_dgd_components(corpus: Path, kube: KubeClient, namespace: str, apply: Apply) -> None:
    scenario = corpus / "operator-expected" / "dgd" / "components"
    (dgd,) = docs(scenario / "input.yaml")
    rendered = render_graph(v1beta1.DynamoGraphDeployment.parse(dgd), OPTIONS, namespace)
    apply_graph(apply, rendered)
    kinds = {"Deployment", DCD}
    check(expected_of(scenario, kinds), [*read_back(kube, namespace, kinds), *rendered_dcds(rendered)])


def test_dgd_grove(corpus: Path, kube: KubeClient, namespace: str, apply: Apply, grove_crds: None) -> None:
    scenario = corpus / "operator-expected" / "dgd" / "grove"
    (dgd,) = docs(scenario / "input.yaml")
    rendered = render_graph(v1beta1.DynamoGraphDeployment.parse(dgd), GROVE, namespace)
    apply_graph(apply, rendered)
    kinds = {"PodCliqueSet", "Deployment"}
    check(expected_of(scenario, kinds), read_back(kube, namespace, kinds))


def test_dgdr_deployment_path(corpus: Path, kube: KubeClient, namespace: str, apply: Apply) -> None:
    """The DGD the profiler generated, rendered on the Deployment path (Grove opted out)."""
    scenario = corpus / "operator-expected" / "dgdr" / "deployment"
    kube.apply(hf_token_secret(namespace))
    rendered = render_graph(generated_dgd(scenario), OPTIONS, namespace)
    apply_graph(apply, rendered)
    kinds = {"Deployment", DCD}
    check(expected_of(scenario, kinds), [*read_back(kube, namespace, kinds), *rendered_dcds(rendered)])


def test_dgdr_lws_path(corpus: Path, kube: KubeClient, namespace: str, apply: Apply) -> None:
    """Grove opted out by annotation: DCDs, a Deployment per single-node component, one LWS."""
    scenario = corpus / "operator-expected" / "dgdr" / "lws"
    kube.apply(hf_token_secret(namespace))
    rendered = render_graph(generated_dgd(scenario), GROVE_AND_LWS, namespace)
    apply_graph(apply, rendered)
    kinds = {"Deployment", "LeaderWorkerSet", DCD}
    check(expected_of(scenario, kinds), [*read_back(kube, namespace, kinds), *rendered_dcds(rendered)])


def test_dgdr_grove_path(
    corpus: Path, kube: KubeClient, namespace: str, apply: Apply, grove_crds: None
) -> None:
    scenario = corpus / "operator-expected" / "dgdr" / "grove"
    kube.apply(hf_token_secret(namespace))
    rendered = render_graph(generated_dgd(scenario), GROVE, namespace)
    apply_graph(apply, rendered)
    kinds = {"PodCliqueSet", "Deployment", "LeaderWorkerSet", DCD}
    check(expected_of(scenario, kinds), [*read_back(kube, namespace, kinds), *rendered_dcds(rendered)])
