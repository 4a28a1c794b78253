"""Operator parity on a real API server: the operator's expected outputs against what we create.

Each scenario of `shared/corpus/operator-expected/` (Deployment path) is rendered, applied to the
local control plane through our provider (create with await, then delete), and every object of each
expected kind is read back from a fresh `clusterenv-…` namespace and matched with `tests.matcher`.
The server adds its own defaults here (no `tests.apiserver_defaults`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dynamo_infra.api import v1beta1
from dynamo_infra.config import ClusterOptions
from dynamo_infra.reconcile.kube import KubeClient, Obj, object_key
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider
from dynamo_infra.render import RenderedGraph, render_graph
from dynamo_infra.render.context import GraphContext
from dynamo_infra.render.discovery import discovery_rbac
from dynamo_infra.render.graph import render_dcd
from tests.integration.conftest import unique
from tests.matcher import match_sets
from tests.operator_expected import docs, expected_of, generated_dgd
from tools.localcluster import LocalCluster

OPTIONS = ClusterOptions()
# Provider await policy: kwok pods start at once, so a short timeout keeps failures quick.
AWAIT = {"mode": "wait", "timeoutSeconds": 60}
# Kinds we create and read back from the namespace.
SERVER_KINDS = {"Deployment": "apps/v1"}
DCD = "DynamoComponentDeployment"

Apply = Callable[[str, str, str, list[Obj]], dict[str, Any]]


@pytest.fixture()
def namespace(kube: KubeClient) -> Iterator[str]:
    """A fresh namespace matching the operator tests' `clusterenv-…` patterns (nothing else in it)."""
    ns = unique("clusterenv")
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    yield ns
    kube.delete({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})


@pytest.fixture()
def apply(cluster: LocalCluster) -> Iterator[Apply]:
    """Create one set of objects through the provider (awaiting readiness); all deleted at teardown."""
    provider = ComponentWorkloadProvider()
    created: list[tuple[str, dict[str, Any]]] = []

    def create(namespace: str, graph: str, component: str, objects: list[Obj]) -> dict[str, Any]:
        props = {
            "kubeconfig": cluster.kubeconfig.read_text(),
            "context": "",
            "namespace": namespace,
            "graph": graph,
            "component": component,
            "objects": {object_key(o): o for o in objects},
            "replicasExternal": False,
            "await": AWAIT if component else {**AWAIT, "mode": "skip"},
        }
        result = provider.create(props)
        outs = dict(result.outs or {})
        created.append((str(result.id), outs))
        return outs

    yield create
    for id_, outs in reversed(created):
        provider.delete(id_, outs)


def apply_graph(apply: Apply, rendered: RenderedGraph) -> None:
    """Shared objects first, then one provider resource per component, as the program does."""
    apply(rendered.namespace, rendered.name, "", list(rendered.shared))
    for c in rendered.components.values():
        outs = apply(rendered.namespace, rendered.name, c.name, list(c.objects))
        assert outs["status"]["ready"] is True, outs["status"]


def read_back(kube: KubeClient, namespace: str, kinds: set[str]) -> list[Obj]:
    """Every object of the server-side `kinds` in the namespace, as the API server stores it."""
    return [
        o
        for kind in sorted(kinds & SERVER_KINDS.keys())
        for o in kube.list(SERVER_KINDS[kind], kind, namespace)
    ]


def check(expected: list[Obj], actual: list[Obj]) -> None:
    problems = match_sets(expected, actual)
    assert not problems, "\n".join(problems)


def rendered_dcds(rendered: RenderedGraph) -> list[Obj]:
    """Our DCDs as rendered: no operator runs here (and the DCD CRD need not be installed), so the
    DynamoComponentDeployments are compared as we would have written them, not read back."""
    return [c.dcd for c in rendered.components.values() if c.dcd is not None]


def hf_token_secret(namespace: str) -> Obj:
    """The secret the graphs' `envFrom` names, created first as a user would."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf-token-secret", "namespace": namespace},
        "stringData": {"HF_TOKEN": "not-a-real-token"},
    }


def test_dcd_deployment(corpus: Path, kube: KubeClient, namespace: str, apply: Apply) -> None:
    scenario = corpus / "operator-expected" / "dcd" / "deployment"
    (dcd,) = docs(scenario / "input.yaml")
    dcd = {**dcd, "metadata": {**dcd["metadata"], "namespace": namespace}}
    # A standalone DCD runs as its graph's discovery service account (named after the DCD, which
    # stands in for the graph); the graph would own it, so it is created here for the pods to start.
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
    outs = apply(namespace, parent.name, dcd["spec"]["name"], render_dcd(dcd, OPTIONS))
    assert outs["status"]["ready"] is True, outs["status"]
    check(expected_of(scenario, {"Deployment"}), read_back(kube, namespace, {"Deployment"}))


def test_dgd_components(corpus: Path, kube: KubeClient, namespace: str, apply: Apply) -> None:
    scenario = corpus / "operator-expected" / "dgd" / "components"
    (dgd,) = docs(scenario / "input.yaml")
    rendered = render_graph(v1beta1.DynamoGraphDeployment.parse(dgd), OPTIONS, namespace)
    apply_graph(apply, rendered)
    kinds = {"Deployment", DCD}
    check(expected_of(scenario, kinds), [*read_back(kube, namespace, kinds), *rendered_dcds(rendered)])


def test_dgdr_deployment_path(corpus: Path, kube: KubeClient, namespace: str, apply: Apply) -> None:
    """The DGD the profiler generated, rendered on the Deployment path (Grove opted out)."""
    scenario = corpus / "operator-expected" / "dgdr" / "deployment"
    kube.apply(hf_token_secret(namespace))
    rendered = render_graph(generated_dgd(scenario), OPTIONS, namespace)
    apply_graph(apply, rendered)
    kinds = {"Deployment", DCD}
    check(expected_of(scenario, kinds), [*read_back(kube, namespace, kinds), *rendered_dcds(rendered)])
