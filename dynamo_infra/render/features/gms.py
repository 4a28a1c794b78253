"""GPU memory service (GMS): the intra-pod `gms-server` sidecar, and the inter-pod layout on Grove
(a weight-server pod per rank sharing the rank's GPUs with its engine pods through DRA)."""

from __future__ import annotations

from dataclasses import dataclass

from dynamo_infra.api import DynamoValidationError, Problem
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.features import dra
from dynamo_infra.render.multinode import Role, append_env, gpu_limit

# Intra-pod: the sidecar, its socket volume (emptyDir) and the env telling clients where it is.
SERVER_CONTAINER = "gms-server"
SERVER_MODULE = "gpu_memory_service.cli.server"
INTRAPOD_VOLUME = "gms-intrapod-control"
INTRAPOD_PATH = "/gms-intrapod-control"
SOCKET_DIR_ENV = "GMS_SOCKET_DIR"
# GMS V1 protocol, used when the component also checkpoints.
USE_V1_ENV = "DYN_GMS_USE_V1"
# Inter-pod: a hostPath shared per PCSG replica and rank, fixed up by a root init container.
SHARED_VOLUME = "gms-shared"
HOST_PATH_BASE = "/run/gms"
SHARED_PATH = "/run/gms/shared"
PERM_FIX_CONTAINER = "fix-gms-perms"
FAILOVER_LOCK = f"{SHARED_PATH}/failover.lock"
# Grove pod label holding the pod's index inside its clique (the engine id of primary/shadows).
POD_INDEX_LABEL = "grove.io/podclique-pod-index"
# Weight server startup probe: both sockets (weights, kv_cache) per GPU, up to 5 minutes.
SOCKETS_PER_GPU = 2
SERVER_STARTUP = {"periodSeconds": 2, "timeoutSeconds": 2, "failureThreshold": 150}
# Clique name part of the weight-server cliques (`{component}-gms-{rank}`).
GMS_SUFFIX = "gms"
LEADER_SUFFIX = "ldr"
WORKER_SUFFIX = "wkr"
# PCS-level claim template request name of each rank's GPUs.
RANK_REQUEST_NAME = "gpu"


def socket_env(path: str = INTRAPOD_PATH) -> Manifest:
    return {"name": SOCKET_DIR_ENV, "value": path}


def _replace_or_append(items: list[Manifest], item: Manifest) -> list[Manifest]:
    for i, existing in enumerate(items):
        if existing.get("name") == item["name"]:
            return [*items[:i], item, *items[i + 1 :]]
    return [*items, item]


def with_client(pod: Manifest, container: Manifest) -> tuple[Manifest, Manifest]:
    """EnsureClient: socket volume, mount and env, GPUs handed to the shared claim."""
    volume = {"name": INTRAPOD_VOLUME, "emptyDir": {}}
    pod = {**pod, "volumes": _replace_or_append(list(pod.get("volumes") or []), volume)}
    mount = {"name": INTRAPOD_VOLUME, "mountPath": INTRAPOD_PATH}
    container = {
        **container,
        "volumeMounts": _replace_or_append(list(container.get("volumeMounts") or []), mount),
    }
    container = {**container, "env": _replace_or_append(list(container.get("env") or []), socket_env())}
    return pod, dra.with_claim(container)


def with_v1(container: Manifest) -> Manifest:
    return {
        **container,
        "env": _replace_or_append(list(container.get("env") or []), {"name": USE_V1_ENV, "value": "true"}),
    }


def server_sidecar(image: str | None) -> Manifest:
    """Native sidecar (restartPolicy Always); no startup probe, clients retry the socket."""
    c: Manifest = {
        "name": SERVER_CONTAINER,
        "command": ["python3", "-m", SERVER_MODULE],
        "env": [socket_env()],
        "volumeMounts": [{"name": INTRAPOD_VOLUME, "mountPath": INTRAPOD_PATH}],
        "resources": {"claims": [{"name": dra.CLAIM_NAME}]},
        "restartPolicy": "Always",
    }
    return {"name": SERVER_CONTAINER, "image": image, **c} if image else c


