"""Checkpoint/restore, pure parts: identity hash, DGD-managed checkpoint ids and names, the
DynamoCheckpoint and its capture Job, and how a component's pods depend on the checkpoint's
observed readiness (an input: `ready` is None when the checkpoint does not exist yet)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from dynamo_infra.api import v1beta1
from dynamo_infra.render import names
from dynamo_infra.render.context import MAIN_CONTAINER, ComponentContext, GraphContext, Obj
from dynamo_infra.render.multinode import gpu_count

API_VERSION = "nvidia.com/v1alpha1"
KIND = "DynamoCheckpoint"
# Checkpoint names: `checkpoint-<32 hex>`; capture Jobs `checkpoint-job-<id>-<artifact version>`.
NAME_PREFIX = "checkpoint-"
JOB_PREFIX = "checkpoint-job-"
ARTIFACT_VERSION = "1"
IDENTITY_HASH_LENGTH = 16
CHECKPOINT_ID_LENGTH = 32
# Startup policies: start pods at once (restore when possible), or keep replicas at 0 until Ready.
IMMEDIATE = "Immediate"
WAIT_FOR_CHECKPOINT = "WaitForCheckpoint"
# Labels and annotations of DGD-managed checkpoints.
LABEL_CHECKPOINT_ID = "nvidia.com/snapshot-checkpoint-id"
LABEL_SNAPSHOT_OWNER = "nvidia.com/snapshot-owner"
ANNOTATION_ARTIFACT_VERSION = "nvidia.com/snapshot-artifact-version"
ANNOTATION_AUTO = "nvidia.com/dynamo-auto-checkpoint"
ANNOTATION_DELETION_POLICY = "nvidia.com/dynamo-checkpoint-deletion-policy"
ANNOTATION_TARGET_CONTAINERS = "nvidia.com/snapshot-target-containers"
# Pod-template annotations of restore candidates (Immediate policy; a pod webhook restores).
ANNOTATION_RESTORE_CANDIDATE = "nvidia.com/dynamo-checkpoint-restore-candidate"
ANNOTATION_CHECKPOINT_NAME = "nvidia.com/dynamo-checkpoint-name"
ANNOTATION_STARTUP_POLICY = "nvidia.com/dynamo-checkpoint-startup-policy"
DEFAULT_DELETION_POLICY = "Delete"
# Capture Job defaults: one attempt, one hour.
JOB_BACKOFF_LIMIT = 0
JOB_ACTIVE_DEADLINE_S = 3600
# The snapshot agent's control directory (sentinel files) in capture and restore pods.
CONTROL_VOLUME = "snapshot-control"
CONTROL_PATH = "/snapshot-control"
CONTROL_ENV = "DYN_SNAPSHOT_CONTROL_DIR"
READY_FOR_SNAPSHOT = f"{CONTROL_PATH}/ready-for-snapshot"
RESTORE_COMPLETE = f"{CONTROL_PATH}/restore-complete"
RESTORE_STANDBY_ENV = "DYN_SNAPSHOT_RESTORE_STANDBY"
# Restored pods: a startup probe polled every second for up to 30 minutes.
RESTORE_STARTUP = {"initialDelaySeconds": 0, "periodSeconds": 1, "failureThreshold": 1800}
# Multi-GPU processes are captured through cuda-checkpoint.
CUDA_CHECKPOINT_LAUNCH = ["cuda-checkpoint", "--launch-job"]


def go_json(payload: Any) -> str:
    """json.Marshal: compact, map keys sorted, HTML characters escaped."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, esc)
    return text


