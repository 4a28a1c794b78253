"""A snapshot checkpoint's capture (runtimes from 1.5.0, `features.snapshot`): the SnapshotJob whose pod
template is the component's own pod spec, and what restored pods and the graph's status name from it.
It renders a pod spec, so it sits above `podspec` (whose restore step needs only `features.snapshot`)."""

from __future__ import annotations

from dataclasses import replace

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import names
from dynamo_infra.render.backends.table import backend_framework
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.features import checkpoint
from dynamo_infra.render.features import snapshot as sn
from dynamo_infra.render.multinode import LWS_DEPLOYER
from dynamo_infra.render.podspec import placement, pod_spec


def capture_template(ctx: ComponentContext, pod_metadata: Manifest | None = None) -> Manifest:
    """buildCheckpointJobPodTemplate: the component's pod as its defaults render it without experimental
    features or the frontend sidecar, one node, only the target container, never restarted; the
    labels and annotations of the graph component's pod template (`pod_metadata`), then the graph,
    component and worker-generation labels (metadata is not part of the compatibility hash)."""

    if ctx.gms is not None:
        raise sn.unsupported(
            ctx, "dynamo-infra does not render SnapshotJobs of a GPU memory service component"
        )
    plain = {k: v for k, v in ctx.spec.items() if k not in ("experimental", "frontendSidecar")}
    job_ctx = replace(ctx, spec=plain, checkpoint_ready=None)
    pod = pod_spec(job_ctx, replace(placement(job_ctx, LWS_DEPLOYER), nodes=1))
    target = sn.target_container(ctx)
    kept = [c for c in pod.get("containers") or [] if c.get("name") == target]
    if not kept:
        raise sn.unsupported(ctx, f"checkpoint target container {target!r} not found")
    pod = {**pod, "containers": kept, "restartPolicy": "Never"}
    if ctx.k8s_discovery and not pod.get("serviceAccountName"):
        pod["serviceAccountName"] = names.discovery_service_account(ctx.parent_name)
    overrides = (((ctx.checkpoint or {}).get("job") or {}).get("podTemplate") or {}).get("metadata") or {}
    own = pod_metadata or {}
    labels = {
        **(own.get("labels") or {}),
        names.LABEL_COMPONENT: ctx.name,
        **(overrides.get("labels") or {}),
        names.LABEL_GRAPH: ctx.parent_name,
    }
    if ctx.is_worker and ctx.worker_hash:
        labels[names.LABEL_WORKER_HASH] = ctx.worker_hash
    annotations = {**(own.get("annotations") or {}), **(overrides.get("annotations") or {})}
    meta: Manifest = {"labels": dict(sorted(labels.items()))}
    if annotations:
        meta["annotations"] = dict(sorted(annotations.items()))
    return {"metadata": meta, "spec": pod}


def _capture(ctx: ComponentContext, pod_metadata: Manifest | None = None) -> tuple[Manifest, str, str]:
    """The capture template, its compatibility hash and the checkpoint ID of an automatic capture."""
    template = capture_template(ctx, pod_metadata)
    compat = sn.compatibility_hash(template["spec"], sn.target_container(ctx), backend_framework(ctx))
    worker_hash = (ctx.worker_hash or "") if ctx.is_worker else ""
    return (
        template,
        compat,
        sn.checkpoint_id(ctx.namespace, ctx.parent_name, "", ctx.name, worker_hash, compat),
    )


def source_name(ctx: ComponentContext) -> str:
    """The PodSnapshot a component restores from: its `checkpointRef`, else its automatic capture's."""
    ref = str((ctx.checkpoint or {}).get("checkpointRef") or "").strip()
    return ref or sn.NAME_PREFIX + _capture(ctx)[2]