def intra_pod(ctx: ComponentContext, pod: Manifest) -> Manifest:
    """The shared GPU claim on main, the gms-server sidecar, and the extra GMS client containers."""
    gms = ctx.gms or {}
    pod = dra.apply_claim(pod, dra.claim_template_name(ctx.parent_name, ctx.name))
    containers = list(pod["containers"])
    pod, main = with_client(pod, containers[0])
    sidecar = server_sidecar(main.get("image"))
    if ctx.checkpoint is not None:
        sidecar, main = with_v1(sidecar), with_v1(main)
    containers[0] = main
    if not any(c.get("name") == SERVER_CONTAINER for c in pod.get("initContainers") or []):
        pod = {**pod, "initContainers": [*(pod.get("initContainers") or []), sidecar]}
    for name in gms.get("extraClientContainers") or []:
        i = next((i for i, c in enumerate(containers) if c.get("name") == name), None)
        if i is None:
            raise _problem(
                ctx, "gpuMemoryService.extraClientContainers", f"references missing pod containers {[name]}"
            )
        pod, containers[i] = with_client(pod, containers[i])
        if ctx.checkpoint is not None:
            containers[i] = with_v1(containers[i])
    return {**pod, "containers": containers}


@dataclass(frozen=True)
class CliqueRole:
    """One PodClique of a component: name, role, replicas and the static node rank."""

    name: str
    role: Role
    replicas: int
    rank: int = 0


def inter_pod_roles(name: str, nodes: int, engine_pods: int) -> list[CliqueRole]:
    """A weight-server clique per rank, each followed by the rank's engine clique."""
    if nodes <= 1:
        return [CliqueRole(f"{name}-{GMS_SUFFIX}-0", Role.GMS, 1), CliqueRole(name, Role.MAIN, engine_pods)]
    out: list[CliqueRole] = []
    for rank in range(nodes):
        out.append(CliqueRole(f"{name}-{GMS_SUFFIX}-{rank}", Role.GMS, 1, rank))
        if rank == 0:
            out.append(CliqueRole(f"{name}-{LEADER_SUFFIX}", Role.LEADER, engine_pods, 0))
        else:
            out.append(CliqueRole(f"{name}-{WORKER_SUFFIX}-{rank}", Role.WORKER, engine_pods, rank))
    return out


def _shared(rank: int) -> tuple[Manifest, Manifest]:
    volume = {"name": SHARED_VOLUME, "hostPath": {"path": HOST_PATH_BASE, "type": "DirectoryOrCreate"}}
    mount = {
        "name": SHARED_VOLUME,
        "mountPath": SHARED_PATH,
        "subPathExpr": f"$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)/rank-{rank}",
    }
    return volume, mount


def _perm_fix(rank: int, image: str | None) -> Manifest:
    _, mount = _shared(rank)
    c: Manifest = {
        "name": PERM_FIX_CONTAINER,
        "command": ["sh", "-c", f"chmod 1777 {SHARED_PATH}"],
        "securityContext": {"runAsUser": 0, "runAsNonRoot": False},
        "volumeMounts": [mount],
    }
    return {"name": PERM_FIX_CONTAINER, "image": image, **c} if image else c


def _with_shared(pod: Manifest, container: Manifest, rank: int) -> tuple[Manifest, Manifest]:
    """GPUs left to DRA, GPU toleration, the rank's shared directory and its permission fix."""
    volume, mount = _shared(rank)
    container = {
        **container,
        "resources": dra.without_gpus(container.get("resources")),
        "volumeMounts": [*(container.get("volumeMounts") or []), mount],
    }
    if not container["resources"]:
        container.pop("resources")
    pod = dra.with_toleration(pod)
    pod = {
        **pod,
        "volumes": [*(pod.get("volumes") or []), volume],
        "initContainers": [*(pod.get("initContainers") or []), _perm_fix(rank, container.get("image"))],
    }
    return pod, container


