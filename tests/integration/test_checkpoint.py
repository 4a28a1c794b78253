"""Checkpoints on the local control plane: our provider plays the operator's checkpoint controller.

kwok's pod-complete stage completes Job pods, so a capture Job becomes Complete (our "Ready": no
snapshot agent runs here). Through the real Pulumi CLI: a WaitForCheckpoint worker starts only
once its capture is Ready, restore-wired, and destroy removes the capture Job. Against the provider
directly (fast): the DynamoCheckpoint CRD path, duplicate keys, failure, timeout, deletion policy.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from dynamo_infra.api import load_yaml
from dynamo_infra.config import ClusterOptions
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.reconcile.checkpoint_calls import CheckpointFailed
from dynamo_infra.reconcile.checkpoint_provider import CheckpointProvider
from dynamo_infra.render import render_graph
from dynamo_infra.render.features.checkpoint import capture_job
from tests.conftest import CORPUS, DATA
from tests.integration.harness import SERVED_S, GraphStack, graph_stack, kube_client, serves
from tests.wait import wait_until
from tools.localcluster import LocalCluster

CRD = CORPUS / "crds" / "dynamo" / "nvidia.com_dynamocheckpoints.yaml"
IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"
# Namespaces of the provider tests.
NAMESPACE_PREFIX = "ckprov"
# Restored pods mount the claim the graph creates (as a snapshot agent's storage would be).
OPTIONS = {"checkpoint": {"enabled": True, "timeoutSeconds": 120, "storagePvc": "snapshots"}}
GRAPH = (DATA / "graphs" / "checkpoint.yaml").read_text()
# The waiting worker's checkpoint identity.
IDENTITY: dict[str, Any] = yaml.safe_load(GRAPH)["spec"]["services"]["Worker"]["checkpoint"]["identity"]


def operator_identity_hash(identity: dict[str, Any]) -> str:
    """ComputeIdentityHash as the operator writes it (§8), independently of our render code.

    Go marshals the normalized struct in field order: model, backendFramework, dynamoVersion
    (omitempty), tensorParallelSize and pipelineParallelSize (0 defaults to 1), dtype (omitempty),
    maxModelLen (omitempty), extraParameters (omitempty; map keys sorted); compact, with `<`, `>`
    and `&` escaped as \\u003c, \\u003e, \\u0026. SHA-256, hex, first 16 characters.
    """
    fields: list[tuple[str, Any]] = [
        ("model", identity.get("model", "")),
        ("backendFramework", identity.get("backendFramework", "")),
    ]
    if identity.get("dynamoVersion"):
        fields.append(("dynamoVersion", identity["dynamoVersion"]))
    fields.append(("tensorParallelSize", identity.get("tensorParallelSize") or 1))
    fields.append(("pipelineParallelSize", identity.get("pipelineParallelSize") or 1))
    if identity.get("dtype"):
        fields.append(("dtype", identity["dtype"]))
    if identity.get("maxModelLen"):
        fields.append(("maxModelLen", identity["maxModelLen"]))
    if identity.get("extraParameters"):
        fields.append(
            (
                "extraParameters",
                {k: identity["extraParameters"][k] for k in sorted(identity["extraParameters"])},
            )
        )
    text = json.dumps(dict(fields), separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(raw, escaped)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_operator_identity_hash_spelled_out() -> None:
    """The test's own hash on a hand-written Go-JSON blob (a guard on the guard)."""
    blob = (
        '{"model":"m","backendFramework":"sglang","tensorParallelSize":4,"pipelineParallelSize":1,'
        '"maxModelLen":8,"extraParameters":{"a":"\\u003cb\\u003e","z":"1"}}'
    )
    identity = {"model": "m", "backendFramework": "sglang", "tensorParallelSize": 4, "maxModelLen": 8,
                "extraParameters": {"z": "1", "a": "<b>"}}  # fmt: skip
    assert operator_identity_hash(identity) == hashlib.sha256(blob.encode()).hexdigest()[:16]


def holds(live: Any, want: Any) -> bool:
    """`live` has every field `want` sets (the API server leaves out zeros and adds defaults)."""
    if isinstance(want, dict):
        return isinstance(live, dict) and all(
            holds(live[k], v) if k in live else v in (0, False, None, "") for k, v in want.items()
        )
    if isinstance(want, list):
        return isinstance(live, list) and len(live) == len(want) and all(map(holds, live, want))
    return bool(live == want)


def job_complete(job: dict[str, Any]) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)


# --- through the Pulumi CLI ----------------------------------------------------------------------


