"""Checkpoints, pure parts the checkpoint provider relies on: the capture Job, the checkpoint key,
deletion policy, the phase a Job implies, and the DGD status entry."""

from __future__ import annotations

import hashlib
from typing import Any

from dynamo_infra.render.features import checkpoint
from tests.unit.test_render_multinode import graph, render, worker

CKPT = {"checkpoint": {"enabled": True}}


def ckpt_worker(gpus: int = 2, **config: Any) -> dict[str, Any]:
    return worker(nodes=1, gpus=gpus, experimental={"checkpoint": {"enabled": True, **config}})


def rendered_checkpoint(**config: Any) -> dict[str, Any]:
    (ckpt,) = render(graph(ckpt_worker(**config)), **CKPT).checkpoints
    return ckpt


def test_capture_job_names_its_checkpoint_and_marks_its_pod_as_the_source() -> None:
    ckpt = rendered_checkpoint()
    ckpt_id = ckpt["metadata"]["labels"][checkpoint.LABEL_CHECKPOINT_ID]
    job = checkpoint.capture_job(ckpt)
    assert job["metadata"]["name"] == checkpoint.job_name(ckpt_id) == f"checkpoint-job-{ckpt_id}-1"
    assert job["metadata"]["labels"] == {"nvidia.com/snapshot-checkpoint-id": ckpt_id}
    meta = job["spec"]["template"]["metadata"]
    assert meta["labels"]["nvidia.com/snapshot-is-checkpoint-source"] == "true"
    assert meta["labels"]["nvidia.com/snapshot-checkpoint-id"] == ckpt_id
    assert meta["labels"]["nvidia.com/snapshot-owner"] == ckpt["metadata"]["name"]
    # The pod template's own labels (graph, component, worker generation) are kept.
    assert meta["labels"]["nvidia.com/dynamo-graph-deployment-name"] == "g"
    assert meta["labels"]["nvidia.com/dynamo-component"] == "w"
    assert meta["annotations"]["nvidia.com/snapshot-target-containers"] == "main"
    assert meta["annotations"]["nvidia.com/snapshot-artifact-version"] == "1"
    assert "ttlSecondsAfterFinished" not in job["spec"]


def test_capture_pod_security_context_podinfo_and_control_dir() -> None:
    job = checkpoint.capture_job(rendered_checkpoint())
    spec = job["spec"]["template"]["spec"]
    assert spec["securityContext"]["seccompProfile"] == {
        "type": "Localhost",
        "localhostProfile": "profiles/block-iouring.json",
    }
    assert spec["securityContext"]["fsGroup"] == 1000, "the rendered pod security context is kept"
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["snapshot-control"] == {"name": "snapshot-control", "emptyDir": {}}
    items = {i["path"]: i["fieldRef"]["fieldPath"] for i in volumes["podinfo"]["downwardAPI"]["items"]}
    assert items["dyn_parent_dgd_k8s_name"] == "metadata.labels['nvidia.com/dynamo-graph-deployment-name']"
    assert items["pod_uid"] == "metadata.uid"
    main = spec["containers"][0]
    mounts = {m["name"]: m for m in main["volumeMounts"]}
    assert mounts["podinfo"] == {"name": "podinfo", "mountPath": "/etc/podinfo", "readOnly": True}
    assert mounts["snapshot-control"]["subPath"] == "main"
    assert {"name": "DYN_SNAPSHOT_CONTROL_DIR", "value": "/snapshot-control"} in main["env"]
    no_seccomp = checkpoint.capture_job(rendered_checkpoint(), seccomp_profile="")
    assert "seccompProfile" not in no_seccomp["spec"]["template"]["spec"]["securityContext"]


def test_single_gpu_capture_is_not_wrapped_and_deadline_comes_from_the_checkpoint() -> None:
    ckpt = rendered_checkpoint(gpus=1)
    job = checkpoint.capture_job(ckpt)
    assert job["spec"]["template"]["spec"]["containers"][0]["command"][0] != "cuda-checkpoint"
    assert job["spec"]["activeDeadlineSeconds"] == 3600
    ckpt["spec"]["job"]["activeDeadlineSeconds"] = 120
    assert checkpoint.capture_job(ckpt)["spec"]["activeDeadlineSeconds"] == 120


def test_checkpoint_key_is_the_managed_id_else_the_identity_hash() -> None:
    ckpt = rendered_checkpoint()
    assert checkpoint.checkpoint_key(ckpt) == ckpt["metadata"]["labels"][checkpoint.LABEL_CHECKPOINT_ID]
    identity = {"model": "Qwen/Qwen3-0.6B", "backendFramework": "vllm", "tensorParallelSize": 2}
    standalone = {"metadata": {"name": "mine", "namespace": "ns"}, "spec": {"identity": identity}}
    blob = '{"model":"Qwen/Qwen3-0.6B","backendFramework":"vllm","tensorParallelSize":2,"pipelineParallelSize":1}'
    assert checkpoint.checkpoint_key(standalone) == hashlib.sha256(blob.encode()).hexdigest()[:16]


def test_deletion_policy_defaults_to_delete() -> None:
    assert checkpoint.deletion_policy(rendered_checkpoint()) == "Delete"
    assert checkpoint.deletion_policy(rendered_checkpoint(deletionPolicy="Retain")) == "Retain"
    assert checkpoint.deletion_policy({"metadata": {}}) == "Delete"


