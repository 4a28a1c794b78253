"""What the checkpoint provider (`reconcile.checkpoint_provider`) does when it writes, deletes or reads:
imported only by `Provider.calls` (named, never imported, by the provider), so a provider process that
only checks and diffs never loads the kube client, the API models or the renderer."""

from __future__ import annotations

import hashlib
from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.kube.client import FIELD_MANAGER, KubeClient, stub
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.reconcile.base import DELETE_TIMEOUT_S, await_until, log
from dynamo_infra.reconcile.inputs import CheckpointInputs, meta
from dynamo_infra.reconcile.ownership import owner_of, refuse_foreign, with_inventory
from dynamo_infra.render.features import checkpoint as ck

# Our label on capture Jobs: the identity hash of the checkpoint they capture.
LABEL_IDENTITY_HASH = "dynamo-infra.io/checkpoint-identity-hash"
# Our annotation on capture Jobs: the DynamoCheckpoint they run for (also without the CRD).
ANNOTATION_CHECKPOINT = "dynamo-infra.io/checkpoint"
# Job label Kubernetes puts on the pods of a Job.
LABEL_JOB_NAME = "batch.kubernetes.io/job-name"
# HTTP status of an update Kubernetes refuses (a Job's pod template is immutable).
UNPROCESSABLE = 422


class CheckpointFailed(DynamoInfraError):
    """The checkpoint cannot become Ready: duplicate key, failed capture Job, or timeout."""


def owner_id(owner: str) -> str:
    """Inventory label value of a checkpoint's objects (12 hex of SHA-256 of its owner)."""
    return hashlib.sha256(owner.encode()).hexdigest()[:12]


def _stamped(
    obj: Manifest, owner: str, extra_labels: dict[str, str], extra_annotations: dict[str, str]
) -> Manifest:
    """The manifest with our inventory label, owner annotation and bookkeeping metadata."""
    stamped = meta(with_inventory(obj, owner, owner_id(owner)))
    stamped["labels"] = {**stamped["labels"], **extra_labels}
    stamped["annotations"] = {**stamped["annotations"], **extra_annotations}
    return {**obj, "metadata": stamped}


def _duplicate(client: KubeClient, ins: CheckpointInputs, crd: bool) -> str | None:
    """FindCheckpointByCheckpointID: who else in the namespace owns this checkpoint's key."""
    ns, name, job_name = ins.names
    ckpt, owner = ins.checkpoint, ins.owner
    key = ck.checkpoint_key(ckpt)
    managed = bool((meta(ckpt).get("labels") or {}).get(ck.LABEL_CHECKPOINT_ID))
    what = f"checkpoint ID {key}" if managed else f"checkpoint identity hash {key}"
    found: list[str] = []
    selector = f"{ck.LABEL_CHECKPOINT_ID}={key}"
    if crd:
        for other in client.list(ck.API_VERSION, ck.KIND, ns, label_selector=selector):
            other_owner = owner_of(other)
            if meta(other)["name"] != name or (other_owner and other_owner != owner):
                found.append(f"{meta(other)['name']}" + (f" ({other_owner})" if other_owner else ""))
    jobs = client.list("batch/v1", "Job", ns, label_selector=selector)
    same_name = client.get(ins.job_stub)
    if same_name is not None and all(meta(j)["name"] != job_name for j in jobs):
        jobs.append(same_name)
    for job in jobs:
        other_owner = owner_of(job)
        if other_owner == owner:
            continue
        annotations = meta(job).get("annotations") or {}
        pod_labels = meta((job.get("spec") or {}).get("template") or {}).get("labels") or {}
        holder = annotations.get(ANNOTATION_CHECKPOINT) or pod_labels.get(ck.LABEL_SNAPSHOT_OWNER)
        who = str(holder or f"Job {meta(job)['name']}")
        found.append(who + (f" ({other_owner})" if other_owner else ""))
    if not found:
        return None
    return f"{ins.label}: {what} is already owned by {', '.join(sorted(set(found)))}"


def _apply_checkpoint(client: KubeClient, ins: CheckpointInputs) -> Manifest:
    return client.apply(_stamped(ins.checkpoint, ins.owner, {}, {}))


