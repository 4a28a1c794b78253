"""Checkpoints of runtimes from 1.5.0 on (`releases.SNAPSHOT_API_CHECKPOINTS`): the ai-dynamo/snapshot API.

DynamoCheckpoint is gone (PR #14076). A component's `experimental.checkpoint` either names an existing
namespaced `PodSnapshot` (`checkpointRef`) or asks for an automatic capture: one immutable
`SnapshotJob` per graph component and worker generation, which Snapshot runs and captures into a
`PodSnapshot` of the same name. Restored pods carry Snapshot's pod contract: the annotation
`nvidia.com/restore-from` (and `nvidia.com/restore-container-map` when the destination is not the
captured container), the control volume and Dynamo's standby env and startup gate.

The operator hands a restore to its pod-create webhook through private `nvidia.com/dynamo-restore-*`
template annotations pinned to cluster-assigned UIDs; there is no such webhook without the operator,
so once the snapshot is observed Ready the pod templates are rendered as that webhook shapes pods.

Ported from michaelfeil/dynamo 80b177f2 `deploy/operator/internal/controller/dgd_checkpoints_reconciler.go`
(buildAutomaticSnapshotJob, buildCheckpointJobPodTemplate, resolveAutomaticSnapshotJob), e00a35f9
`internal/checkpoint/compatibility.go` (ComputeSnapshotCompatibilityHash), `internal/checkpoint`
DGDCheckpointID and EnsureRestoreStartupProbe, `internal/consts`, and ai-dynamo/snapshot
`api/v1alpha1/snapshotjob_types.go`, `api/podcontract/restore_pod.go` (Build).
"""

from __future__ import annotations

import hashlib
from typing import Any

from dynamo_infra.api import DynamoValidationError, Problem
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.api.releases import SNAPSHOT_API_CHECKPOINTS
from dynamo_infra.render.context import MAIN_CONTAINER, ComponentContext
from dynamo_infra.render.go import gojson

API_VERSION = "nvidia.com/v1alpha1"
POD_SNAPSHOT = "PodSnapshot"
SNAPSHOT_JOB = "SnapshotJob"
# Their CRDs ship with ai-dynamo/snapshot's chart, not with the operator.
CRD_SOURCE = (
    "the ai-dynamo/snapshot chart (charts/snapshot: CRDs podsnapshots, snapshotjobs, podsnapshotcontents)"
)
# Label Snapshot puts on the PodSnapshot a SnapshotJob produced (the SnapshotJob's name).
LABEL_SNAPSHOT_JOB = "nvidia.com/snapshot-job"
# Automatic captures: SnapshotJob (and the PodSnapshot it produces) `checkpoint-<32 hex>`.
NAME_PREFIX = "checkpoint-"
CHECKPOINT_ID_LENGTH = 32
# SnapshotJob spec.activeDeadlineSeconds of an automatic capture.
ACTIVE_DEADLINE_S = 3600
# Startup policies (as for DynamoCheckpoint).
IMMEDIATE = "Immediate"
WAIT_FOR_CHECKPOINT = "WaitForCheckpoint"
DEFAULT_DELETION_POLICY = "Delete"
DELETION_POLICY_RETAIN = "Retain"
# Dynamo's metadata on automatic captures (SnapshotJob and PodSnapshot template).
ANNOTATION_AUTO = "nvidia.com/dynamo-auto-checkpoint"
ANNOTATION_DELETION_POLICY = "nvidia.com/dynamo-checkpoint-deletion-policy"
ANNOTATION_OWNER_UID = "nvidia.com/dynamo-checkpoint-owner-uid"
ANNOTATION_COMPATIBILITY_VERSION = "nvidia.com/dynamo-snapshot-compatibility-version"
ANNOTATION_COMPATIBILITY_HASH = "nvidia.com/dynamo-snapshot-compatibility-hash"
ANNOTATION_GMS_MODE = "nvidia.com/dynamo-snapshot-gms-mode"
COMPATIBILITY_VERSION = "v2"
GMS_MODE_DISABLED = "disabled"
# Snapshot's pod contract for restore.
ANNOTATION_RESTORE_FROM = "nvidia.com/restore-from"
ANNOTATION_RESTORE_CONTAINER_MAP = "nvidia.com/restore-container-map"
CONTROL_VOLUME = "snapshot-control"
CONTROL_PATH = "/snapshot-control"
CONTROL_ENVS = ("SNAPSHOT_CONTROL_DIR", "DYN_SNAPSHOT_CONTROL_DIR")
# Standby-aware Dynamo entrypoints stay inert until Snapshot restores into them (1.6.1 runtime name).
RESTORE_STANDBY_ENV = "SNAPSHOT_RESTORE_STANDBY"
# Restored containers: the startup gate polls every second for up to 30 minutes.
RESTORE_STARTUP = {
    "initialDelaySeconds": 0,
    "periodSeconds": 1,
    "failureThreshold": 1800,
    "successThreshold": 1,
}
RESTORE_COMPLETE = f"{CONTROL_PATH}/restore-complete"
# Localhost seccomp profile of restore destinations (CRIU cannot restore io_uring).
SECCOMP_PROFILE = "profiles/block-iouring.json"
# SnapshotJob / PodSnapshot conditions.
CONDITION_COMPLETED = "Completed"
CONDITION_FAILED = "Failed"
CONDITION_READY = "Ready"
# Phases reported by the checkpoint provider (as for DynamoCheckpoint).
PHASE_PENDING = "Pending"
PHASE_CREATING = "Creating"
PHASE_READY = "Ready"
PHASE_FAILED = "Failed"