def checkpoint_state(rig: GraphStack, component: str = "Worker") -> dict[str, Any]:
    resources = rig.stack.export_stack().deployment["resources"]
    (res,) = [r for r in resources if r["urn"].endswith(f"::ckpt-checkpoint-{component.lower()}")]
    return dict(res["outputs"])


def jobs(rig: GraphStack, component: str = "Worker") -> list[dict[str, Any]]:
    """The capture Jobs of one component's checkpoint."""
    ckpt_id = checkpoint_state(rig, component)["checkpointId"]
    return [
        j
        for j in rig.kube.list("batch/v1", "Job", rig.ns)
        if j["metadata"]["name"] == f"checkpoint-job-{ckpt_id}-1"
    ]


def component_deployment(rig: GraphStack, component: str) -> dict[str, Any]:
    return rig.deployment(f"ckpt-{component.lower()}-")


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Iterator[GraphStack]:
    with graph_stack(tmp_path_factory, cluster, "ckpt", GRAPH, **OPTIONS) as r:
        r.up()
        yield r


def test_capture_job_completes_and_the_checkpoint_is_ready(rig: GraphStack) -> None:
    (job,) = jobs(rig)
    assert job_complete(job)
    state = checkpoint_state(rig)
    assert state["phase"] == "Ready" and state["ready"] is True
    ckpt_id = state["checkpointId"]
    assert len(ckpt_id) == 32 and job["metadata"]["name"] == f"checkpoint-job-{ckpt_id}-1"
    assert state["checkpointName"] == f"checkpoint-{ckpt_id}"
    assert job["metadata"]["labels"]["nvidia.com/snapshot-checkpoint-id"] == ckpt_id
    pod_labels = job["spec"]["template"]["metadata"]["labels"]
    assert pod_labels["nvidia.com/snapshot-is-checkpoint-source"] == "true"
    assert pod_labels["nvidia.com/snapshot-owner"] == state["checkpointName"]
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 3600
    graph = rig.outputs["graphs"].value["ckpt"]
    assert graph["state"] == "successful", graph
    # Without the DynamoCheckpoint CRD the provider tracks the Job alone, and says so.
    if not rig.kube.serves("nvidia.com/v1alpha1", "DynamoCheckpoint"):
        assert state["crdApplied"] is False
        assert any("does not serve nvidia.com/v1alpha1 DynamoCheckpoint" in line for line in rig.lines)


def test_identity_hash_matches_the_operators_rules(rig: GraphStack) -> None:
    expected = operator_identity_hash(IDENTITY)
    assert checkpoint_state(rig)["identityHash"] == expected
    (job,) = jobs(rig)
    assert job["metadata"]["labels"]["dynamo-infra.io/checkpoint-identity-hash"] == expected