def _apply_status(client: KubeClient, ins: CheckpointInputs, status: Manifest) -> None:
    """The controller's half of the DynamoCheckpoint: its status subresource."""
    ns, name, _ = ins.names
    info = client.resource(ck.API_VERSION, ck.KIND)
    body = {"apiVersion": ck.API_VERSION, "kind": ck.KIND, "metadata": {"name": name, "namespace": ns}}
    client.request(
        "PATCH",
        info.path(ns, name) + "/status",
        body={**body, "status": status},
        params={"fieldManager": FIELD_MANAGER, "force": "true"},
        content_type="application/apply-patch+yaml",
    )


def _apply_job(client: KubeClient, ins: CheckpointInputs, owner_ref: Manifest | None) -> Manifest:
    """Create the capture Job, or keep ours; a failed one (an earlier `up`) is replaced to retry."""
    ns, name, job_name = ins.names
    identity = ck.identity_hash((ins.checkpoint.get("spec") or {}).get("identity") or {})
    job = _stamped(ins.job, ins.owner, {LABEL_IDENTITY_HASH: identity}, {ANNOTATION_CHECKPOINT: name})
    if owner_ref is not None:
        job = {**job, "metadata": {**job["metadata"], "ownerReferences": [owner_ref]}}
    live = client.get(ins.job_stub)
    if live is not None and ck.job_phase(live)[0] == ck.PHASE_FAILED:
        log(f"{ins.label}: capture Job {ns}/{job_name} failed earlier; recreating it to retry")
        _delete_job(client, ins.job_stub)
        live = None
    if live is None:
        log(f"{ins.label}: creating capture Job {ns}/{job_name}")
        return client.apply(job)
    try:
        return client.apply(job)
    except KubeError as e:
        if e.status != UNPROCESSABLE:
            raise
    log(f"{ins.label}: capture Job {ns}/{job_name} changed where Jobs are immutable; recreating it")
    _delete_job(client, ins.job_stub)
    return client.apply(job)


def _delete_job(client: KubeClient, job: Manifest) -> None:
    if client.delete(job, propagation="Foreground"):
        client.wait_deleted(job, DELETE_TIMEOUT_S)


def _pods_summary(client: KubeClient, namespace: str, job_name: str) -> str:
    pods = client.list("v1", "Pod", namespace, label_selector=f"{LABEL_JOB_NAME}={job_name}")
    parts = []
    for pod in pods:
        status = pod.get("status") or {}
        why = next(
            (
                c.get("message") or c.get("reason")
                for c in status.get("conditions") or []
                if c.get("status") == "False" and (c.get("message") or c.get("reason"))
            ),
            "",
        )
        parts.append(
            f"pod {meta(pod)['name']} {status.get('phase', 'Unknown')}" + (f" ({why})" if why else "")
        )
    return "; ".join(parts) or "no pod yet"


def _await(client: KubeClient, ins: CheckpointInputs, live: Manifest) -> tuple[str, str, Manifest]:
    """Follow the capture Job until it is Complete or Failed; fail after `timeoutSeconds`."""
    ns, _, job_name = ins.names
    timeout = float(ins.timeout_seconds or ck.JOB_ACTIVE_DEADLINE_S)

    def fetch() -> Manifest:
        found = client.get(ins.job_stub)
        if found is None:
            raise CheckpointFailed(f"{ins.label}: capture Job {ns}/{job_name} was deleted while waiting")
        return found

    def expired(_job: Manifest) -> CheckpointFailed:
        return CheckpointFailed(
            f"{ins.label}: capture Job {ns}/{job_name} not Complete after {timeout:.0f}s "
            f"({_pods_summary(client, ns, job_name)}); the next `pulumi up` keeps waiting for it"
        )

    def progress(job: Manifest, elapsed: float) -> str:
        status = job.get("status") or {}
        return (
            f"{ins.label}: waiting for capture Job {ns}/{job_name} "
            f"(active {status.get('active', 0)}, succeeded {status.get('succeeded', 0)}; "
            f"{elapsed:.0f}s of {timeout:.0f}s)"
        )

    def done(job: Manifest) -> bool:
        return ck.job_phase(job)[0] in (ck.PHASE_READY, ck.PHASE_FAILED)

    live = await_until(live, fetch, done, timeout=timeout, expired=expired, progress=progress)
    phase, message = ck.job_phase(live)
    return phase, message, live