# Restore-time env the destination pod refreshes: not part of a snapshot's compatibility identity.
RESTORE_ENV_NAMES = frozenset(
    {
        "CONTAINER_NAME",
        "DYN_COMPONENT",
        "DYN_DISCOVERY_BACKEND",
        "DYN_EVENT_PLANE",
        "DYN_EVENT_PLANE_HOST",
        "DYN_GMS_USE_V1",
        "DYN_HEALTH_CHECK_ENABLED",
        "DYN_KUBE_DISCOVERY_MODE",
        "DYN_NAMESPACE",
        "DYN_NAMESPACE_WORKER_SUFFIX",
        "DYN_PARENT_DGD_K8S_NAME",
        "DYN_PARENT_DGD_K8S_NAMESPACE",
        "DYN_REQUEST_PLANE",
        "DYN_SYSTEM_HEALTH_PATH",
        "DYN_SYSTEM_HOST",
        "DYN_SYSTEM_LIVE_PATH",
        "DYN_SYSTEM_PORT",
        "DYN_SYSTEM_STARTING_HEALTH_STATUS",
        "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS",
        "DYN_TCP_LISTEN_BACKLOG",
        "DYN_TCP_RESPONSE_STREAM_HOST",
        "DYN_TCP_RESPONSE_STREAM_PORT",
        "DYN_TCP_RPC_HOST",
        "DYN_TCP_RPC_PORT",
        "DYN_VLLM_GMS_SHADOW_MODE",
        "ENGINE_ID",
        "ETCD_ENDPOINTS",
        "FAILOVER_LOCK_PATH",
        "MODEL_EXPRESS_URL",
        "NATS_SERVER",
        "POD_NAME",
        "POD_NAMESPACE",
        "POD_UID",
        "PROMETHEUS_ENDPOINT",
    }
)
# Container fields that shape the Kubernetes lifecycle, not whether a captured process can resume.
_LIFECYCLE_FIELDS = (
    "lifecycle",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "ports",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "resizePolicy",
    "stdin",
    "stdinOnce",
    "tty",
)
# The compatibility contract as Go encodes it (snapshotCompatibilityContract).
_CONTRACT = "checkpoint.snapshotCompatibilityContract"
_CONTRACT_FIELDS = (
    gojson.GoField("version", "string"),
    gojson.GoField("backendFramework", "string"),
    gojson.GoField("gmsMode", "string"),
    gojson.GoField("gmsDeviceClassName", "string", omitempty=True),
    gojson.GoField("targetContainer", "core/v1.Container"),
    gojson.GoField("initContainers", "[]core/v1.Container", omitempty=True),
    gojson.GoField("volumes", "[]core/v1.Volume", omitempty=True),
    gojson.GoField("hostNetwork", "bool", omitempty=True),
    gojson.GoField("hostPID", "bool", omitempty=True),
    gojson.GoField("hostIPC", "bool", omitempty=True),
    gojson.GoField("shareProcessNamespace", "*bool", omitempty=True),
    gojson.GoField("securityContext", "*core/v1.PodSecurityContext", omitempty=True),
    gojson.GoField("runtimeClassName", "*string", omitempty=True),
    gojson.GoField("nodeName", "string", omitempty=True),
    gojson.GoField("nodeSelector", "map[string]string", omitempty=True),
    gojson.GoField("nodeAffinity", "*core/v1.NodeAffinity", omitempty=True),
    gojson.GoField("schedulerName", "string", omitempty=True),
    gojson.GoField("resourceClaims", "[]core/v1.PodResourceClaim", omitempty=True),
)


