"""Checkpoint/restore, pure parts: identity hash, DGD-managed checkpoint ids and names, the
DynamoCheckpoint and its capture Job, and how a component's pods depend on the checkpoint's
observed readiness (an input: `ready` is None when the checkpoint does not exist yet).

Components whose runtime is at least 1.5.0 checkpoint through the snapshot API instead
(`render.features.snapshot`); the restore functions here hand those to it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from dynamo_infra.api import Problem, v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.api.operatorconfig import DEFAULT_CHECKPOINT_BASE_PATH
from dynamo_infra.render import names
from dynamo_infra.render.context import MAIN_CONTAINER, ComponentContext, GraphContext
from dynamo_infra.render.features import snapshot
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
# Capture pods: the snapshot agent picks up pods labelled as checkpoint sources.
LABEL_CHECKPOINT_SOURCE = "nvidia.com/snapshot-is-checkpoint-source"
# Restore pods: labelled as restore targets; the checkpoint PVC mounted where the agent keeps artifacts.
LABEL_RESTORE_TARGET = "nvidia.com/snapshot-is-restore-target"
STORAGE_VOLUME = "checkpoint-storage"
STORAGE_BASE_PATH = DEFAULT_CHECKPOINT_BASE_PATH
# Pod-template annotations of restore candidates (Immediate policy; a pod webhook restores).
ANNOTATION_RESTORE_CANDIDATE = "nvidia.com/dynamo-checkpoint-restore-candidate"
ANNOTATION_CHECKPOINT_NAME = "nvidia.com/dynamo-checkpoint-name"
ANNOTATION_STARTUP_POLICY = "nvidia.com/dynamo-checkpoint-startup-policy"
DEFAULT_DELETION_POLICY = "Delete"
# Capture Job defaults: one attempt, one hour.
JOB_BACKOFF_LIMIT = 0
JOB_ACTIVE_DEADLINE_S = 3600
# Localhost seccomp profile of capture pods (the operator's default; CRIU cannot dump io_uring).
DEFAULT_SECCOMP_PROFILE = "profiles/block-iouring.json"
# Sidecar injection is disabled on capture pods (a sidecar would keep the Job from completing).
CAPTURE_POD_ANNOTATIONS = {"linkerd.io/inject": "disabled", names.ANNOTATION_ISTIO_INJECT: "false"}
# Downward-API volume from which a restored process re-reads its (new) pod identity.
PODINFO_VOLUME = "podinfo"
PODINFO_PATH = "/etc/podinfo"
PODINFO_ITEMS = (
    ("pod_name", "metadata.name"),
    ("pod_uid", "metadata.uid"),
    ("pod_namespace", "metadata.namespace"),
    ("dyn_namespace", f"metadata.labels['{names.LABEL_NAMESPACE}']"),
    ("dyn_namespace_worker_suffix", f"metadata.labels['{names.LABEL_WORKER_HASH}']"),
    ("dyn_component", f"metadata.labels['{names.LABEL_COMPONENT_TYPE}']"),
    ("dyn_parent_dgd_k8s_name", f"metadata.labels['{names.LABEL_GRAPH}']"),
    ("dyn_parent_dgd_k8s_namespace", "metadata.namespace"),
)
# DynamoCheckpoint phases (`status.phase`).
PHASE_PENDING = "Pending"
PHASE_CREATING = "Creating"
PHASE_READY = "Ready"
PHASE_FAILED = "Failed"
DELETION_POLICY_RETAIN = "Retain"
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


def identity_hash(identity: Manifest) -> str:
    """ComputeIdentityHash: first 16 hex of SHA-256 of the normalized identity (deprecated field)."""
    normalized: Manifest = {
        "model": identity.get("model", ""),
        "backendFramework": identity.get("backendFramework", ""),
    }
    if identity.get("dynamoVersion"):
        normalized["dynamoVersion"] = identity["dynamoVersion"]
    # int32 fields (numbers that crossed Pulumi's wire arrive as floats: 4096.0 must hash as 4096).
    normalized["tensorParallelSize"] = int(identity.get("tensorParallelSize") or 1)
    normalized["pipelineParallelSize"] = int(identity.get("pipelineParallelSize") or 1)
    if identity.get("dtype"):
        normalized["dtype"] = identity["dtype"]
    if identity.get("maxModelLen"):
        normalized["maxModelLen"] = int(identity["maxModelLen"])
    extra = identity.get("extraParameters") or {}
    if extra:
        normalized["extraParameters"] = dict(sorted(extra.items()))
    return hashlib.sha256(go_json(normalized).encode()).hexdigest()[:IDENTITY_HASH_LENGTH]


def checkpoint_id(namespace: str, dgd: str, dgd_uid: str, component: str, worker_hash: str) -> str:
    """DGDCheckpointID: 32 hex of SHA-256 over the owning graph, component and worker generation."""
    payload: Manifest = {}
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


def config_of(c: v1beta1.Component) -> Manifest | None:
    exp = c.experimental.to_wire() if c.experimental else {}
    ckpt = exp.get("checkpoint")
    return dict(ckpt) if ckpt and ckpt.get("enabled") else None


# The operator's graph controller error for a checkpoint component while checkpointing is off.
CHECKPOINT_DISABLED = "component {name}: checkpoint functionality is disabled in the operator configuration"


def gate_problems(g: GraphContext) -> list[Problem]:
    """Components with checkpointing enabled stop the graph when the cluster has it off (after the
    discovery RBAC and claim templates, before any component)."""
    if g.options.checkpoint.enabled:
        return []
    return [
        Problem(f"spec.components[{c.name}].experimental.checkpoint", CHECKPOINT_DISABLED.format(name=c.name))
        for c in g.dgd.spec.components or []
        if config_of(c) is not None
    ]


def startup_policy(config: Manifest | None) -> str:
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
    if snapshot.applies(ctx):
        return {}  # the operator's private webhook handoff: restored pods are rendered once Ready
    name = str(config.get("checkpointRef") or "") or checkpoint_name(
        checkpoint_id(ctx.namespace, ctx.parent_name, "", ctx.name, ctx.worker_hash or "")
    )
    return {
        ANNOTATION_RESTORE_CANDIDATE: "true",
        ANNOTATION_CHECKPOINT_NAME: name,
        ANNOTATION_STARTUP_POLICY: IMMEDIATE,
    }


def restores_in_template(ctx: ComponentContext) -> bool:
    """WaitForCheckpoint and observed Ready: the pod templates themselves are restore targets (snapshot
    API: either policy)."""
    if snapshot.applies(ctx):
        return snapshot.restores(ctx)
    return (
        ctx.options.checkpoint.enabled
        and ctx.checkpoint is not None
        and bool(ctx.checkpoint_ready)
        and startup_policy(ctx.checkpoint) == WAIT_FOR_CHECKPOINT
    )


def _target(ctx: ComponentContext) -> str:
    return str((ctx.checkpoint or {}).get("targetContainerName") or MAIN_CONTAINER)


def restore_target_metadata(ctx: ComponentContext) -> tuple[dict[str, str], dict[str, str]]:
    """ApplyRestoreTargetMetadata: pod labels and annotations of a restore target (else empty).

    A `checkpointRef` names a checkpoint whose ID only the cluster knows: no ID label then. Through the
    snapshot API (`workloads.capture.restore_target_metadata`) the annotations name the capture instead.
    """
    if not restores_in_template(ctx) or snapshot.applies(ctx):
        return {}, {}
    labels = {LABEL_RESTORE_TARGET: "true"}
    if not (ctx.checkpoint or {}).get("checkpointRef"):
        labels[LABEL_CHECKPOINT_ID] = checkpoint_id(
            ctx.namespace, ctx.parent_name, "", ctx.name, ctx.worker_hash or ""
        )
    annotations = {ANNOTATION_ARTIFACT_VERSION: ARTIFACT_VERSION, ANNOTATION_TARGET_CONTAINERS: _target(ctx)}
    return labels, annotations


def restore_pod_spec(
    ctx: ComponentContext, pod: Manifest, seccomp_profile: str = DEFAULT_SECCOMP_PROFILE
) -> Manifest:
    """PrepareRestorePodSpec for a Ready checkpoint: the target container restored (standby env,
    restore startup probe), the control directory, the checkpoint PVC (`checkpoint.storagePvc`;
    found from the snapshot-agent DaemonSet by the operator when unset), Localhost seccomp."""
    if snapshot.applies(ctx):
        return snapshot.restore_pod_spec(ctx, pod)
    target, claim = _target(ctx), ctx.options.checkpoint.storage_pvc
    containers = []
    for c in pod.get("containers") or []:
        if c.get("name") == target:
            c = restore_container(c)
            mounts = [*(c.get("volumeMounts") or [])]
            if claim and not any(m.get("name") == STORAGE_VOLUME for m in mounts):
                mounts.append({"name": STORAGE_VOLUME, "mountPath": STORAGE_BASE_PATH})
            mounts.append({"name": CONTROL_VOLUME, "mountPath": CONTROL_PATH, "subPath": target})
            env = [*(c.get("env") or []), {"name": CONTROL_ENV, "value": CONTROL_PATH}]
            c = {**c, "env": env, "volumeMounts": mounts}
        containers.append(c)
    volumes = [*(pod.get("volumes") or [])]
    if claim and not any(v.get("name") == STORAGE_VOLUME for v in volumes):
        volumes.append({"name": STORAGE_VOLUME, "persistentVolumeClaim": {"claimName": claim}})
    volumes.append({"name": CONTROL_VOLUME, "emptyDir": {}})
    out = {**pod, "containers": containers, "volumes": volumes}
    if seccomp_profile:
        seccomp = {"type": "Localhost", "localhostProfile": seccomp_profile}
        out["securityContext"] = {**(pod.get("securityContext") or {}), "seccompProfile": seccomp}
    return out


def restore_container(container: Manifest) -> Manifest:
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
    g: GraphContext, c: v1beta1.Component, worker_hash: str | None, pod_spec: Manifest
) -> Manifest | None:
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
    pod_labels = {k: v for k, v in labels.items() if k != LABEL_CHECKPOINT_ID}
    template = {"metadata": {"labels": dict(sorted(pod_labels.items()))}, "spec": pod_spec}
    job: Manifest = {"podTemplateSpec": template, "targetContainerName": target}
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


def checkpoint_key(ckpt: Manifest) -> str:
    """CheckpointID of a DynamoCheckpoint: its checkpoint-id label (DGD-managed), else its identity hash."""
    labels = (ckpt.get("metadata") or {}).get("labels") or {}
    return str(
        labels.get(LABEL_CHECKPOINT_ID) or identity_hash((ckpt.get("spec") or {}).get("identity") or {})
    )


def deletion_policy(ckpt: Manifest) -> str:
    """`Delete` (default: the capture's objects go with the checkpoint) or `Retain`."""
    annotations = (ckpt.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(ANNOTATION_DELETION_POLICY) or DEFAULT_DELETION_POLICY)


def _podinfo_volume() -> Manifest:
    items = [{"path": path, "fieldRef": {"fieldPath": field}} for path, field in PODINFO_ITEMS]
    return {"name": PODINFO_VOLUME, "downwardAPI": {"items": items}}


def _capture_container(c: Manifest, target: str) -> Manifest:
    """The target container as the snapshot agent needs it: quiesce signal, control dir, no restarts."""
    c = {k: v for k, v in c.items() if k not in ("livenessProbe", "startupProbe")}
    c["readinessProbe"] = {"exec": {"command": ["cat", READY_FOR_SNAPSHOT]}, "periodSeconds": 1}
    c["env"] = [*(c.get("env") or []), {"name": CONTROL_ENV, "value": CONTROL_PATH}]
    mounts = [*(c.get("volumeMounts") or [])]
    if not any(m.get("name") == PODINFO_VOLUME for m in mounts):
        mounts.append({"name": PODINFO_VOLUME, "mountPath": PODINFO_PATH, "readOnly": True})
    mounts.append({"name": CONTROL_VOLUME, "mountPath": CONTROL_PATH, "subPath": target})
    c["volumeMounts"] = mounts
    if gpu_count(c.get("resources")) > 1:
        c["command"] = [*CUDA_CHECKPOINT_LAUNCH, *(c.get("command") or [])]
    return c


def capture_job(ckpt: Manifest, seccomp_profile: str = DEFAULT_SECCOMP_PROFILE) -> Manifest:
    """The capture Job the checkpoint controller runs for a DynamoCheckpoint.

    `seccomp_profile` is the Localhost profile set on the pod ("" sets none).
    """
    meta = ckpt["metadata"]
    name, ckpt_id = meta["name"], checkpoint_key(ckpt)
    version = str((meta.get("annotations") or {}).get(ANNOTATION_ARTIFACT_VERSION) or ARTIFACT_VERSION)
    job = ckpt["spec"]["job"]
    target = job.get("targetContainerName") or MAIN_CONTAINER
    template = job.get("podTemplateSpec") or {}
    pod = dict(template.get("spec") or {})
    containers = [
        _capture_container(c, target) if c.get("name") == target else c for c in pod.get("containers") or []
    ]
    volumes = [*(pod.get("volumes") or [])]
    if not any(v.get("name") == PODINFO_VOLUME for v in volumes):
        volumes.append(_podinfo_volume())
    volumes.append({"name": CONTROL_VOLUME, "emptyDir": {}})
    pod = {**pod, "containers": containers, "restartPolicy": "Never", "volumes": volumes}
    if seccomp_profile:
        seccomp = {"type": "Localhost", "localhostProfile": seccomp_profile}
        pod["securityContext"] = {**(pod.get("securityContext") or {}), "seccompProfile": seccomp}
    template_meta = template.get("metadata") or {}
    pod_labels = {
        **(template_meta.get("labels") or {}),
        LABEL_CHECKPOINT_SOURCE: "true",
        LABEL_CHECKPOINT_ID: ckpt_id,
        LABEL_SNAPSHOT_OWNER: name,
    }
    pod_annotations = {
        **(template_meta.get("annotations") or {}),
        **CAPTURE_POD_ANNOTATIONS,
        ANNOTATION_ARTIFACT_VERSION: version,
        ANNOTATION_TARGET_CONTAINERS: target,
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{JOB_PREFIX}{ckpt_id}-{version}",
            "namespace": meta["namespace"],
            "labels": {LABEL_CHECKPOINT_ID: ckpt_id},
        },
        "spec": {
            "backoffLimit": JOB_BACKOFF_LIMIT,
            "activeDeadlineSeconds": int(job.get("activeDeadlineSeconds") or JOB_ACTIVE_DEADLINE_S),
            "template": {
                "metadata": {
                    "labels": dict(sorted(pod_labels.items())),
                    "annotations": dict(sorted(pod_annotations.items())),
                },
                "spec": pod,
            },
        },
    }


def job_phase(job: Manifest | None) -> tuple[str, str]:
    """The checkpoint phase a capture Job implies, and the reason when it failed.

    Without a snapshot agent, Ready means the Job is Complete (the operator also needs the
    PodSnapshot bound and succeeded).
    """
    if job is None:
        return PHASE_PENDING, ""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("status") != "True":
            continue
        if cond.get("type") == "Failed":
            detail = cond.get("message") or cond.get("reason") or ""
            return PHASE_FAILED, f"checkpoint job failed: {detail}" if detail else "checkpoint job failed"
        if cond.get("type") == "Complete":
            return PHASE_READY, ""
    return PHASE_CREATING, ""


def status_entry(name: str, ckpt_id: str, ready: bool | None, identity: str = "") -> Manifest:
    """`status.checkpoints[component]` of the DGD (`identity`: the checkpoint's identity hash)."""
    entry: Manifest = {"checkpointName": name, "checkpointID": ckpt_id}
    if identity:
        entry["identityHash"] = identity
    return {**entry, "ready": bool(ready)}