def _status(ins: CheckpointInputs, phase: str, message: str) -> Manifest:
    ckpt = ins.checkpoint
    status: Manifest = {
        "phase": phase,
        "identityHash": ck.identity_hash((ckpt.get("spec") or {}).get("identity") or {}),
        "checkpointID": ck.checkpoint_key(ckpt),
        "jobName": meta(ins.job)["name"],
    }
    if message:
        status["message"] = message
    return status


def _outputs(
    ins: CheckpointInputs, props: dict[str, Any], phase: str, message: str, crd: bool
) -> dict[str, Any]:
    status = _status(ins, phase, message)
    return {
        **props,
        "phase": phase,
        "ready": phase == ck.PHASE_READY,
        "message": message,
        "identityHash": status["identityHash"],
        "checkpointId": status["checkpointID"],
        "checkpointName": meta(ins.checkpoint)["name"],
        "jobName": status["jobName"],
        "crdApplied": crd,
    }


def reconcile(ins: CheckpointInputs, props: dict[str, Any]) -> dict[str, Any]:
    label = ins.label
    with ins.client() as client:
        crd = client.serves(ck.API_VERSION, ck.KIND)
        duplicate = _duplicate(client, ins, crd)
        if duplicate is not None:
            raise CheckpointFailed(duplicate)
        owner_ref = None
        if crd:
            refuse_foreign(client, {label: stub(ck.API_VERSION, ck.KIND, *ins.names[:2])}, ins.owner)
            applied = _apply_checkpoint(client, ins)
            owner_ref = {
                "apiVersion": ck.API_VERSION,
                "kind": ck.KIND,
                "name": meta(applied)["name"],
                "uid": meta(applied)["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        else:
            log(
                f"{label}: the cluster does not serve {ck.API_VERSION} {ck.KIND}; tracking the capture Job only"
            )
        live = _apply_job(client, ins, owner_ref)
        phase, message = ck.job_phase(live)
        if crd and phase != ck.PHASE_READY:
            _apply_status(client, ins, _status(ins, ck.PHASE_CREATING, ""))
        if ins.wait and phase not in (ck.PHASE_READY, ck.PHASE_FAILED):
            phase, message, live = _await(client, ins, live)
        if crd:
            _apply_status(client, ins, _status(ins, phase, message))
        if phase == ck.PHASE_FAILED:
            raise CheckpointFailed(
                f"{label}: {message}; the next `pulumi up` recreates the capture Job to retry"
            )
        log(f"{label}: {phase} (capture Job {ins.namespace}/{ins.names[2]})")
    return _outputs(ins, props, phase, message, crd)


def delete(ins: CheckpointInputs, props: dict[str, Any]) -> None:
    """Delete what the capture produced unless its deletionPolicy is Retain (only objects we own)."""
    ns, name, job_name = ins.names
    label = ins.label
    if ck.deletion_policy(ins.checkpoint) == ck.DELETION_POLICY_RETAIN:
        log(f"{label}: retaining capture Job {ns}/{job_name} and the checkpoint (deletionPolicy Retain)")
        return
    with ins.client() as client:
        job = client.get(ins.job_stub)
        if job is not None and owner_of(job) == ins.owner:
            log(f"{label}: deleting capture Job {ns}/{job_name}")
            _delete_job(client, job)
        if props.get("crdApplied") and client.serves(ck.API_VERSION, ck.KIND):
            obj = stub(ck.API_VERSION, ck.KIND, ns, name)
            live = client.get(obj)
            # Background: its Job is gone already (and the garbage collector may not know the CRD yet).
            if (
                live is not None
                and owner_of(live) == ins.owner
                and client.delete(obj, propagation="Background")
            ):
                client.wait_deleted(obj, DELETE_TIMEOUT_S)


def read(ins: CheckpointInputs, props: dict[str, Any]) -> dict[str, Any] | None:
    """Outputs with the phase the live capture Job implies; None when neither Job nor checkpoint exists."""
    ns, name, _ = ins.names
    with ins.client() as client:
        job = client.get(ins.job_stub)
        crd = bool(props.get("crdApplied")) and client.serves(ck.API_VERSION, ck.KIND)
        obj = client.get(stub(ck.API_VERSION, ck.KIND, ns, name)) if crd else None
    if job is None and obj is None:
        return None
    phase, message = ck.job_phase(job)
    return _outputs(ins, props, phase, message, bool(props.get("crdApplied")))