def applies(ctx: ComponentContext) -> bool:
    """The component checkpoints through the snapshot API (its runtime is at least 1.5.0)."""
    return ctx.checkpoint is not None and SNAPSHOT_API_CHECKPOINTS.enabled(ctx.runtime_version)


def target_container(ctx: ComponentContext) -> str:
    return str((ctx.checkpoint or {}).get("targetContainerName") or MAIN_CONTAINER)


def startup_policy(ctx: ComponentContext) -> str:
    return str((ctx.checkpoint or {}).get("startupPolicy") or IMMEDIATE)


def _go_json(value: Any) -> str:
    """json.Marshal of a struct of strings: compact, in field order, HTML characters escaped."""
    return "{" + ",".join(f"{gojson.quote(k)}:{gojson.quote(v)}" for k, v in value.items()) + "}"


def checkpoint_id(
    namespace: str, dgd: str, dgd_uid: str, component: str, worker_hash: str, compatibility_hash: str
) -> str:
    """DGDCheckpointID: 32 hex of SHA-256 over graph, component, worker generation and compatibility."""
    fields = {
        "namespace": namespace,
        "dgdName": dgd,
        "dgdUID": dgd_uid,
        "componentName": component,
        "workerHash": worker_hash,
        "compatibilityHash": compatibility_hash,
        "compatibilityVersion": COMPATIBILITY_VERSION,
    }
    kept = {k: v for k, v in fields.items() if v or k in ("dgdName", "componentName")}
    return hashlib.sha256(_go_json(kept).encode()).hexdigest()[:CHECKPOINT_ID_LENGTH]


def _canonical_container(container: Manifest, keep_name: bool) -> Manifest:
    c = {k: v for k, v in container.items() if k not in _LIFECYCLE_FIELDS}
    if not keep_name:
        c["name"] = ""
    c["env"] = [e for e in c.get("env") or [] if e.get("name") not in RESTORE_ENV_NAMES]
    if c.get("volumeMounts"):
        c["volumeMounts"] = sorted(
            c["volumeMounts"], key=lambda m: (m.get("mountPath", ""), m.get("name", ""))
        )
    if c.get("volumeDevices"):
        c["volumeDevices"] = sorted(
            c["volumeDevices"], key=lambda d: (d.get("devicePath", ""), d.get("name", ""))
        )
    claims = (c.get("resources") or {}).get("claims")
    if claims:
        ordered = sorted(claims, key=lambda x: (x.get("name", ""), x.get("request", "")))
        c["resources"] = {**c["resources"], "claims": ordered}
    return c


def compatibility_hash(
    pod: Manifest, target: str, backend: str, gms_mode: str = GMS_MODE_DISABLED, gms_device_class: str = ""
) -> str:
    """ComputeSnapshotCompatibilityHash: SHA-256 of the portable identity of one captured process."""
    containers = {c.get("name"): c for c in pod.get("containers") or []}
    if target not in containers:
        raise ValueError(f"snapshot compatibility target container {target!r} not found")
    inits = pod.get("initContainers") or []
    used = {m.get("name") for c in (containers[target], *inits) for m in c.get("volumeMounts") or []}
    used |= {d.get("name") for c in (containers[target], *inits) for d in c.get("volumeDevices") or []}
    contract: Manifest = {
        "version": COMPATIBILITY_VERSION,
        "backendFramework": backend,
        "gmsMode": gms_mode,
        "gmsDeviceClassName": gms_device_class,
        "targetContainer": _canonical_container(containers[target], keep_name=False),
        "initContainers": [_canonical_container(c, keep_name=True) for c in inits] or None,
        "volumes": sorted(
            (v for v in pod.get("volumes") or [] if v.get("name") in used), key=lambda v: v["name"]
        ),
        "hostNetwork": bool(pod.get("hostNetwork")),
        "hostPID": bool(pod.get("hostPID")),
        "hostIPC": bool(pod.get("hostIPC")),
        "shareProcessNamespace": pod.get("shareProcessNamespace"),
        "securityContext": pod.get("securityContext"),
        "runtimeClassName": pod.get("runtimeClassName"),
        "nodeName": pod.get("nodeName") or "",
        "nodeSelector": pod.get("nodeSelector"),
        "nodeAffinity": (pod.get("affinity") or {}).get("nodeAffinity"),
        "schedulerName": pod.get("schedulerName") or "",
        "resourceClaims": sorted(pod.get("resourceClaims") or [], key=lambda r: r.get("name", "")) or None,
    }
    encoder = gojson.Encoder({_CONTRACT: _CONTRACT_FIELDS})
    return hashlib.sha256(encoder.marshal(contract, _CONTRACT).encode()).hexdigest()


