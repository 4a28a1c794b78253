"""What the checkpoint provider does for a component whose runtime checkpoints through the snapshot API
(`render.features.snapshot`): imported only by `Provider.calls`.

An automatic capture is a `SnapshotJob` that we create (Snapshot's operator runs and captures it into
the `PodSnapshot` of the same name); a `checkpointRef` names a `PodSnapshot` someone else made, which
is only looked up. Ready is what the 1.6 operator waits for (resolveAutomaticSnapshotJob): the
SnapshotJob Completed and its PodSnapshot Ready; for a reference, the PodSnapshot Ready. A failed
SnapshotJob fails the resource, and the next `up` recreates it (the operator leaves it failed).
On destroy, an automatic capture with deletion policy `Delete` goes with its PodSnapshot
(deleteAutoCheckpointsForDGD); `Retain` keeps both. A referenced PodSnapshot is never deleted.

The operator's checkpoint path runs only where the snapshot API is served (PR #13448): without it,
`check` (every preview) and the reconcile fail naming what to install.
"""

from __future__ import annotations

from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import KubeClient, stub
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.reconcile.base import DELETE_TIMEOUT_S, await_until, log
from dynamo_infra.reconcile.checkpoint_calls import CheckpointFailed, owner_id
from dynamo_infra.reconcile.inputs import CheckpointInputs, meta
from dynamo_infra.reconcile.ownership import owner_of, refuse_foreign, with_inventory
from dynamo_infra.render.features import snapshot as sn

# The API server's words when the installed CRD lacks a field we write, and what to do then.
UNDECLARED = "field not declared in schema"
OLD_CRD = "the cluster's snapshot CRDs predate the API the 1.6 operator writes (api v0.1.0); upgrade {source}"
# Where to look when the API is missing.
NOT_SERVED = "the cluster does not serve {api} {kind}; install {source} and its operator and node agent"


def api_problem(client: KubeClient, kind: str) -> str | None:
    """Why the snapshot API cannot be used (None when it is served)."""
    if client.serves(sn.API_VERSION, kind):
        return None
    return NOT_SERVED.format(api=sn.API_VERSION, kind=kind, source=sn.CRD_SOURCE)


def preview_problem(ins: CheckpointInputs) -> str | None:
    """API discovery for `check`: a problem only when the cluster answers and lacks the API."""
    try:
        with ins.client() as client:
            return api_problem(client, str(ins.checkpoint.get("kind")))
    except Exception:  # noqa: BLE001 - an unreachable cluster is reported by the reconcile, not by check
        return None


def _job_stub(ins: CheckpointInputs) -> Manifest:
    return stub(sn.API_VERSION, sn.SNAPSHOT_JOB, ins.namespace, meta(ins.checkpoint)["name"])


def _snapshot_stub(ins: CheckpointInputs, name: str | None = None) -> Manifest:
    return stub(sn.API_VERSION, sn.POD_SNAPSHOT, ins.namespace, name or meta(ins.checkpoint)["name"])


def _is_job(ins: CheckpointInputs) -> bool:
    return ins.checkpoint.get("kind") == sn.SNAPSHOT_JOB


def _observe(client: KubeClient, ins: CheckpointInputs) -> tuple[str, str, Manifest | None]:
    """Phase, message and the live object the phase was read from."""
    if not _is_job(ins):
        live = client.get(_snapshot_stub(ins))
        phase, message = sn.snapshot_phase(live)
        if live is None:
            message = f"PodSnapshot {ins.namespace}/{meta(ins.checkpoint)['name']} does not exist (yet)"
        return phase, message, live
    job = client.get(_job_stub(ins))
    phase, message = sn.job_phase(job)
    if phase != sn.PHASE_READY or job is None:
        return phase, message, job
    name = str((job.get("status") or {}).get("podSnapshotName") or meta(job)["name"])
    snap_phase, snap_message = sn.snapshot_phase(client.get(_snapshot_stub(ins, name)))
    if snap_phase == sn.PHASE_FAILED:
        return snap_phase, snap_message, job
    return (sn.PHASE_READY, "", job) if snap_phase == sn.PHASE_READY else (sn.PHASE_CREATING, "", job)


def _apply_job(client: KubeClient, ins: CheckpointInputs) -> None:
    """syncAutomaticSnapshotJob: create the SnapshotJob once (its spec is immutable; the API server may
    also prune parts of it), later only keep its deletion policy; recreate a failed one of an earlier
    `up`."""
    key = f"{sn.SNAPSHOT_JOB} {ins.namespace}/{meta(ins.checkpoint)['name']}"
    refuse_foreign(client, {key: _job_stub(ins)}, ins.owner)
    live = client.get(_job_stub(ins))
    if live is not None and sn.job_phase(live)[0] == sn.PHASE_FAILED:
        log(f"{key} failed earlier; recreating it to retry")
        if client.delete(live, propagation="Foreground"):
            client.wait_deleted(live, DELETE_TIMEOUT_S)
        live = None
    if live is not None:
        _keep_deletion_policy(client, ins, live)
        return
    log(f"{key}: creating it")
    try:
        client.apply(with_inventory(ins.checkpoint, ins.owner, owner_id(ins.owner)))
    except KubeError as e:
        if UNDECLARED in str(e):
            raise CheckpointFailed(f"{key}: {e}; {OLD_CRD.format(source=sn.CRD_SOURCE)}") from e
        raise CheckpointFailed(f"{key}: {e}") from e


