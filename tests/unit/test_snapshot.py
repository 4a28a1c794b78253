"""Checkpoints of runtimes from 1.5.0 on (`render.features.snapshot`, `reconcile.snapshot_calls`): a SnapshotJob
per automatic capture, a referenced PodSnapshot looked up, pods restore-shaped once Ready, and the
provider refusing a cluster without the snapshot API. Below 1.5.0 (and for untagged images) the
DynamoCheckpoint path is unchanged (the goldens prove it byte for byte)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.api.releases import SNAPSHOT_API_CHECKPOINTS, V1_5_0
from dynamo_infra.config import ClusterOptions
from dynamo_infra.kube.client import object_key
from dynamo_infra.reconcile import base, snapshot_calls
from dynamo_infra.reconcile.checkpoint_calls import CheckpointFailed
from dynamo_infra.reconcile.checkpoint_provider import CheckpointProvider
from dynamo_infra.render import RenderedGraph, render_graph
from dynamo_infra.render.features import checkpoint as ck
from dynamo_infra.render.features import snapshot as sn
from tests.unit.test_render_multinode import NS, graph, worker

IMAGE_16 = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1"
IMAGE_14 = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"
CKPT = {"checkpoint": {"enabled": True}}


def ckpt_worker(image: str = IMAGE_16, **config: Any) -> dict[str, Any]:
    c = worker(nodes=1, gpus=1, experimental={"checkpoint": {"enabled": True, **config}})
    c["podTemplate"]["spec"]["containers"][0]["image"] = image
    return c


def render(component: dict[str, Any], ready: bool | None = None) -> RenderedGraph:
    options = ClusterOptions.parse(CKPT)
    return render_graph(
        graph(component), options, NS, checkpoint_ready={"w": ready} if ready is not None else None
    )


def pod_template(r: RenderedGraph) -> Manifest:
    dep = next(o for o in r.components["w"].objects if o["kind"] == "Deployment")
    template: Manifest = dep["spec"]["template"]
    return template


def test_gate_starts_at_1_5_0() -> None:
    assert SNAPSHOT_API_CHECKPOINTS.since == V1_5_0


def test_automatic_capture_is_a_snapshot_job_not_a_dynamo_checkpoint() -> None:
    r = render(ckpt_worker())
    (job,) = r.checkpoints
    assert (job["apiVersion"], job["kind"]) == ("nvidia.com/v1alpha1", "SnapshotJob")
    meta, spec = job["metadata"], job["spec"]
    whash = meta["labels"]["nvidia.com/dynamo-worker-hash"]
    assert meta["labels"] == {
        "nvidia.com/dynamo-component": "w",
        "nvidia.com/dynamo-graph-deployment-name": "g",
        "nvidia.com/dynamo-worker-hash": whash,
    }
    assert meta["annotations"] == {
        "nvidia.com/dynamo-auto-checkpoint": "true",
        "nvidia.com/dynamo-checkpoint-deletion-policy": "Delete",
        "nvidia.com/dynamo-checkpoint-owner-uid": "",
    }
    pod = spec["podTemplate"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["main"], "only the target container is captured"
    assert pod["restartPolicy"] == "Never"
    assert spec["activeDeadlineSeconds"] == 3600
    assert spec["podSnapshotTemplate"]["targetContainers"] == ["main"]
    snap_annotations = spec["podSnapshotTemplate"]["metadata"]["annotations"]
    compat = sn.compatibility_hash(pod, "main", "vllm")
    assert snap_annotations[sn.ANNOTATION_COMPATIBILITY_HASH] == compat
    assert snap_annotations[sn.ANNOTATION_COMPATIBILITY_VERSION] == "v2"
    assert snap_annotations[sn.ANNOTATION_GMS_MODE] == "disabled"
    assert meta["name"] == "checkpoint-" + sn.checkpoint_id(NS, "g", "", "w", whash, compat)
    # The checkpoint controller's capture objects of 1.4 are gone: no probes of the snapshot agent here.
    assert "readinessProbe" in pod["containers"][0], "Snapshot injects its own capture contract"
    assert r.checkpoint_status == {"w": {"checkpointName": meta["name"], "ready": False}}


def test_checkpoint_id_hashes_go_json_of_the_owner_and_compatibility() -> None:
    text = '{"dgdName":"g","componentName":"w","compatibilityHash":"h","compatibilityVersion":"v2"}'
    assert sn.checkpoint_id("", "g", "", "w", "", "h") == hashlib.sha256(text.encode()).hexdigest()[:32]
    text = (
        '{"namespace":"n","dgdName":"g","componentName":"w","workerHash":"abc",'
        '"compatibilityHash":"h","compatibilityVersion":"v2"}'
    )
    assert sn.checkpoint_id("n", "g", "", "w", "abc", "h") == hashlib.sha256(text.encode()).hexdigest()[:32]


def test_compatibility_hash_ignores_restore_env_and_lifecycle_but_not_the_image() -> None:
    main: dict[str, Any] = {
        "name": "main",
        "image": "i:1",
        "env": [{"name": "A", "value": "1"}],
        "volumeMounts": [{"name": "v", "mountPath": "/v"}],
    }
    pod = {
        "containers": [main],
        "volumes": [{"name": "v", "emptyDir": {}}, {"name": "unused", "emptyDir": {}}],
    }
    base_hash = sn.compatibility_hash(pod, "main", "vllm")
    refreshed = {
        **main,
        "env": [*main["env"], {"name": "POD_NAME", "value": "x"}, {"name": "DYN_NAMESPACE", "value": "y"}],
        "livenessProbe": {"httpGet": {"path": "/live", "port": 9090}},
        "ports": [{"containerPort": 9090}],
    }
    assert sn.compatibility_hash({**pod, "containers": [refreshed]}, "main", "vllm") == base_hash
    assert sn.compatibility_hash({**pod, "volumes": pod["volumes"][:1]}, "main", "vllm") == base_hash
    assert (
        sn.compatibility_hash({**pod, "containers": [{**main, "image": "i:2"}]}, "main", "vllm") != base_hash
    )
    assert sn.compatibility_hash(pod, "main", "sglang") != base_hash
    with pytest.raises(ValueError, match="target container 'engine' not found"):
        sn.compatibility_hash(pod, "engine", "vllm")


def test_checkpoint_ref_names_a_pod_snapshot_and_wait_for_checkpoint_holds_replicas() -> None:
    r = render(ckpt_worker(checkpointRef="snap-a", startupPolicy="WaitForCheckpoint"))
    (ref,) = r.checkpoints
    assert (ref["kind"], ref["metadata"]["name"], ref["metadata"]["namespace"]) == (
        "PodSnapshot",
        "snap-a",
        NS,
    )
    assert r.components["w"].waiting_for_checkpoint
    assert r.checkpoint_status == {"w": {"checkpointName": "snap-a", "ready": False}}
    assert sn.ANNOTATION_RESTORE_FROM not in (pod_template(r)["metadata"].get("annotations") or {})


def test_ready_snapshot_restores_pods_through_snapshots_pod_contract() -> None:
    template = pod_template(
        render(ckpt_worker(checkpointRef="snap-a", startupPolicy="WaitForCheckpoint"), True)
    )
    annotations = template["metadata"].get("annotations") or {}
    assert annotations[sn.ANNOTATION_RESTORE_FROM] == "snap-a"
    assert sn.ANNOTATION_RESTORE_CONTAINER_MAP not in annotations, "main restores into main"
    assert not any(k.startswith("nvidia.com/dynamo-checkpoint") for k in annotations)
    labels = template["metadata"]["labels"]
    assert ck.LABEL_RESTORE_TARGET not in labels and ck.LABEL_CHECKPOINT_ID not in labels
    spec = template["spec"]
    assert {"name": "snapshot-control", "emptyDir": {}} in spec["volumes"]
    assert not any(v["name"] == ck.STORAGE_VOLUME for v in spec["volumes"]), "no checkpoint PVC any more"
    main = spec["containers"][0]
    env = {e["name"]: e.get("value") for e in main["env"]}
    assert env["SNAPSHOT_CONTROL_DIR"] == env["DYN_SNAPSHOT_CONTROL_DIR"] == "/snapshot-control"
    assert env["SNAPSHOT_RESTORE_STANDBY"] == "1"
    assert {"name": "snapshot-control", "mountPath": "/snapshot-control", "subPath": "main"} in main[
        "volumeMounts"
    ]
    assert main["securityContext"]["seccompProfile"] == {
        "type": "Localhost",
        "localhostProfile": "profiles/block-iouring.json",
    }
    startup = main["startupProbe"]
    assert (startup["periodSeconds"], startup["failureThreshold"], startup["successThreshold"]) == (
        1,
        1800,
        1,
    )


def test_immediate_policy_starts_cold_then_restores_from_the_automatic_capture() -> None:
    cold = render(ckpt_worker())
    assert not cold.components["w"].waiting_for_checkpoint
    annotations = pod_template(cold)["metadata"].get("annotations") or {}
    assert (
        ck.ANNOTATION_RESTORE_CANDIDATE not in annotations and sn.ANNOTATION_RESTORE_FROM not in annotations
    )
    (job,) = cold.checkpoints
    warm = render(ckpt_worker(), True)
    assert (
        pod_template(warm)["metadata"]["annotations"][sn.ANNOTATION_RESTORE_FROM] == job["metadata"]["name"]
    )
    assert warm.checkpoints == cold.checkpoints, "the SnapshotJob does not depend on readiness"


def test_other_target_container_is_mapped_from_the_captured_one() -> None:
    c = ckpt_worker(checkpointRef="snap-a", targetContainerName="engine")
    containers = c["podTemplate"]["spec"]["containers"]
    containers.append({**containers[0], "name": "engine"})
    template = pod_template(render(c, True))
    assert template["metadata"]["annotations"][sn.ANNOTATION_RESTORE_FROM] == "snap-a"
    engine = next(x for x in template["spec"]["containers"] if x["name"] == "engine")
    assert {"name": "snapshot-control", "mountPath": "/snapshot-control", "subPath": "engine"} in engine[
        "volumeMounts"
    ]


@pytest.mark.parametrize("image", [IMAGE_14, "nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag"])
def test_below_1_5_or_unversioned_keeps_the_dynamo_checkpoint(image: str) -> None:
    r = render(ckpt_worker(image))
    (ckpt,) = r.checkpoints
    assert ckpt["kind"] == "DynamoCheckpoint"
    annotations = pod_template(r)["metadata"]["annotations"]
    assert annotations[ck.ANNOTATION_RESTORE_CANDIDATE] == "true"


def test_snapshot_job_and_pod_snapshot_phases() -> None:
    def cond(kind: str, status: str = "True", **kw: str) -> Manifest:
        return {"status": {"conditions": [{"type": kind, "status": status, **kw}]}}

    assert sn.job_phase(None) == ("Pending", "")
    assert sn.job_phase({}) == ("Creating", "")
    assert sn.job_phase(cond("Completed")) == ("Ready", "")
    failed = sn.job_phase(cond("Failed", reason="DeadlineExceeded", message="too slow"))
    assert failed == ("Failed", "automatic SnapshotJob failed: DeadlineExceeded: too slow")
    assert sn.snapshot_phase(cond("Ready")) == ("Ready", "")
    assert sn.snapshot_phase(cond("Ready", "False")) == ("Creating", "")
    assert sn.snapshot_phase(cond("Failed", message="dump failed")) == ("Failed", "dump failed")


class FakeClient:
    """A cluster with (or without) the snapshot API; records writes and deletes."""

    def __init__(self, served: bool = True, objects: list[Manifest] | None = None) -> None:
        self.served = served
        self.objects = {object_key(o): o for o in objects or []}
        self.writes: list[str] = []
        self.deleted: list[str] = []
        self.patches: list[tuple[str, list[Manifest]]] = []

    def __enter__(self) -> FakeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def serves(self, api_version: str, kind: str) -> bool:
        return self.served

    def get(self, obj: Manifest) -> Manifest | None:
        return self.objects.get(object_key(obj))

    def get_metadata(self, obj: Manifest) -> Manifest | None:
        return self.get(obj)

    def apply(self, obj: Manifest, **_: Any) -> Manifest:
        self.writes.append(object_key(obj))
        live = self.objects.get(object_key(obj)) or {}
        self.objects[object_key(obj)] = {**obj, **({"status": live["status"]} if "status" in live else {})}
        return obj

    def patch(self, obj: Manifest, operations: list[Manifest], **_: Any) -> Manifest:
        self.patches.append((object_key(obj), operations))
        return obj

    def delete(self, obj: Manifest, **_: Any) -> bool:
        self.deleted.append(object_key(obj))
        return self.objects.pop(object_key(obj), None) is not None

    def wait_deleted(self, obj: Manifest, timeout: float) -> bool:
        return True


def props(obj: Manifest, **over: Any) -> dict[str, Any]:
    return {
        "kubeconfig": "k",
        "namespace": NS,
        "checkpoint": obj,
        "job": {},
        "owner": "p/s/r",
        "wait": False,
        **over,
    }


def outs(result: Any) -> dict[str, Any]:
    assert result.outs is not None
    out: dict[str, Any] = result.outs
    return out


def snapshot_job() -> Manifest:
    (job,) = render(ckpt_worker()).checkpoints
    return job


def test_preview_fails_naming_the_snapshot_chart_where_the_api_is_not_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(base.Inputs, "client", lambda self: FakeClient(served=False))
    result = CheckpointProvider().check({}, props(snapshot_job()))
    (failure,) = result.failures
    assert failure.property == "checkpoint"
    assert "does not serve nvidia.com/v1alpha1 SnapshotJob" in failure.reason
    assert "ai-dynamo/snapshot chart" in failure.reason
    monkeypatch.setattr(base.Inputs, "client", lambda self: FakeClient())
    assert CheckpointProvider().check({}, props(snapshot_job())).failures == []
    with pytest.raises(CheckpointFailed, match="install the ai-dynamo/snapshot chart"):
        monkeypatch.setattr(base.Inputs, "client", lambda self: FakeClient(served=False))
        CheckpointProvider().create(props(snapshot_job()))


def test_snapshot_job_is_created_and_ready_once_its_pod_snapshot_is(monkeypatch: pytest.MonkeyPatch) -> None:
    job = snapshot_job()
    fake = FakeClient()
    monkeypatch.setattr(base.Inputs, "client", lambda self: fake)
    created = outs(CheckpointProvider().create(props(job)))
    assert fake.writes == [object_key(job)]
    assert created["phase"] == "Creating" and created["ready"] is False
    assert created["jobName"] == created["checkpointName"] == job["metadata"]["name"]
    name = job["metadata"]["name"]
    completed = {"podSnapshotName": name, "conditions": [{"type": "Completed", "status": "True"}]}
    fake.objects[object_key(job)] = {**fake.objects[object_key(job)], "status": completed}
    pod_snapshot: Manifest = {
        "apiVersion": sn.API_VERSION,
        "kind": "PodSnapshot",
        "metadata": {"name": name, "namespace": NS},
    }
    updated = outs(CheckpointProvider().update("id", {}, props(job)))
    assert updated["phase"] == "Creating", "Completed alone is not restorable: the PodSnapshot must be Ready"
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    labels = {sn.LABEL_SNAPSHOT_JOB: name}
    fake.objects[object_key(pod_snapshot)] = {
        **pod_snapshot,
        "metadata": {**pod_snapshot["metadata"], "labels": labels},
        "status": ready,
    }
    updated = outs(CheckpointProvider().update("id", {}, props(job)))
    assert updated["phase"] == "Ready" and updated["ready"] is True
    assert fake.writes == [object_key(job)], "a SnapshotJob is created once: its spec is immutable"
    CheckpointProvider().delete("id", props(job))
    assert fake.deleted == [object_key(job), object_key(pod_snapshot)]


def test_failed_snapshot_job_fails_the_update(monkeypatch: pytest.MonkeyPatch) -> None:
    job = snapshot_job()
    failed = {"conditions": [{"type": "Failed", "status": "True", "reason": "CaptureFailed"}]}
    fake = FakeClient(objects=[{**job, "status": failed}])
    monkeypatch.setattr(base.Inputs, "client", lambda self: fake)
    monkeypatch.setattr(snapshot_calls, "refuse_foreign", lambda *a, **kw: {})
    # An earlier failure is retried by recreating the SnapshotJob.
    CheckpointProvider().update("id", {}, props(job))
    assert fake.deleted == [object_key(job)] and fake.writes == [object_key(job)]
    fake.objects[object_key(job)] = {**job, "status": failed}
    monkeypatch.setattr(snapshot_calls, "_apply_job", lambda client, ins: None)
    with pytest.raises(CheckpointFailed, match="automatic SnapshotJob failed: CaptureFailed"):
        CheckpointProvider().update("id", {}, props(job))


def test_referenced_pod_snapshot_is_looked_up_never_written(monkeypatch: pytest.MonkeyPatch) -> None:
    (ref,) = render(ckpt_worker(checkpointRef="snap-a")).checkpoints
    fake = FakeClient()
    monkeypatch.setattr(base.Inputs, "client", lambda self: fake)
    created = outs(CheckpointProvider().create(props(ref)))
    assert created["phase"] == "Pending" and "does not exist" in created["message"]
    fake.objects[object_key(ref)] = {**ref, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert outs(CheckpointProvider().update("id", {}, props(ref)))["ready"] is True
    CheckpointProvider().delete("id", props(ref))
    assert fake.writes == [] and fake.deleted == []


def test_compatibility_hash_equals_the_operators_known_answer() -> None:
    """TestComputeSnapshotCompatibilityHashV2KnownAnswer (karya0/dynamo@689a20b4914fa4e8afc0af35e8bd8780f60e4e74
    deploy/operator/internal/checkpoint/compatibility_test.go): the v2 contract, Go-encoded, hashed."""
    ro = {"readOnly": True}
    main = {
        "name": "main",
        "image": "registry.example/worker@sha256:" + "1" * 64,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-m", "dynamo.vllm"],
        "args": ["--model", "/models/model", "--tensor-parallel-size", "1"],
        "workingDir": "/workspace",
        "env": [
            {"name": "MODEL_ROOT", "value": "/models"},
            {"name": "MODEL_PATH", "value": "$(MODEL_ROOT)/model"},
            {"name": "DYN_NAMESPACE", "value": "capture-runtime"},
        ],
        "envFrom": [{"prefix": "WORKER_", "configMapRef": {"name": "worker-config"}}],
        "resources": {
            "limits": {"nvidia.com/gpu": "1", "memory": "64Gi"},
            "requests": {"nvidia.com/gpu": "1", "memory": "32Gi"},
            "claims": [{"name": "accelerator", "request": "gpu"}],
        },
        "volumeMounts": [
            {"name": "models", "mountPath": "/models", **ro},
            {"name": "config", "mountPath": "/etc/worker", **ro},
        ],
        "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False},
    }
    prepare = {
        "name": "prepare",
        "image": "registry.example/prepare@sha256:" + "2" * 64,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c"],
        "args": ["cp /input/config.yaml /output/config.yaml"],
        "volumeMounts": [
            {"name": "config", "mountPath": "/input", **ro},
            {"name": "models", "mountPath": "/output"},
        ],
    }
    requirement = {"key": "nvidia.com/gpu.memory", "operator": "Gt", "values": ["70000"]}
    pod = {
        "containers": [main],
        "initContainers": [prepare],
        "volumes": [
            {"name": "models", "persistentVolumeClaim": {"claimName": "model-cache", **ro}},
            {"name": "config", "configMap": {"name": "worker-config"}},
        ],
        "hostNetwork": True,
        "hostPID": True,
        "shareProcessNamespace": True,
        "securityContext": {"runAsNonRoot": True, "fsGroup": 1000},
        "runtimeClassName": "nvidia",
        "nodeName": "gpu-node-07",
        "nodeSelector": {"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "H100"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [requirement]}]
                }
            }
        },
        "schedulerName": "gpu-scheduler",
        "resourceClaims": [{"name": "accelerator", "resourceClaimName": "gpu-claim"}],
    }
    got = sn.compatibility_hash(pod, "main", "vllm", "IntraPod", "gpu.nvidia.com/h100")
    assert got == "bdd84a0ec0b3c59217f168356fd65f64507e30de28e7d4fe2eda7290dd9f80f1"


def test_existing_snapshot_job_only_gets_its_deletion_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    job = snapshot_job()
    fake = FakeClient(objects=[job])
    monkeypatch.setattr(base.Inputs, "client", lambda self: fake)
    monkeypatch.setattr(snapshot_calls, "refuse_foreign", lambda *a, **kw: {})
    CheckpointProvider().update("id", {}, props(job))
    assert fake.writes == [] and fake.patches == []
    annotations = {**job["metadata"]["annotations"], sn.ANNOTATION_DELETION_POLICY: "Retain"}
    retained = {**job, "metadata": {**job["metadata"], "annotations": annotations}}
    CheckpointProvider().update("id", {}, props(retained))
    path = "/metadata/annotations/nvidia.com~1dynamo-checkpoint-deletion-policy"
    assert fake.patches == [(object_key(job), [{"op": "add", "path": path, "value": "Retain"}])]
    assert fake.writes == []


def test_runtime_version_override_selects_the_snapshot_api_for_an_untagged_image() -> None:
    c = ckpt_worker("my-registry/vllm-runtime:my-tag")
    assert render(c).checkpoints[0]["kind"] == "DynamoCheckpoint"
    (job,) = render({**c, "runtimeVersionOverride": "1.5.0"}).checkpoints
    assert job["kind"] == "SnapshotJob"