def unsupported(ctx: ComponentContext, message: str) -> DynamoValidationError:
    return DynamoValidationError([Problem(f"spec.components[{ctx.name}].experimental.checkpoint", message)])


def restores(ctx: ComponentContext) -> bool:
    """Pods restore once the snapshot is observed Ready, whatever the startup policy."""
    return ctx.options.checkpoint.enabled and applies(ctx) and bool(ctx.checkpoint_ready)


def destinations(ctx: ComponentContext) -> list[str]:
    """Restore destinations: the target container (failover with a checkpoint, whose engines would all
    be destinations, is refused by admission in 1.6)."""
    return [target_container(ctx)]


def _restore_startup(container: Manifest) -> Manifest:
    """EnsureRestoreStartupProbe: the workload's own probe with restore cadence, else the sentinel."""
    source = (
        container.get("startupProbe") or container.get("livenessProbe") or container.get("readinessProbe")
    )
    if source:
        return {**source, **RESTORE_STARTUP}
    return {"exec": {"command": ["cat", RESTORE_COMPLETE]}, "timeoutSeconds": 1, **RESTORE_STARTUP}


def _restore_container(c: Manifest) -> Manifest:
    env = [e for e in c.get("env") or [] if e.get("name") not in (*CONTROL_ENVS, RESTORE_STANDBY_ENV)]
    env += [{"name": n, "value": CONTROL_PATH} for n in CONTROL_ENVS]
    env.append({"name": RESTORE_STANDBY_ENV, "value": "1"})
    mounts = [m for m in c.get("volumeMounts") or [] if m.get("name") != CONTROL_VOLUME]
    mounts.append({"name": CONTROL_VOLUME, "mountPath": CONTROL_PATH, "subPath": c["name"]})
    security = dict(c.get("securityContext") or {})
    security.setdefault("seccompProfile", {"type": "Localhost", "localhostProfile": SECCOMP_PROFILE})
    return {
        **c,
        "env": env,
        "volumeMounts": mounts,
        "securityContext": security,
        "startupProbe": _restore_startup(c),
    }


def restore_pod_spec(ctx: ComponentContext, pod: Manifest) -> Manifest:
    """The pod spec as the operator's restore webhook shapes it (podcontract.Build + Dynamo standby)."""
    if not restores(ctx):
        return pod
    targets = set(destinations(ctx))
    containers = [
        _restore_container(c) if c.get("name") in targets else c for c in pod.get("containers") or []
    ]
    volumes = [*(pod.get("volumes") or [])]
    if not any(v.get("name") == CONTROL_VOLUME for v in volumes):
        volumes.append({"name": CONTROL_VOLUME, "emptyDir": {}})
    return {**pod, "containers": containers, "volumes": volumes}


def job_phase(job: Manifest | None) -> tuple[str, str]:
    """The phase a SnapshotJob's conditions imply, and the reason when it failed."""
    if job is None:
        return PHASE_PENDING, ""
    conditions = {c.get("type"): c for c in (job.get("status") or {}).get("conditions") or []}
    failed = conditions.get(CONDITION_FAILED) or {}
    if failed.get("status") == "True":
        detail = str(failed.get("reason") or "")
        if failed.get("message"):
            detail += ": " + str(failed["message"])
        return PHASE_FAILED, f"automatic SnapshotJob failed: {detail}"
    if (conditions.get(CONDITION_COMPLETED) or {}).get("status") == "True":
        return PHASE_READY, ""
    return PHASE_CREATING, ""


def snapshot_phase(snapshot: Manifest | None) -> tuple[str, str]:
    """The phase a PodSnapshot's conditions imply (Ready True: restorable)."""
    if snapshot is None:
        return PHASE_PENDING, ""
    conditions = {c.get("type"): c for c in (snapshot.get("status") or {}).get("conditions") or []}
    if (conditions.get(CONDITION_FAILED) or {}).get("status") == "True":
        return PHASE_FAILED, str(conditions[CONDITION_FAILED].get("message") or "PodSnapshot failed")
    if (conditions.get(CONDITION_READY) or {}).get("status") == "True":
        return PHASE_READY, ""
    return PHASE_CREATING, ""
