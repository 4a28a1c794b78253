"""Snapshot-API checkpoints (runtimes from 1.5.0 on) against the local control plane, through the
checkpoint provider: a cluster without the API is refused at `check` (every preview) naming what to
install; with ai-dynamo/snapshot's CRDs the API server accepts our SnapshotJob, the provider follows
it to Ready as the operator does (SnapshotJob Completed and its PodSnapshot Ready), and destroy
removes both; a referenced PodSnapshot is only looked up. No Snapshot operator runs here: the test
writes the status it would."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from dynamo_infra.api import v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.config import ClusterOptions
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.reconcile.checkpoint_calls import CheckpointFailed
from dynamo_infra.reconcile.checkpoint_provider import CheckpointProvider
from dynamo_infra.render import render_graph
from dynamo_infra.render.features import snapshot as sn
from tests.conftest import CORPUS
from tests.integration.harness import SERVED_S, graph_stack, kube_client, preview_failure, serves
from tests.wait import wait_until
from tools.localcluster import LocalCluster

CRDS = sorted((CORPUS / "crds" / "snapshot").glob("*.yaml"))
IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1"
NAMESPACE_PREFIX = "snapprov"
# Field manager the test writes Snapshot's status with.
SNAPSHOT_MANAGER = "snapshot-operator"


def worker(**config: Any) -> dict[str, Any]:
    main = {
        "name": "main",
        "image": IMAGE,
        "command": ["python3", "-m", "dynamo.vllm"],
        "args": ["--model", "m"],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    return {
        "name": "worker",
        "type": "worker",
        "podTemplate": {"spec": {"containers": [main]}},
        "experimental": {"checkpoint": {"enabled": True, **config}},
    }


def rendered_checkpoint(namespace: str, **config: Any) -> Manifest:
    dgd = v1beta1.DynamoGraphDeployment.parse(
        {
            "apiVersion": v1beta1.API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": "snap"},
            "spec": {"components": [worker(**config)]},
        }
    )
    options = ClusterOptions.parse({"checkpoint": {"enabled": True}})
    (obj,) = render_graph(dgd, options, namespace).checkpoints
    return obj


def over_the_wire(values: dict[str, Any]) -> dict[str, Any]:
    """Inputs as the engine hands them to a dynamic provider (every number a float)."""
    from pulumi.runtime import rpc

    async def roundtrip() -> dict[str, Any]:
        return dict(rpc.deserialize_properties(await rpc.serialize_properties(values, {})))

    return asyncio.run(roundtrip())


def props(cluster: LocalCluster, obj: Manifest, owner: str = "proj/stack/ckpt") -> dict[str, Any]:
    return over_the_wire(
        {
            "kubeconfig": cluster.kubeconfig.read_text(),
            "context": "",
            "namespace": obj["metadata"]["namespace"],
            "checkpoint": obj,
            "job": {},
            "owner": owner,
            "wait": False,
            "timeoutSeconds": 30,
        }
    )


def condition(kind: str) -> Manifest:
    return {
        "type": kind,
        "status": "True",
        "reason": "Test",
        "message": "written by the test",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def set_status(kube: KubeClient, obj: Manifest, status: Manifest) -> None:
    meta = obj["metadata"]
    body = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "status": status,
    }
    kube.apply(body, manager=SNAPSHOT_MANAGER, subresource="status")


def pod_snapshot(namespace: str, name: str, labels: dict[str, str] | None = None) -> Manifest:
    return {
        "apiVersion": sn.API_VERSION,
        "kind": sn.POD_SNAPSHOT,
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"source": {"podRef": {"name": f"{name}-source", "containers": ["main"]}}},
    }


def test_without_the_snapshot_api_preview_fails_naming_what_to_install(
    cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    if kube.serves(sn.API_VERSION, sn.SNAPSHOT_JOB):
        pytest.skip("the cluster serves the snapshot API already")
    p = props(cluster, rendered_checkpoint(namespace))
    (failure,) = CheckpointProvider().check({}, p).failures
    assert "does not serve nvidia.com/v1alpha1 SnapshotJob" in failure.reason
    assert "ai-dynamo/snapshot chart" in failure.reason
    with pytest.raises(CheckpointFailed, match="install the ai-dynamo/snapshot chart"):
        CheckpointProvider().create(p)


def with_template_metadata(crd: Manifest) -> Manifest:
    """The stored chart predates api v0.1.0 (the 1.6 operator's), whose SnapshotJob
    `spec.podSnapshotTemplate.metadata` carries the produced PodSnapshot's labels and annotations
    (PodSnapshotTemplateMetadata); no stored CRD has it, so it is declared here as those types do."""
    if crd["spec"]["names"]["kind"] != sn.SNAPSHOT_JOB:
        return crd
    strings = {"type": "object", "additionalProperties": {"type": "string"}}
    for version in crd["spec"]["versions"]:
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        template = spec["properties"]["podSnapshotTemplate"]
        template["properties"]["metadata"] = {
            "type": "object",
            "properties": {"labels": strings, "annotations": strings},
        }
    return crd


def test_preview_of_a_graph_fails_naming_what_to_install(
    tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster, kube: KubeClient
) -> None:
    """Through the Pulumi CLI: a 1.6 graph with an automatic capture, on a cluster without the API."""
    if kube.serves(sn.API_VERSION, sn.SNAPSHOT_JOB):
        pytest.skip("the cluster serves the snapshot API already")
    dgd = {
        "apiVersion": v1beta1.API_VERSION,
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "snap"},
        "spec": {"components": [worker()]},
    }
    with graph_stack(
        tmp_path_factory, cluster, "snap", yaml.safe_dump(dgd), checkpoint={"enabled": True}
    ) as rig:
        output = preview_failure(rig.stack)
    assert "does not serve nvidia.com/v1alpha1 SnapshotJob" in output, output[-3000:]
    assert "install the ai-dynamo/snapshot chart" in output


@pytest.fixture(scope="module")
def snapshot_api(cluster: LocalCluster) -> Iterator[None]:
    """ai-dynamo/snapshot's CRDs, installed for this module's tests (removed afterwards)."""
    manifests = [with_template_metadata(yaml.safe_load(path.read_text())) for path in CRDS]
    with kube_client(cluster) as kube:
        for manifest in manifests:
            kube.apply(manifest)
        wait_until(
            lambda: all(serves(cluster, sn.API_VERSION, k) for k in (sn.SNAPSHOT_JOB, sn.POD_SNAPSHOT)),
            SERVED_S,
            what="the snapshot kinds to be served",
        )
        yield
        for manifest in manifests:
            kube.delete(manifest, propagation="Background")


def test_snapshot_job_is_accepted_followed_to_ready_and_destroyed(
    cluster: LocalCluster, kube: KubeClient, namespace: str, snapshot_api: None
) -> None:
    job = rendered_checkpoint(namespace)
    p = props(cluster, job)
    provider = CheckpointProvider()
    assert provider.check({}, p).failures == []
    created = provider.create(p)
    assert created.outs is not None and created.outs["phase"] == "Creating"
    live = kube.get(job)
    assert live is not None
    assert live["spec"]["podSnapshotTemplate"]["targetContainers"] == ["main"]
    assert live["spec"]["activeDeadlineSeconds"] == 3600
    assert [c["name"] for c in live["spec"]["podTemplate"]["spec"]["containers"]] == ["main"]

    # Snapshot's operator: the job completes and records the PodSnapshot it produced (same name).
    name = job["metadata"]["name"]
    set_status(kube, job, {"podSnapshotName": name, "conditions": [condition("Completed")]})
    snap = pod_snapshot(namespace, name, {sn.LABEL_SNAPSHOT_JOB: name})
    kube.apply(snap, manager=SNAPSHOT_MANAGER)
    updated = provider.update(created.id, created.outs, p)
    assert updated.outs is not None and updated.outs["phase"] == "Creating", (
        "the PodSnapshot is not Ready yet"
    )
    set_status(kube, snap, {"conditions": [condition("Ready")]})
    updated = provider.update(created.id, created.outs, p)
    assert updated.outs is not None and updated.outs["phase"] == "Ready" and updated.outs["ready"] is True
    read = provider.read(created.id, updated.outs)
    assert read.outs is not None and read.outs["phase"] == "Ready"

    provider.delete(created.id, updated.outs)
    assert kube.get(job) is None and kube.get(snap) is None


def test_referenced_pod_snapshot_is_only_looked_up(
    cluster: LocalCluster, kube: KubeClient, namespace: str, snapshot_api: None
) -> None:
    ref = rendered_checkpoint(namespace, checkpointRef="golden", startupPolicy="WaitForCheckpoint")
    assert ref["kind"] == sn.POD_SNAPSHOT
    p = props(cluster, ref)
    provider = CheckpointProvider()
    created = provider.create(p)
    assert created.outs is not None and created.outs["phase"] == "Pending"
    snap = pod_snapshot(namespace, "golden")
    kube.apply(snap, manager="kubectl")
    set_status(kube, snap, {"conditions": [condition("Ready")]})
    updated = provider.update(created.id, created.outs, p)
    assert updated.outs is not None and updated.outs["ready"] is True
    provider.delete(created.id, updated.outs)
    assert kube.get(snap) is not None, "someone else's PodSnapshot is never deleted"


def test_up_creates_the_snapshot_job_and_restores_once_its_snapshot_is_ready(
    tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster, snapshot_api: None
) -> None:
    """Through the Pulumi CLI (the graphs' least-privilege Role): an Immediate worker starts cold beside
    its SnapshotJob; once Snapshot reports the capture, the next `up` restores its pods from it."""
    dgd = {
        "apiVersion": v1beta1.API_VERSION,
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "snapup"},
        "spec": {"components": [worker()]},
    }
    with graph_stack(
        tmp_path_factory, cluster, "snapup", yaml.safe_dump(dgd), checkpoint={"enabled": True}
    ) as rig:
        rig.up()
        (job,) = rig.kube.list(sn.API_VERSION, sn.SNAPSHOT_JOB, rig.ns)
        state = rig.outputs["graphs"].value["snapup"]["checkpoints"]["worker"]
        assert state["checkpointName"] == job["metadata"]["name"] and state["phase"] == "Creating"
        template = rig.deployment("snapup-worker")["spec"]["template"]
        assert sn.ANNOTATION_RESTORE_FROM not in (template["metadata"].get("annotations") or {})

        name = job["metadata"]["name"]
        set_status(rig.kube, job, {"podSnapshotName": name, "conditions": [condition("Completed")]})
        snap = pod_snapshot(rig.ns, name, {sn.LABEL_SNAPSHOT_JOB: name})
        rig.kube.apply(snap, manager=SNAPSHOT_MANAGER)
        set_status(rig.kube, snap, {"conditions": [condition("Ready")]})
        rig.up()
        state = rig.outputs["graphs"].value["snapup"]["checkpoints"]["worker"]
        assert state["ready"] is True
        template = rig.deployment("snapup-worker")["spec"]["template"]
        assert template["metadata"]["annotations"][sn.ANNOTATION_RESTORE_FROM] == name
        volumes = {v["name"] for v in template["spec"]["volumes"]}
        assert "snapshot-control" in volumes
