"""Object by object on a real API server: our objects for every file of operator-rendered, applied
to the local control plane and read back, equal the operator's (see `tests.operator_rendered`).

One pass for the module: every file's objects are created with server-side apply in the file's own
namespace (the operator's), then read back; the API server adds its own defaults (core defaulting,
CRD schema defaults, the running LWS webhook's). The CRDs are installed as the platform layer
installs them: Grove, InferencePool and the Dynamo DCD (without the operator's conversion webhook, so
storing v1beta1 here); LeaderWorkerSet comes with the local cluster, ResourceClaimTemplate is built
in. No controller of ours runs: a DCD is compared as stored (we never write DCDs; this is the form
the operator's would have), a PodCliqueSet as created (no Grove controller).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.crd_files import crd_documents
from dynamo_infra.components.platform_plan import CLUSTER_FIELD_MANAGER, DEFAULT_CRD_DIR, installable
from dynamo_infra.kube.client import KubeClient
from tests.conftest import CORPUS, REPO
from tests.integration.harness import kube_client, namespace_object
from tests.operator_rendered import DCD, Case, Ours, cases, compare, refusal_problems
from tools.localcluster import LocalCluster

CASES = cases()
WITH_DCDS = [c for c in CASES if any(o["kind"] == DCD for o in c.expected)]
# CRD sets shipped with the platform layer that the files' kinds need (LWS: the local cluster's).
PLATFORM_CRD_SETS = ("grove", "inference")
# The operator's DCD CRD, as the corpus holds it, and the version its DCDs are written in.
DCD_CRD = CORPUS / "crds" / "dynamo" / "nvidia.com_dynamocomponentdeployments.yaml"
HUB_VERSION = "v1beta1"
# How long the namespaces may take to go at teardown (their pods stop through kwok).
NAMESPACE_GONE_S = 120


def stored_as_hub(crd: Manifest) -> Manifest:
    """The CRD storing v1beta1 (the operator's DCDs): without the operator's conversion webhook a
    v1beta1 object stored as v1alpha1 would lose every field v1alpha1 does not have."""
    versions = [{**v, "storage": v["name"] == HUB_VERSION} for v in crd["spec"]["versions"]]
    return {**crd, "spec": {**crd["spec"], "versions": versions}}


@pytest.fixture(scope="module")
def crds(cluster: LocalCluster) -> None:
    docs = [installable(d) for s in PLATFORM_CRD_SETS for d in crd_documents(REPO / DEFAULT_CRD_DIR, s)]
    docs += [
        stored_as_hub(installable(d))
        for d in crd_documents(DCD_CRD.parent.parent, DCD_CRD.parent.name)
        if d["spec"]["names"]["kind"] == DCD
    ]
    for crd in docs:
        cluster.apply(crd, field_manager=CLUSTER_FIELD_MANAGER)
    for crd in docs:
        cluster.wait_established(crd["metadata"]["name"])


@pytest.fixture(scope="module")
def stored(cluster: LocalCluster, crds: None) -> Iterator[dict[str, Ours]]:
    """Per file: our objects as the API server stores them (and our refusals)."""
    start = time.monotonic()
    with kube_client(cluster) as kube:
        ours = {c.name: c.ours() for c in CASES}
        for case in CASES:
            kube.apply(namespace_object(case.namespace))
            for obj in ours[case.name].objects:
                kube.apply(obj)
        out = {name: Ours(read_back(kube, o.objects), o.refusals) for name, o in ours.items()}
        print(f"\n{sum(len(o.objects) for o in ours.values())} objects applied and read back in "
              f"{time.monotonic() - start:.1f}s")  # fmt: skip
        yield out
        for case in CASES:
            # The DCDs carry the operator's finalizer and no operator runs here to remove it: without
            # this the namespace would stay terminating and block later modules that use the same name.
            for obj in ours[case.name].objects:
                if obj["metadata"].get("finalizers"):
                    kube.patch(obj, [{"op": "remove", "path": "/metadata/finalizers"}])
            kube.delete(namespace_object(case.namespace), propagation="Background")
        for case in CASES:
            assert kube.wait_deleted(namespace_object(case.namespace), NAMESPACE_GONE_S), case.namespace


def read_back(kube: KubeClient, objects: list[Manifest]) -> list[Manifest]:
    out = []
    for obj in objects:
        live = kube.get(obj)
        assert live is not None, f"{obj['kind']} {obj['metadata']['name']} was not stored"
        out.append(live)
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_objects_equal_the_operators(case: Case, stored: dict[str, Ours]) -> None:
    ours = stored[case.name]
    comparison = compare(case, case.expected, ours, lambda kind: kind != DCD)
    problems = refusal_problems(case, ours) + comparison.problems()
    assert not problems, "\n".join(problems)
    assert comparison.equal, "nothing compared"


@pytest.mark.parametrize("case", WITH_DCDS, ids=lambda c: c.name)
def test_dcds_equal_the_operators(case: Case, stored: dict[str, Ours]) -> None:
    comparison = compare(case, case.expected, stored[case.name], lambda kind: kind == DCD)
    assert not comparison.problems(), "\n".join(comparison.problems())
