"""The Dynamo runtime's CRDs through the real Pulumi CLI against the local control plane: every stack
installs DynamoWorkerMetadata (the store of Kubernetes discovery) and `destroy` keeps it; one that
a Helm-installed operator put there is used as it is: never applied, modified nor deleted.

The CRD is cluster-wide: each test starts without it and removes it when done, so later tests'
stacks install their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.platform_plan import CLUSTER_FIELD_MANAGER, DEFAULT_CRD_DIR, crd_stub
from dynamo_infra.kube.client import KubeClient
from tests.conftest import REPO
from tests.integration.harness import make_stack, unique
from tests.wait import wait_until
from tools.localcluster import LocalCluster

CRD_NAME = "dynamoworkermetadatas.nvidia.com"
CRD_FILE = REPO / DEFAULT_CRD_DIR / "dynamo" / "nvidia.com_dynamoworkermetadatas.yaml"
# How the Dynamo platform Helm chart would have installed it, and what it adds.
HELM_MANAGER = "helm"
HELM_LABELS = {"app.kubernetes.io/managed-by": "Helm"}
HELM_ANNOTATIONS = {"meta.helm.sh/release-name": "dynamo-platform"}
# The runtime's worker applies its metadata under this field manager.
WORKER_MANAGER = "dynamo-worker"
# How long a CRD may take to be established, or deleted with its objects.
CRD_WAIT_S = 60
# Nothing to wait for: the CRDs are the subject, not the graph's pods.
NO_AWAIT = {"await": {"mode": "skip"}}


def managers(live: Manifest) -> set[str]:
    return {m["manager"] for m in live["metadata"].get("managedFields") or []}


def established(kube: KubeClient) -> Manifest:
    """The CRD once the API server serves it."""

    def live_if_established() -> Manifest | None:
        live = kube.get(crd_stub(CRD_NAME))
        conditions = {
            c["type"]: c["status"] for c in ((live or {}).get("status") or {}).get("conditions") or []
        }
        return live if live is not None and conditions.get("Established") == "True" else None

    return wait_until(live_if_established, CRD_WAIT_S, what=f"CRD {CRD_NAME} to be established")


def served(kube: KubeClient, api_version: str, kind: str) -> None:
    """Wait until API discovery lists the kind (a moment after its CRD is established)."""
    wait_until(lambda: kube.serves(api_version, kind), CRD_WAIT_S, what=f"{api_version} {kind} to be served")


def remove_crd(kube: KubeClient) -> None:
    kube.delete(crd_stub(CRD_NAME), propagation="Background")
    assert kube.wait_deleted(crd_stub(CRD_NAME), CRD_WAIT_S)


@pytest.fixture()
def no_crd(kube: KubeClient) -> Iterator[None]:
    remove_crd(kube)
    yield
    remove_crd(kube)


@pytest.fixture()
def graph(project: Path) -> Path:
    return project / "examples" / "agg.yaml"


@pytest.mark.usefixtures("no_crd")
def test_every_stack_installs_worker_metadata_and_destroy_keeps_it(
    project: Path, graph: Path, cluster: LocalCluster, kube: KubeClient
) -> None:
    ns = unique("dwm")
    stack = make_stack(project, cluster, "dwm", ns, [graph], **NO_AWAIT)
    assert stack.up(on_output=lambda _: None).summary.result == "succeeded"
    live = established(kube)
    assert CLUSTER_FIELD_MANAGER in managers(live)
    assert live["spec"].get("conversion", {}).get("strategy", "None") == "None"
    # A worker can store its discovery metadata (as the runtime does, under its own field manager).
    metadata: Manifest = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoWorkerMetadata",
        "metadata": {"name": "worker-0", "namespace": ns},
        "spec": {"data": {"endpoints": {}, "model_cards": {}}},
    }
    served(kube, metadata["apiVersion"], metadata["kind"])
    assert kube.apply(metadata, manager=WORKER_MANAGER)["spec"]["data"] == metadata["spec"]["data"]
    preview = stack.preview(on_output=lambda _: None)
    assert set(preview.change_summary) == {"same"}, preview.change_summary
    assert stack.destroy(on_output=lambda _: None).summary.result == "succeeded"
    kept = kube.get(crd_stub(CRD_NAME))
    assert kept is not None and kept["metadata"]["uid"] == live["metadata"]["uid"], "the CRD is retained"
    stack.workspace.remove_stack("dwm")


@pytest.mark.usefixtures("no_crd")
def test_a_crd_installed_by_helm_is_used_as_it_is(
    project: Path, graph: Path, cluster: LocalCluster, kube: KubeClient
) -> None:
    (upstream,) = [d for d in yaml.safe_load_all(CRD_FILE.read_text()) if d]
    meta = upstream["metadata"]
    helm = {
        **upstream,
        "metadata": {
            **meta,
            "labels": HELM_LABELS,
            "annotations": {**meta.get("annotations", {}), **HELM_ANNOTATIONS},
        },
    }
    kube.apply(helm, manager=HELM_MANAGER)
    before = established(kube)
    ns = unique("helm")
    stack = make_stack(project, cluster, "helm", ns, [graph], **NO_AWAIT)
    lines: list[str] = []
    up = stack.up(on_output=lines.append)
    assert up.summary.result == "succeeded"
    text = "\n".join(lines)
    assert f"CRD {CRD_NAME} exists, managed by Helm: used as it is" in text, text
    assert kube.list("apps/v1", "Deployment", ns), "the graph is deployed"
    after = kube.get(crd_stub(CRD_NAME))
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], "not modified"
    assert CLUSTER_FIELD_MANAGER not in managers(after)
    assert after["metadata"]["annotations"]["meta.helm.sh/release-name"] == "dynamo-platform"
    preview = stack.preview(on_output=lambda _: None)
    assert set(preview.change_summary) == {"same"}, preview.change_summary
    assert stack.destroy(on_output=lambda _: None).summary.result == "succeeded"
    kept = kube.get(crd_stub(CRD_NAME))
    assert kept is not None and kept["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    stack.workspace.remove_stack("helm")