def test_waiting_worker_starts_restore_wired_after_the_capture(rig: GraphStack) -> None:
    worker = component_deployment(rig, "Worker")
    assert worker["spec"]["replicas"] == 2 and worker["status"].get("availableReplicas") == 2
    (job,) = jobs(rig)
    # The worker was created only once the capture was Complete (it never ran un-restored).
    assert worker["metadata"]["creationTimestamp"] >= job["status"]["completionTime"]
    template = worker["spec"]["template"]
    assert template["metadata"]["labels"]["nvidia.com/snapshot-is-restore-target"] == "true"
    assert (
        template["metadata"]["labels"]["nvidia.com/snapshot-checkpoint-id"]
        == job["metadata"]["labels"]["nvidia.com/snapshot-checkpoint-id"]
    )
    assert template["metadata"]["annotations"]["nvidia.com/snapshot-target-containers"] == "main"
    volumes = {v["name"]: v for v in template["spec"]["volumes"]}
    assert volumes["checkpoint-storage"]["persistentVolumeClaim"]["claimName"] == "snapshots"
    main = template["spec"]["containers"][0]
    assert {"name": "checkpoint-storage", "mountPath": "/checkpoints"}.items() <= next(
        m for m in main["volumeMounts"] if m["name"] == "checkpoint-storage"
    ).items()
    env = {e["name"]: e.get("value") for e in main["env"]}
    assert env["DYN_SNAPSHOT_RESTORE_STANDBY"] == "1"
    assert main["startupProbe"]["periodSeconds"] == 1 and main["startupProbe"]["failureThreshold"] == 1800
    assert main["startupProbe"].get("initialDelaySeconds", 0) == 0
    assert main["readinessProbe"]["periodSeconds"] == 1
    # Exactly what the render gives for a Ready checkpoint.
    options = ClusterOptions.parse({"namespace": rig.ns, **OPTIONS})
    dgd = load_yaml(GRAPH).graphs[0]
    ready = render_graph(dgd, options, rig.ns, checkpoint_ready={"Worker": True}).components["Worker"]
    (rendered,) = [o for o in ready.objects if o["kind"] == "Deployment"]
    want = rendered["spec"]["template"]["spec"]["containers"][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert holds(main[probe], want[probe]), (probe, main[probe], want[probe])
    assert [e for e in main["env"] if e["name"].startswith("DYN_SNAPSHOT")] == [
        e for e in want["env"] if e["name"].startswith("DYN_SNAPSHOT")
    ]


def test_immediate_worker_starts_at_once_and_takes_the_restore_cadence_when_ready(rig: GraphStack) -> None:
    eager = component_deployment(rig, "Eager")
    state = checkpoint_state(rig, "Eager")
    # Not gated: created with its replicas while its capture was still running (nobody waited).
    assert eager["spec"]["replicas"] == 1 and state["wait"] is False
    assert state["phase"] in ("Creating", "Ready")
    template = eager["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    assert annotations["nvidia.com/dynamo-checkpoint-restore-candidate"] == "true"
    assert annotations["nvidia.com/dynamo-checkpoint-name"] == state["checkpointName"]
    assert annotations["nvidia.com/dynamo-checkpoint-startup-policy"] == "Immediate"
    # Two DGD-managed checkpoints with the same default identity do not collide: keys are their IDs.
    assert state["identityHash"] == operator_identity_hash({"model": "", "backendFramework": "vllm"})
    assert state["checkpointId"] != checkpoint_state(rig, "Worker")["checkpointId"]
    if state["phase"] == "Creating":
        # A checkpoint not yet Ready is looked at again by the next `up`, which applies the cadence.
        assert rig.stack.preview(on_output=lambda _: None).change_summary.get("update", 0) >= 1
        rig.stack.up(on_output=lambda _: None)
    assert checkpoint_state(rig, "Eager")["phase"] == "Ready"
    main = component_deployment(rig, "Eager")["spec"]["template"]["spec"]["containers"][0]
    assert main["readinessProbe"]["periodSeconds"] == 1
    assert "DYN_SNAPSHOT_RESTORE_STANDBY" not in {e["name"] for e in main["env"]}


def test_second_up_changes_nothing(rig: GraphStack) -> None:
    preview = rig.stack.preview(on_output=lambda _: None)
    assert set(preview.change_summary) == {"same"}, preview.change_summary


def test_destroy_removes_the_capture_jobs(rig: GraphStack) -> None:
    captures = [*jobs(rig, "Worker"), *jobs(rig, "Eager")]
    assert len(captures) == 2
    assert rig.stack.destroy(on_output=lambda _: None).summary.result == "succeeded"
    assert [j["metadata"]["name"] for j in captures if rig.kube.get(j) is not None] == []


# --- against the provider directly ---------------------------------------------------------------


@pytest.fixture(scope="module")
def crd(cluster: LocalCluster) -> Iterator[None]:
    """The DynamoCheckpoint CRD, installed for this module's provider tests (removed afterwards)."""
    manifest = yaml.safe_load(CRD.read_text())
    with kube_client(cluster) as kube:
        kube.apply(manifest)
        wait_until(lambda: serves(cluster, "nvidia.com/v1alpha1", "DynamoCheckpoint"), SERVED_S,
                   what="DynamoCheckpoint to be served")  # fmt: skip
        yield
        kube.delete(manifest, propagation="Background")


def standalone(ns: str, name: str, identity: dict[str, Any], **pod: Any) -> dict[str, Any]:
    """A DynamoCheckpoint written by hand (no DGD): its key is its identity hash."""
    container = {"name": "main", "image": IMAGE, "command": ["python3", "-m", "dynamo.vllm"]}
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoCheckpoint",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "identity": identity,
            "job": {
                "podTemplateSpec": {"spec": {"containers": [container], **pod}},
                "targetContainerName": "main",
            },
        },
    }


def over_the_wire(values: dict[str, Any]) -> dict[str, Any]:
    """Inputs as the engine hands them to a dynamic provider (every number a float)."""
    from pulumi.runtime import rpc

    async def roundtrip() -> dict[str, Any]:
        return dict(rpc.deserialize_properties(await rpc.serialize_properties(values, {})))

    return asyncio.run(roundtrip())


def props(cluster: LocalCluster, ckpt: dict[str, Any], owner: str, **extra: Any) -> dict[str, Any]:
    return over_the_wire(
        {
            "kubeconfig": cluster.kubeconfig.read_text(),
            "context": "",
            "namespace": ckpt["metadata"]["namespace"],
            "checkpoint": ckpt,
            "job": capture_job(ckpt, ""),
            "owner": owner,
            "wait": True,
            "timeoutSeconds": 60,
            **extra,
        }
    )