def identity_hash(identity: Obj) -> str:
    """ComputeIdentityHash: first 16 hex of SHA-256 of the normalized identity (deprecated field)."""
    normalized: Obj = {
        "model": identity.get("model", ""),
        "backendFramework": identity.get("backendFramework", ""),
    }
    if identity.get("dynamoVersion"):
        normalized["dynamoVersion"] = identity["dynamoVersion"]
    normalized["tensorParallelSize"] = identity.get("tensorParallelSize") or 1
    normalized["pipelineParallelSize"] = identity.get("pipelineParallelSize") or 1
    if identity.get("dtype"):
        normalized["dtype"] = identity["dtype"]
    if identity.get("maxModelLen"):
        normalized["maxModelLen"] = identity["maxModelLen"]
    extra = identity.get("extraParameters") or {}
    if extra:
        normalized["extraParameters"] = dict(sorted(extra.items()))
    return hashlib.sha256(go_json(normalized).encode()).hexdigest()[:IDENTITY_HASH_LENGTH]


def checkpoint_id(namespace: str, dgd: str, dgd_uid: str, component: str, worker_hash: str) -> str:
    """DGDCheckpointID: 32 hex of SHA-256 over the owning graph, component and worker generation."""
    payload: Obj = {}
    if namespace:
        payload["namespace"] = namespace
    payload["dgdName"] = dgd
    if dgd_uid:
        payload["dgdUID"] = dgd_uid
    payload["componentName"] = component
    if worker_hash:
        payload["workerHash"] = worker_hash
    return hashlib.sha256(go_json(payload).encode()).hexdigest()[:CHECKPOINT_ID_LENGTH]


def checkpoint_name(ckpt_id: str) -> str:
    return f"{NAME_PREFIX}{ckpt_id}"


def job_name(ckpt_id: str) -> str:
    return f"{JOB_PREFIX}{ckpt_id}-{ARTIFACT_VERSION}"


def config_of(c: v1beta1.Component) -> Obj | None:
    exp = c.experimental.to_wire() if c.experimental else {}
    ckpt = exp.get("checkpoint")
    return dict(ckpt) if ckpt and ckpt.get("enabled") else None


def startup_policy(config: Obj | None) -> str:
    return str((config or {}).get("startupPolicy") or IMMEDIATE)


def gates_replicas(ctx: ComponentContext, ready: bool | None) -> bool:
    """WaitForCheckpoint keeps the component at 0 replicas until its checkpoint is Ready."""
    if not ctx.options.checkpoint.enabled or ctx.checkpoint is None:
        return False
    return startup_policy(ctx.checkpoint) == WAIT_FOR_CHECKPOINT and not ready


def managed_name(g: GraphContext, c: v1beta1.Component, worker_hash: str | None, dgd_uid: str = "") -> str:
    """The checkpoint a component restores from: its `checkpointRef`, else the DGD-managed one."""
    config = config_of(c) or {}
    if config.get("checkpointRef"):
        return str(config["checkpointRef"])
    return checkpoint_name(checkpoint_id(g.namespace, g.name, dgd_uid, c.name, worker_hash or ""))


def restore_candidate_annotations(ctx: ComponentContext) -> dict[str, str]:
    """Immediate policy: pod templates stay stable and only name the checkpoint to restore from
    (a pod webhook restores new pods once it is Ready)."""
    config = ctx.checkpoint
    if not ctx.options.checkpoint.enabled or config is None or startup_policy(config) != IMMEDIATE:
        return {}
    name = str(config.get("checkpointRef") or "") or checkpoint_name(
        checkpoint_id(ctx.namespace, ctx.parent_name, "", ctx.name, ctx.worker_hash or "")
    )
    return {
        ANNOTATION_RESTORE_CANDIDATE: "true",
        ANNOTATION_CHECKPOINT_NAME: name,
        ANNOTATION_STARTUP_POLICY: IMMEDIATE,
    }


def restore_container(container: Obj) -> Obj:
    """A main container restored from a Ready checkpoint (WaitForCheckpoint policy)."""
    source = (
        container.get("startupProbe") or container.get("livenessProbe") or container.get("readinessProbe")
    )
    if source:
        handler = {k: v for k, v in source.items() if k in ("httpGet", "tcpSocket", "grpc", "exec")}
        startup = {**handler, **RESTORE_STARTUP}
    else:
        startup = {"exec": {"command": ["cat", RESTORE_COMPLETE]}, **RESTORE_STARTUP}
    env = [*(container.get("env") or []), {"name": RESTORE_STANDBY_ENV, "value": "1"}]
    return {**container, "env": env, "startupProbe": startup}


