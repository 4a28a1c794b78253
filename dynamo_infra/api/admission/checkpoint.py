"""The webhook's rules for a DynamoCheckpoint: the checkpoint gate, and a GPU memory service capture
Job that must already carry the GMS wiring (shared volume, socket env, DRA claim, server init sidecar)."""

from __future__ import annotations

from dynamo_infra.api import v1alpha1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.component import CHECKPOINT_DISABLED, GMS_SNAPSHOT_DISABLED
from dynamo_infra.api.admission.features import OperatorFeatures
from dynamo_infra.api.admission.field import Text
from dynamo_infra.api.admission.review import Review
from dynamo_infra.api.common import MAIN_CONTAINER
from dynamo_infra.api.errors import Problem
from dynamo_infra.api.manifest import Manifest

# The GMS wiring a capture Job must carry: the server init sidecar, the volume its socket lives
# on (and where clients mount it, named by the env var), and the pod's shared GPU claim.
GMS_SERVER_CONTAINER = "gms-server"
GMS_SHARED_VOLUME = "gms-intrapod-control"
GMS_SHARED_MOUNT_PATH = "/gms-intrapod-control"
GMS_SOCKET_DIR_ENV = "GMS_SOCKET_DIR"
GMS_CLAIM = "intrapod-shared-gpu"
INTRA_POD = "intraPod"
INTER_POD = "interPod"
SPEC_AT = "spec"
GMS_AT = "spec.gpuMemoryService"
POD_AT = "spec.job.podTemplateSpec.spec"


def _named(items: object, name: str) -> int | None:
    entries = items if isinstance(items, list) else []
    return next((i for i, x in enumerate(entries) if isinstance(x, dict) and x.get("name") == name), None)


def checkpoint_review(ckpt: v1alpha1.DynamoCheckpoint, features: OperatorFeatures | None) -> Review:
    """The webhook's answer to creating (or updating) `ckpt` (`features` None: the cluster's gates unknown)."""
    out: list[Problem] = []
    if features is not None and not features.checkpoint:
        out.append(field.forbidden(SPEC_AT, CHECKPOINT_DISABLED))
    gms, job = ckpt.spec.gpu_memory_service, ckpt.spec.job
    pod: Manifest = dict(job.pod_template_spec.get("spec") or {})
    if gms is None or not gms.enabled:
        return Review(tuple(out))
    if features is not None and not features.gms_snapshot:
        out.append(field.forbidden(GMS_AT, GMS_SNAPSHOT_DISABLED))
    if gms.mode == INTER_POD:
        return Review(tuple([*out, field.not_supported(f"{GMS_AT}.mode", gms.mode, [INTRA_POD])]))
    for i, name in enumerate(gms.extra_client_containers or []):
        if _named(pod.get("containers"), name) is None:
            out.append(
                field.invalid(
                    f"{GMS_AT}.extraClientContainers[{i}]",
                    Text(name),
                    "does not name a container in spec.job.podTemplateSpec.spec.containers",
                )
            )
    out += _job_problems(pod, job.target_container_name, gms.extra_client_containers or [])
    return Review(tuple(out))


def _job_problems(pod: Manifest, target: str, extra_clients: list[str]) -> list[Problem]:
    out = []
    if _named(pod.get("volumes"), GMS_SHARED_VOLUME) is None:
        out.append(
            field.required(f"{POD_AT}.volumes", f'must contain the GMS shared volume "{GMS_SHARED_VOLUME}"')
        )
    server = _named(pod.get("initContainers"), GMS_SERVER_CONTAINER)
    if server is None:
        out.append(
            field.required(
                f"{POD_AT}.initContainers", f'must contain the GMS init sidecar "{GMS_SERVER_CONTAINER}"'
            )
        )
    else:
        out += _client_problems(pod["initContainers"][server], f"{POD_AT}.initContainers[{server}]")
    clients = {target or MAIN_CONTAINER, *extra_clients}
    for i, c in enumerate(pod.get("containers") or []):
        if c.get("name") in clients:
            out += _client_problems(c, f"{POD_AT}.containers[{i}]")
    if _named(pod.get("resourceClaims"), GMS_CLAIM) is None:
        out.append(
            field.required(
                f"{POD_AT}.resourceClaims", f'must contain the GMS pod resource claim "{GMS_CLAIM}"'
            )
        )
    if _named(pod.get("containers"), target or MAIN_CONTAINER) is None:
        if not target:
            out.append(
                field.required(
                    f"{POD_AT}.containers", f'must contain the default target container "{MAIN_CONTAINER}"'
                )
            )
        else:
            out.append(
                field.invalid(
                    "spec.job.targetContainerName",
                    Text(target),
                    "does not name a container in podTemplateSpec.spec.containers",
                )
            )
    return out


def _client_problems(container: Manifest, at: str) -> list[Problem]:
    out = []
    env = container.get("env") or []
    if not any(
        e.get("name") == GMS_SOCKET_DIR_ENV and e.get("value", "") == GMS_SHARED_MOUNT_PATH for e in env
    ):
        out.append(
            field.required(f"{at}.env", f"must contain {GMS_SOCKET_DIR_ENV}={GMS_SHARED_MOUNT_PATH} for GMS")
        )
    if _named((container.get("resources") or {}).get("claims"), GMS_CLAIM) is None:
        out.append(
            field.required(f"{at}.resources.claims", f'must contain the GMS resource claim "{GMS_CLAIM}"')
        )
    mounts = container.get("volumeMounts") or []
    if not any(
        m.get("name") == GMS_SHARED_VOLUME and m.get("mountPath") == GMS_SHARED_MOUNT_PATH for m in mounts
    ):
        out.append(
            field.required(
                f"{at}.volumeMounts",
                f'must mount volume "{GMS_SHARED_VOLUME}" at "{GMS_SHARED_MOUNT_PATH}" for GMS',
            )
        )
    return out