def test_job_phase() -> None:
    def job(*conds: tuple[str, str]) -> dict[str, Any]:
        return {"status": {"conditions": [{"type": t, "status": s, "message": "deadline"} for t, s in conds]}}

    assert checkpoint.job_phase(None) == ("Pending", "")
    assert checkpoint.job_phase({}) == ("Creating", "")
    assert checkpoint.job_phase(job(("Complete", "False"))) == ("Creating", "")
    assert checkpoint.job_phase(job(("SuccessCriteriaMet", "True"), ("Complete", "True"))) == ("Ready", "")
    assert checkpoint.job_phase(job(("Failed", "True"))) == ("Failed", "checkpoint job failed: deadline")


def test_dgd_status_entry_carries_the_identity_hash() -> None:
    r = render(graph(ckpt_worker()), **CKPT)
    (ckpt,) = r.checkpoints
    entry = r.checkpoint_status["w"]
    assert entry["identityHash"] == checkpoint.identity_hash(ckpt["spec"]["identity"])
    assert entry["checkpointID"] == checkpoint.checkpoint_key(ckpt)
    assert list(entry) == ["checkpointName", "checkpointID", "identityHash", "ready"]


def test_identity_hash_of_numbers_that_crossed_the_pulumi_wire() -> None:
    """Pulumi hands dynamic providers every number as a float; the hash is over Go's int32s."""
    identity = {"model": "m", "backendFramework": "vllm", "tensorParallelSize": 2, "maxModelLen": 4096}
    wire = {**identity, "tensorParallelSize": 2.0, "maxModelLen": 4096.0, "pipelineParallelSize": 1.0}
    assert checkpoint.identity_hash(wire) == checkpoint.identity_hash(identity)


def ready_render(policy: str = "WaitForCheckpoint", **options: Any) -> Any:
    from dynamo_infra.config import ClusterOptions
    from dynamo_infra.render import render_graph

    opts = ClusterOptions.parse({**options, "checkpoint": {"enabled": True, **options.get("checkpoint", {})}})
    dgd = graph(ckpt_worker(gpus=1, startupPolicy=policy))
    return render_graph(dgd, opts, "team", checkpoint_ready={"w": True})


def test_ready_wait_for_checkpoint_templates_are_restore_targets() -> None:
    r = ready_render(checkpoint={"storagePvc": "snapshots"})
    (ckpt,) = r.checkpoints
    dep = next(o for o in r.components["w"].objects if o["kind"] == "Deployment")
    meta, spec = dep["spec"]["template"]["metadata"], dep["spec"]["template"]["spec"]
    assert meta["labels"]["nvidia.com/snapshot-is-restore-target"] == "true"
    assert meta["labels"]["nvidia.com/snapshot-checkpoint-id"] == checkpoint.checkpoint_key(ckpt)
    assert meta["annotations"]["nvidia.com/snapshot-target-containers"] == "main"
    assert meta["annotations"]["nvidia.com/snapshot-artifact-version"] == "1"
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["checkpoint-storage"]["persistentVolumeClaim"] == {"claimName": "snapshots"}
    assert volumes["snapshot-control"] == {"name": "snapshot-control", "emptyDir": {}}
    assert spec["securityContext"]["seccompProfile"]["localhostProfile"] == "profiles/block-iouring.json"
    main = spec["containers"][0]
    mounts = {m["name"]: m for m in main["volumeMounts"]}
    assert mounts["checkpoint-storage"]["mountPath"] == "/checkpoints"
    assert mounts["snapshot-control"] == {
        "name": "snapshot-control",
        "mountPath": "/snapshot-control",
        "subPath": "main",
    }
    env = {e["name"]: e.get("value") for e in main["env"]}
    assert (
        env["DYN_SNAPSHOT_RESTORE_STANDBY"] == "1" and env["DYN_SNAPSHOT_CONTROL_DIR"] == "/snapshot-control"
    )


def test_restore_storage_only_when_the_stack_names_the_claim() -> None:
    dep = next(o for o in ready_render().components["w"].objects if o["kind"] == "Deployment")
    assert "checkpoint-storage" not in {v["name"] for v in dep["spec"]["template"]["spec"]["volumes"]}


def test_immediate_templates_stay_candidates_when_ready() -> None:
    dep = next(o for o in ready_render("Immediate").components["w"].objects if o["kind"] == "Deployment")
    meta = dep["spec"]["template"]["metadata"]
    assert "nvidia.com/snapshot-is-restore-target" not in meta["labels"]
    assert meta["annotations"]["nvidia.com/dynamo-checkpoint-restore-candidate"] == "true"
    assert "snapshot-control" not in {v["name"] for v in dep["spec"]["template"]["spec"]["volumes"]}


def test_grove_cliques_are_restore_targets_when_ready() -> None:
    from tests.unit.test_render_multinode import GROVE, clique

    r = ready_render(**GROVE)
    c = clique(r, "w")
    assert c["labels"]["nvidia.com/snapshot-is-restore-target"] == "true"
    assert c["annotations"]["nvidia.com/snapshot-target-containers"] == "main"