def snapshot_job(ctx: ComponentContext, pod_metadata: Manifest | None = None) -> Manifest | None:
    """buildAutomaticSnapshotJob (none with `checkpointRef`). The DGD's UID is known only in the
    cluster: it is left out of the checkpoint ID and the owner annotation is empty."""
    config = ctx.checkpoint or {}
    if str(config.get("checkpointRef") or "").strip():
        return None
    template, compat, ckpt_id = _capture(ctx, pod_metadata)
    labels = {names.LABEL_GRAPH: ctx.parent_name, names.LABEL_COMPONENT: ctx.name}
    if ctx.is_worker and ctx.worker_hash:
        labels[names.LABEL_WORKER_HASH] = ctx.worker_hash
    policy = str(config.get("deletionPolicy") or sn.DEFAULT_DELETION_POLICY)
    annotations = {
        sn.ANNOTATION_AUTO: "true",
        sn.ANNOTATION_DELETION_POLICY: policy,
        sn.ANNOTATION_OWNER_UID: "",
    }
    snapshot_annotations = {
        **annotations,
        sn.ANNOTATION_COMPATIBILITY_VERSION: sn.COMPATIBILITY_VERSION,
        sn.ANNOTATION_COMPATIBILITY_HASH: compat,
        sn.ANNOTATION_GMS_MODE: sn.GMS_MODE_DISABLED,
    }
    return {
        "apiVersion": sn.API_VERSION,
        "kind": sn.SNAPSHOT_JOB,
        "metadata": {
            "name": sn.NAME_PREFIX + ckpt_id,
            "namespace": ctx.namespace,
            "labels": dict(sorted(labels.items())),
            "annotations": dict(sorted(annotations.items())),
        },
        "spec": {
            "podTemplate": template,
            "activeDeadlineSeconds": sn.ACTIVE_DEADLINE_S,
            "podSnapshotTemplate": {
                "metadata": {
                    "labels": dict(sorted(labels.items())),
                    "annotations": dict(sorted(snapshot_annotations.items())),
                },
                "targetContainers": [sn.target_container(ctx)],
            },
        },
    }


def snapshot_reference(ctx: ComponentContext) -> Manifest | None:
    """The PodSnapshot a `checkpointRef` names, as the provider looks it up (never applied)."""
    ref = str((ctx.checkpoint or {}).get("checkpointRef") or "").strip()
    if not ref:
        return None
    labels = {names.LABEL_GRAPH: ctx.parent_name, names.LABEL_COMPONENT: ctx.name}
    return {
        "apiVersion": sn.API_VERSION,
        "kind": sn.POD_SNAPSHOT,
        "metadata": {"name": ref, "namespace": ctx.namespace, "labels": labels},
    }


def checkpoint_object(ctx: ComponentContext, pod_metadata: Manifest | None = None) -> Manifest | None:
    """What the checkpoint provider reconciles for the component: its SnapshotJob or PodSnapshot
    (`pod_metadata`: the graph component's pod-template metadata)."""
    return snapshot_job(ctx, pod_metadata) or snapshot_reference(ctx)


def status_entry(ctx: ComponentContext) -> Manifest:
    """`status.checkpoints[component]` (ComponentCheckpointStatus: checkpointName, ready)."""
    return {"checkpointName": source_name(ctx), "ready": bool(ctx.checkpoint_ready)}


def restore_annotations(ctx: ComponentContext) -> dict[str, str]:
    """Snapshot's restore annotations of a restored pod (empty until the snapshot is Ready)."""
    if not sn.restores(ctx):
        return {}
    source, destinations = sn.target_container(ctx), sn.destinations(ctx)
    out = {sn.ANNOTATION_RESTORE_FROM: source_name(ctx)}
    if destinations != [source]:
        out[sn.ANNOTATION_RESTORE_CONTAINER_MAP] = ",".join(sorted(f"{source}={d}" for d in destinations))
    return out


def restore_target_metadata(ctx: ComponentContext) -> tuple[dict[str, str], dict[str, str]]:
    """ApplyRestoreTargetMetadata: pod labels and annotations of a restore target (else empty), through
    the snapshot API when the runtime has it."""
    if sn.applies(ctx):
        return {}, restore_annotations(ctx)
    return checkpoint.restore_target_metadata(ctx)