def test_crd_path_duplicate_identity_and_deletion(
    cluster: LocalCluster, kube: KubeClient, namespace: str, crd: None
) -> None:
    p = CheckpointProvider()
    mine = props(cluster, standalone(namespace, "mine", IDENTITY), "proj/stack-a/mine")
    created = p.create(mine)
    outs = created.outs
    expected = operator_identity_hash(IDENTITY)
    assert outs["phase"] == "Ready" and outs["crdApplied"] is True and outs["identityHash"] == expected
    assert outs["checkpointId"] == expected, "a hand-written checkpoint is keyed by its identity hash"
    live = kube.get(mine["checkpoint"])
    assert live is not None
    assert live["status"]["phase"] == "Ready" and live["status"]["identityHash"] == expected
    assert live["status"]["jobName"] == f"checkpoint-job-{expected}-1"
    job = kube.get(mine["job"])
    assert job is not None and job_complete(job)
    assert job["metadata"]["ownerReferences"][0]["uid"] == live["metadata"]["uid"]

    # Another checkpoint with the same identity (any name, any owner) is refused.
    theirs = props(cluster, standalone(namespace, "theirs", dict(IDENTITY)), "proj/stack-b/theirs")
    with pytest.raises(CheckpointFailed, match=f"identity hash {expected} is already owned by mine"):
        p.create(theirs)
    # The same checkpoint from another stack is refused too (no adoption of someone else's Job).
    with pytest.raises(CheckpointFailed, match=re.escape("already owned by mine (proj/stack-a/mine)")):
        p.create({**mine, "owner": "proj/stack-b/mine"})
    assert kube.get(theirs["checkpoint"]) is None

    # A Ready checkpoint reads back as such; deletion removes the Job and the DynamoCheckpoint.
    assert p.read(created.id, outs).outs["phase"] == "Ready"
    assert p.diff(created.id, outs, mine).changes is False
    p.delete(created.id, outs)
    assert kube.get(mine["job"]) is None and kube.get(mine["checkpoint"]) is None


def test_retain_keeps_the_capture_and_a_new_up_adopts_it(
    cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    p = CheckpointProvider()
    ckpt = standalone(namespace, "kept", {"model": "m", "backendFramework": "sglang"})
    ckpt["metadata"]["annotations"] = {"nvidia.com/dynamo-checkpoint-deletion-policy": "Retain"}
    mine = props(cluster, ckpt, "proj/stack/kept")
    created = p.create(mine)
    uid = kube.get(mine["job"])["metadata"]["uid"]  # type: ignore[index]
    p.delete(created.id, created.outs)
    assert kube.get(mine["job"])["metadata"]["uid"] == uid  # type: ignore[index]
    again = p.create(mine)
    assert again.outs["phase"] == "Ready" and kube.get(mine["job"])["metadata"]["uid"] == uid  # type: ignore[index]


def test_failed_capture_fails_with_the_jobs_reason_and_is_retried(
    cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    p = CheckpointProvider()
    # Unschedulable, with a 2 s deadline: the Job controller fails it (DeadlineExceeded).
    ckpt = standalone(
        namespace, "doomed", {"model": "x", "backendFramework": "vllm"}, nodeSelector={"no": "such-node"}
    )
    ckpt["spec"]["job"]["activeDeadlineSeconds"] = 2
    doomed = props(cluster, ckpt, "proj/stack/doomed")
    with pytest.raises(CheckpointFailed, match=r"checkpoint job failed: .*deadline"):
        p.create(doomed)
    uid = kube.get(doomed["job"])["metadata"]["uid"]  # type: ignore[index]
    with pytest.raises(CheckpointFailed, match="recreates the capture Job to retry"):
        p.create(doomed)
    assert kube.get(doomed["job"])["metadata"]["uid"] != uid  # type: ignore[index]


def test_capture_timeout_names_the_pod_and_why(
    cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    p = CheckpointProvider()
    ckpt = standalone(
        namespace, "stuck", {"model": "y", "backendFramework": "vllm"}, nodeSelector={"no": "such-node"}
    )
    stuck = props(cluster, ckpt, "proj/stack/stuck", timeoutSeconds=4)
    with pytest.raises(
        CheckpointFailed,
        match=r"not Complete after 4s \(pod checkpoint-job-\S+ Pending \(0/\d nodes are available",
    ):
        p.create(stuck)
    # Without waiting, the checkpoint is created Creating; the next `up` looks again.
    outs = p.create({**stuck, "wait": False}).outs
    assert outs["phase"] == "Creating" and outs["ready"] is False
    assert p.diff(f"{namespace}/stuck", outs, {**stuck, "wait": False}).changes is True