def checkpoint_object(
    g: GraphContext, c: v1beta1.Component, worker_hash: str | None, pod_spec: Obj
) -> Obj | None:
    """The DGD-managed DynamoCheckpoint of a component (none with `checkpointRef`)."""
    config = config_of(c)
    if config is None or config.get("checkpointRef"):
        return None
    ckpt_id = checkpoint_id(g.namespace, g.name, "", c.name, worker_hash or "")
    policy = str(config.get("deletionPolicy") or DEFAULT_DELETION_POLICY)
    labels = {LABEL_CHECKPOINT_ID: ckpt_id, names.LABEL_GRAPH: g.name, names.LABEL_COMPONENT: c.name}
    if worker_hash:
        labels[names.LABEL_WORKER_HASH] = worker_hash
    target = str(config.get("targetContainerName") or MAIN_CONTAINER)
    identity = dict(config.get("identity") or {"model": "", "backendFramework": g.backend})
    job: Obj = {"podTemplateSpec": {"spec": pod_spec}, "targetContainerName": target}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": checkpoint_name(ckpt_id),
            "namespace": g.namespace,
            "labels": dict(sorted(labels.items())),
            "annotations": {
                ANNOTATION_ARTIFACT_VERSION: ARTIFACT_VERSION,
                ANNOTATION_AUTO: "true",
                ANNOTATION_DELETION_POLICY: policy,
            },
        },
        "spec": {"identity": identity, "job": job},
    }


def capture_job(ckpt: Obj) -> Obj:
    """The capture Job the checkpoint controller runs for a DynamoCheckpoint."""
    name = ckpt["metadata"]["name"]
    ckpt_id = ckpt["metadata"]["labels"][LABEL_CHECKPOINT_ID]
    job = ckpt["spec"]["job"]
    target = job.get("targetContainerName") or MAIN_CONTAINER
    pod = dict((job.get("podTemplateSpec") or {}).get("spec") or {})
    containers = []
    for c in pod.get("containers") or []:
        if c.get("name") == target:
            c = {k: v for k, v in c.items() if k not in ("livenessProbe", "startupProbe")}
            c["readinessProbe"] = {"exec": {"command": ["cat", READY_FOR_SNAPSHOT]}, "periodSeconds": 1}
            c["env"] = [*(c.get("env") or []), {"name": CONTROL_ENV, "value": CONTROL_PATH}]
            mount = {"name": CONTROL_VOLUME, "mountPath": CONTROL_PATH, "subPath": target}
            c["volumeMounts"] = [*(c.get("volumeMounts") or []), mount]
            if gpu_count(c.get("resources")) > 1:
                c["command"] = [*CUDA_CHECKPOINT_LAUNCH, *(c.get("command") or [])]
        containers.append(c)
    pod = {
        **pod,
        "containers": containers,
        "restartPolicy": "Never",
        "volumes": [*(pod.get("volumes") or []), {"name": CONTROL_VOLUME, "emptyDir": {}}],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job_name(ckpt_id), "namespace": ckpt["metadata"]["namespace"]},
        "spec": {
            "backoffLimit": JOB_BACKOFF_LIMIT,
            "activeDeadlineSeconds": JOB_ACTIVE_DEADLINE_S,
            "template": {
                "metadata": {
                    "labels": {LABEL_SNAPSHOT_OWNER: name},
                    "annotations": {
                        ANNOTATION_TARGET_CONTAINERS: target,
                        "linkerd.io/inject": "disabled",
                        names.ANNOTATION_ISTIO_INJECT: "false",
                    },
                },
                "spec": pod,
            },
        },
    }


def status_entry(name: str, ckpt_id: str, ready: bool | None) -> Obj:
    """`status.checkpoints[component]` of the DGD."""
    return {"checkpointName": name, "checkpointID": ckpt_id, "ready": bool(ready)}