def server_script() -> str:
    return (
        f'rm -f {SHARED_PATH}/gms_*.sock\nrc=1\ncleanup() {{ kill -- -$$ 2>/dev/null; exit "$rc"; }}\n'
        f'trap cleanup SIGTERM SIGINT\npython3 -m {SERVER_MODULE} &\necho "Started GMS server pid=$!"\n'
        'wait -n\nrc=$?\necho "GMS server exited (code=$rc), shutting down"\ncleanup'
    )


def weight_server_pod(base: Manifest, rank: int, gpus: int) -> Manifest:
    """The GMS weight-server pod of one rank, derived from the engine's base pod."""
    containers = list(base.get("containers") or [])
    if not containers:
        return base
    probe = [
        "sh",
        "-c",
        f"test $(ls {SHARED_PATH}/gms_*.sock 2>/dev/null | wc -l) -ge {SOCKETS_PER_GPU * gpus}",
    ]
    main = {k: v for k, v in containers[0].items() if k not in ("livenessProbe", "readinessProbe")}
    main = {
        **main,
        "command": ["bash", "-c"],
        "args": [server_script()],
        "startupProbe": {"exec": {"command": probe}, **SERVER_STARTUP},
    }
    main = append_env(main, socket_env(SHARED_PATH))
    pod, main = _with_shared(base, main, rank)
    return {**pod, "containers": [main, *containers[1:]]}


def engine_pod(pod: Manifest, rank: int, failover: bool) -> Manifest:
    """An engine pod of the inter-pod layout (failover engines never restart in place)."""
    containers = list(pod.get("containers") or [])
    if not containers:
        return pod
    env = [
        e for e in containers[0].get("env") or [] if e.get("name") != "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS"
    ]
    env += [
        {
            "name": "ENGINE_ID",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{POD_INDEX_LABEL}']"}},
        },
        socket_env(SHARED_PATH),
        {"name": "FAILOVER_LOCK_PATH", "value": FAILOVER_LOCK},
        {"name": "DYN_SYSTEM_STARTING_HEALTH_STATUS", "value": "notready"},
    ]
    pod, main = _with_shared(pod, {**containers[0], "env": env}, rank)
    pod = {**pod, "containers": [main, *containers[1:]]}
    return {**pod, "restartPolicy": "Never"} if failover else pod


def rank_claim_name(component: str, rank: int) -> str:
    return f"{component.lower().replace('.', '-')}-gpu-rank-{rank}"


def rank_claim_templates(ctx: ComponentContext, roles: list[CliqueRole]) -> list[Manifest]:
    """PodCliqueSet `resourceClaimTemplates`: one per rank, all alike."""
    count = gpu_limit((ctx.container("main") or {}).get("resources"))
    ranks = sorted({r.rank for r in roles})
    return [
        {
            "name": rank_claim_name(ctx.name, rank),
            # The operator writes the template's empty ObjectMeta as `metadata: {}`.
            "templateSpec": {
                "metadata": {},
                "spec": {
                    "devices": {
                        "requests": [dra.exact_request(RANK_REQUEST_NAME, dra.device_class(ctx.gms), count)]
                    }
                },
            },
        }
        for rank in ranks
    ]


def resource_sharing(ctx: ComponentContext, roles: list[CliqueRole]) -> list[Manifest]:
    """PodCliqueScalingGroup sharing: each rank's claim, per replica, for its two cliques."""
    ranks: dict[int, list[str]] = {}
    for r in roles:
        ranks.setdefault(r.rank, []).append(r.name.lower())
    return [
        {
            "name": rank_claim_name(ctx.name, rank),
            "scope": "PerReplica",
            "filter": {"childCliqueNames": cliques},
        }
        for rank, cliques in ranks.items()
    ]


def _problem(ctx: ComponentContext, field: str, message: str) -> DynamoValidationError:
    return DynamoValidationError([Problem(f"spec.components[{ctx.name}].experimental.{field}", message)])