def _keep_deletion_policy(client: KubeClient, ins: CheckpointInputs, live: Manifest) -> None:
    """The one mutable setting of an existing automatic capture: its deletion-policy annotation."""
    want = (meta(ins.checkpoint).get("annotations") or {}).get(sn.ANNOTATION_DELETION_POLICY)
    have = (meta(live).get("annotations") or {}).get(sn.ANNOTATION_DELETION_POLICY)
    if want is None or want == have:
        return
    pointer = "/metadata/annotations/" + sn.ANNOTATION_DELETION_POLICY.replace("~", "~0").replace("/", "~1")
    client.patch(live, [{"op": "add", "path": pointer, "value": want}])


def _await(client: KubeClient, ins: CheckpointInputs, label: str) -> tuple[str, str]:
    timeout = float(ins.timeout_seconds or sn.ACTIVE_DEADLINE_S)

    def fetch() -> tuple[str, str, Manifest | None]:
        return _observe(client, ins)

    def done(seen: tuple[str, str, Manifest | None]) -> bool:
        return seen[0] in (sn.PHASE_READY, sn.PHASE_FAILED)

    def expired(seen: tuple[str, str, Manifest | None]) -> CheckpointFailed:
        return CheckpointFailed(
            f"{label}: not Ready after {timeout:.0f}s (phase {seen[0]}); the next `pulumi up` keeps waiting"
        )

    def progress(seen: tuple[str, str, Manifest | None], elapsed: float) -> str:
        return f"{label}: waiting for Ready (phase {seen[0]}; {elapsed:.0f}s of {timeout:.0f}s)"

    phase, message, _ = await_until(
        _observe(client, ins), fetch, done, timeout=timeout, expired=expired, progress=progress
    )
    return phase, message


def _outputs(ins: CheckpointInputs, props: dict[str, Any], phase: str, message: str) -> dict[str, Any]:
    annotations = (
        ((ins.checkpoint.get("spec") or {}).get("podSnapshotTemplate") or {}).get("metadata") or {}
    ).get("annotations") or {}
    name = meta(ins.checkpoint)["name"]
    return {
        **props,
        "phase": phase,
        "ready": phase == sn.PHASE_READY,
        "message": message,
        "identityHash": str(annotations.get(sn.ANNOTATION_COMPATIBILITY_HASH) or ""),
        "checkpointId": name.removeprefix(sn.NAME_PREFIX) if _is_job(ins) else "",
        "checkpointName": name,
        "jobName": name if _is_job(ins) else "",
        "crdApplied": True,
    }


def reconcile(ins: CheckpointInputs, props: dict[str, Any]) -> dict[str, Any]:
    label = ins.label
    with ins.client() as client:
        problem = api_problem(client, str(ins.checkpoint.get("kind")))
        if problem is not None:
            raise CheckpointFailed(f"{label}: {problem}")
        if _is_job(ins):
            _apply_job(client, ins)
        phase, message, _ = _observe(client, ins)
        if ins.wait and phase not in (sn.PHASE_READY, sn.PHASE_FAILED):
            phase, message = _await(client, ins, label)
        if phase == sn.PHASE_FAILED:
            retry = "recreates the SnapshotJob" if _is_job(ins) else "looks at the PodSnapshot again"
            raise CheckpointFailed(f"{label}: {message}; the next `pulumi up` {retry}")
        log(f"{label}: {phase}" + (f" ({message})" if message else ""))
    return _outputs(ins, props, phase, message)


def delete(ins: CheckpointInputs, _props: dict[str, Any]) -> None:
    """An automatic capture of ours goes with its PodSnapshot unless its deletion policy is Retain."""
    if not _is_job(ins):
        return
    label = ins.label
    policy = str((meta(ins.checkpoint).get("annotations") or {}).get(sn.ANNOTATION_DELETION_POLICY) or "")
    if policy == sn.DELETION_POLICY_RETAIN:
        log(f"{label}: retaining the SnapshotJob and its PodSnapshot (deletionPolicy Retain)")
        return
    with ins.client() as client:
        if api_problem(client, sn.SNAPSHOT_JOB) is not None:
            return
        job = client.get(_job_stub(ins))
        if job is None or owner_of(job) != ins.owner:
            return
        name = str((job.get("status") or {}).get("podSnapshotName") or "")
        log(f"{label}: deleting the SnapshotJob" + (f" and PodSnapshot {name}" if name else ""))
        if client.delete(job, propagation="Background"):
            client.wait_deleted(job, DELETE_TIMEOUT_S)
        if name:
            snapshot = client.get(_snapshot_stub(ins, name))
            labels = meta(snapshot).get("labels") or {}
            if snapshot is not None and labels.get(sn.LABEL_SNAPSHOT_JOB) == meta(job)["name"]:
                client.delete(snapshot, propagation="Background")


def read(ins: CheckpointInputs, props: dict[str, Any]) -> dict[str, Any] | None:
    """Outputs with the phase the live objects imply; None when the object is gone."""
    with ins.client() as client:
        if api_problem(client, str(ins.checkpoint.get("kind"))) is not None:
            return None
        phase, message, live = _observe(client, ins)
    if live is None:
        return None
    return _outputs(ins, props, phase, message)
