"""GenerateBasePodSpec: a component's pod spec, in the operator's merge order."""

from __future__ import annotations

import dataclasses
import re

from dynamo_infra.api import DynamoValidationError, Problem
from dynamo_infra.api.admission.sidecar import sidecar_problems
from dynamo_infra.api.errors import join_path
from dynamo_infra.api.manifest import Manifest, copy_json
from dynamo_infra.api.merge import merge_env, merge_override
from dynamo_infra.render import roles
from dynamo_infra.render.backends.table import Backend, component_backend
from dynamo_infra.render.components.common import runtime_sidecar_container
from dynamo_infra.render.components.frontend import frontend_container
from dynamo_infra.render.components.table import defaults_for
from dynamo_infra.render.context import MAIN_CONTAINER, ComponentContext
from dynamo_infra.render.features import checkpoint, failover, gms
from dynamo_infra.render.multinode import Deployer, Placement, Role, gpu_count
from dynamo_infra.render.names import discovery_service_account

# Group id that owns mounted volumes when the user sets no pod securityContext.
DEFAULT_FS_GROUP = 1000
# /dev/shm as a memory-backed emptyDir, resizable by `sharedMemorySize` (a zero quantity disables it).
SHARED_MEMORY_VOLUME = "shared-memory"
SHARED_MEMORY_PATH = "/dev/shm"
DEFAULT_SHARED_MEMORY_SIZE = "8Gi"
# Probes a user probe replaces whole rather than merging into.
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
# Operator-config addresses injected as env when set (container values win).
STANDARD_ENV = (
    ("NATS_SERVER", "nats_address"),
    ("ETCD_ENDPOINTS", "etcd_address"),
    ("MODEL_EXPRESS_URL", "model_express_url"),
    ("PROMETHEUS_ENDPOINT", "prometheus_endpoint"),
)
# Probe period of engines restored from a Ready checkpoint.
RESTORED_PROBE_PERIOD_S = 1
# Service account of pods that set none when Kubernetes discovery is off.
DEFAULT_SERVICE_ACCOUNT = "default"
_ZERO_QUANTITY = re.compile(r"^[+]?0*(\.0*)?([a-zA-Z]+|[eE][+-]?\d+)?$")


def _problem(ctx: ComponentContext, field: str, message: str) -> DynamoValidationError:
    return DynamoValidationError([Problem(f"components[{ctx.name}].{field}", message)])


def merge_container(base: Manifest, user: Manifest) -> Manifest:
    """mergeContainerByName: user fields override, env merged by name, probes replaced whole."""
    user = copy_json(user)
    merged = merge_override(base, {k: v for k, v in user.items() if k not in ("name", "env", *PROBES)})
    merged["env"] = merge_env(base.get("env"), user.get("env"))
    for probe in PROBES:
        if user.get(probe):
            merged[probe] = user[probe]
    merged["name"] = base["name"]
    return merged


def with_standard_env(ctx: ComponentContext, container: Manifest) -> Manifest:
    """AddStandardEnvVars: infrastructure addresses beneath the container's own env (sorted)."""
    infra = ctx.options.infrastructure
    standard = [
        {"name": env, "value": getattr(infra, attr)} for env, attr in STANDARD_ENV if getattr(infra, attr)
    ]
    return {**container, "env": merge_env(standard, container.get("env"))}


def compilation_cache_path(ctx: ComponentContext, backend: Backend) -> str | None:
    cache = ctx.spec.get("compilationCache")
    if not cache:
        return None
    if not cache.get("pvcName"):
        raise _problem(ctx, "compilationCache.pvcName", "is required when compilationCache is set")
    path = cache.get("mountPath") or backend.default_compilation_cache_path()
    if not path:
        raise _problem(
            ctx,
            "compilationCache.mountPath",
            f"is required for backend framework {backend.name} (no default available)",
        )
    return str(path)


def with_compilation_cache_mount(ctx: ComponentContext, container: Manifest, pvc: str, path: str) -> Manifest:
    """applyCompilationCache: one writable mount of the cache PVC at its path."""
    mounts: list[Manifest] = []
    mounted = False
    for m in container.get("volumeMounts") or []:
        m = dict(m)
        if m.get("name") == pvc and not m.get("mountPath"):
            m["mountPath"] = path
        if m.get("mountPath") != path:
            mounts.append(m)
            continue
        if m.get("name") != pvc:
            raise _problem(
                ctx, "compilationCache.mountPath", f"{path!r} is already used by volume {m.get('name')!r}"
            )
        if m.get("readOnly"):
            raise _problem(ctx, "compilationCache", f"volume {pvc!r} at {path!r} must be writable")
        if not mounted:
            mounts.append(m)
            mounted = True
    if not mounted:
        mounts.append({"name": pvc, "mountPath": path})
    return {**container, "volumeMounts": mounts}


def validate_mounts(ctx: ComponentContext, container: Manifest) -> None:
    for m in container.get("volumeMounts") or []:
        if not m.get("name"):
            raise _problem(ctx, "podTemplate", "volumeMount.name is required")
        if not m.get("mountPath"):
            raise _problem(ctx, "podTemplate", f"volumeMount.mountPath is required for {m['name']}")


def with_compilation_cache_volume(ctx: ComponentContext, pod: Manifest, pvc: str) -> Manifest:
    found = False
    for v in pod.get("volumes") or []:
        if v.get("name") != pvc:
            continue
        claim = v.get("persistentVolumeClaim")
        if claim is None or claim.get("claimName") != pvc or claim.get("readOnly"):
            raise _problem(
                ctx, "compilationCache", f"volume {pvc!r} must be a writable PVC volume of claim {pvc!r}"
            )
        if found:
            raise _problem(ctx, "compilationCache", f"volume {pvc!r} is defined more than once")
        found = True
    if found:
        return pod
    return {
        **pod,
        "volumes": [*(pod.get("volumes") or []), {"name": pvc, "persistentVolumeClaim": {"claimName": pvc}}],
    }


def is_zero_quantity(size: str | int | None) -> bool:
    return size is not None and (size == 0 or bool(_ZERO_QUANTITY.match(str(size))))


def with_shared_memory(pod: Manifest, main: Manifest, size: str | int | None) -> tuple[Manifest, Manifest]:
    """/dev/shm volume and mount, replacing any of the same name (or path); off for size 0."""
    if is_zero_quantity(size):
        return pod, main
    volume = {
        "name": SHARED_MEMORY_VOLUME,
        "emptyDir": {"medium": "Memory", "sizeLimit": str(size or DEFAULT_SHARED_MEMORY_SIZE)},
    }
    mount = {"name": SHARED_MEMORY_VOLUME, "mountPath": SHARED_MEMORY_PATH}
    volumes = [v for v in pod.get("volumes") or [] if v.get("name") != SHARED_MEMORY_VOLUME]
    mounts = [
        m
        for m in main.get("volumeMounts") or []
        if m.get("name") != SHARED_MEMORY_VOLUME and m.get("mountPath") != SHARED_MEMORY_PATH
    ]
    return {**pod, "volumes": [*volumes, volume]}, {**main, "volumeMounts": [*mounts, mount]}


def with_frontend_sidecar(
    ctx: ComponentContext, pod: Manifest, sidecar: str, parent_mounts: list[Manifest]
) -> Manifest:
    """mergeFrontendSidecarDefaults: frontend defaults under the named container, main's mounts added."""
    containers = list(pod.get("containers") or [])
    for i, c in enumerate(containers):
        if c.get("name") != sidecar:
            continue
        merged = with_standard_env(ctx, merge_container(frontend_container(ctx, sidecar), c))
        seen = {m.get("name") for m in merged.get("volumeMounts") or []}
        extra = [m for m in parent_mounts if m.get("name") not in seen]
        if extra:
            merged["volumeMounts"] = [*(merged.get("volumeMounts") or []), *extra]
        containers[i] = merged
        return {**pod, "containers": containers}
    raise _problem(ctx, "frontendSidecar", f"{sidecar!r} does not match any podTemplate container")


def with_implicit_pvc_volumes(pod: Manifest) -> Manifest:
    """appendMissingPVCVolumesForMounts: volumes in main's mount order, unknown mounts become PVCs."""
    volumes = list(pod.get("volumes") or [])
    by_name = {v.get("name"): v for v in volumes}
    ordered: list[Manifest] = []
    seen: set[str] = set()
    for m in (pod.get("containers") or [{}])[0].get("volumeMounts") or []:
        name = m.get("name")
        if not name or name in seen:
            continue
        ordered.append(by_name.get(name) or {"name": name, "persistentVolumeClaim": {"claimName": name}})
        seen.add(name)
    ordered.extend(v for v in volumes if v.get("name") not in seen)
    return {**pod, "volumes": ordered} if ordered else pod


def placement(ctx: ComponentContext, deployer: Deployer, role: Role = Role.MAIN) -> Placement:
    """Where one pod spec of the component goes (group size, GPUs of main, parent graph)."""
    return Placement(
        deployer=deployer,
        role=role,
        nodes=ctx.node_count,
        gpus=gpu_count((ctx.container(MAIN_CONTAINER) or {}).get("resources")),
        graph=ctx.parent_name,
    )


def pod_spec(ctx: ComponentContext, where: Placement) -> Manifest:
    """GenerateBasePodSpec: the pod spec of one role of a component (before pull secrets).

    In sidecar mode (`ctx.runtime_sidecar`) Dynamo's container defaults, infrastructure env, ports
    and probes go to the `runtime` init container; `main` is the engine as the user wrote it, plus
    the compilation cache, the backend's engine settings and /dev/shm.
    """
    sidecar_mode = ctx.runtime_sidecar is not None
    if sidecar_mode:
        check_runtime_sidecar(ctx)
    ctype = defaults_for(ctx.type)
    backend = component_backend(ctx)
    container = {"name": MAIN_CONTAINER} if sidecar_mode else ctype.container(ctx)
    user_main = ctx.container(MAIN_CONTAINER)
    if user_main is not None:
        container = merge_container(container, user_main)
    cache_pvc = (ctx.spec.get("compilationCache") or {}).get("pvcName")
    cache_path = compilation_cache_path(ctx, backend)
    if cache_path:
        container = with_compilation_cache_mount(ctx, container, str(cache_pvc), cache_path)
        cache = {**ctx.spec["compilationCache"], "mountPath": cache_path}
        ctx = dataclasses.replace(ctx, spec={**ctx.spec, "compilationCache": cache})
    validate_mounts(ctx, container)
    if not sidecar_mode:
        container = with_standard_env(ctx, container)
    sidecar_mounts = list(container.get("volumeMounts") or [])
    container = roles.with_topology_env(ctx, container, where)
    container = backend.container(ctx, container, where)
    restoring = restores_from_checkpoint(ctx)
    if restoring:
        container = with_checkpoint_probe_cadence(container)

    user_spec = copy_json(ctx.template_spec)
    sidecars = [c for c in user_spec.pop("containers", None) or [] if c.get("name") != MAIN_CONTAINER]
    pod = merge_override(ctype.pod_spec(ctx), user_spec)
    if user_spec.get("securityContext") is None:
        pod["securityContext"] = {"fsGroup": DEFAULT_FS_GROUP, **(pod.get("securityContext") or {})}
    if ctx.k8s_discovery and not pod.get("serviceAccountName"):
        pod["serviceAccountName"] = discovery_service_account(ctx.parent_name)
    if cache_path:
        pod = with_compilation_cache_volume(ctx, pod, str(cache_pvc))
    pod, container = with_shared_memory(pod, container, ctx.spec.get("sharedMemorySize"))
    if sidecar_mode and not container.get("env"):
        container.pop("env", None)
    pod["containers"] = [container, *sidecars]
    if sidecar_mode:
        pod = with_runtime_sidecar(ctx, pod)
    if ctx.spec.get("frontendSidecar"):
        pod = with_frontend_sidecar(ctx, pod, str(ctx.spec["frontendSidecar"]), sidecar_mounts)
    pod = backend.pod_spec(ctx, pod, where)
    pod = with_implicit_pvc_volumes(pod)
    if ctx.gms is not None and not ctx.inter_pod_gms:
        pod = gms.intra_pod(ctx, pod)
    if ctx.intra_pod_failover:
        pod = failover.intra_pod(ctx, pod, backend, where.nodes)
    if checkpoint.restores_in_template(ctx):
        pod = checkpoint.restore_pod_spec(ctx, pod)
    return pod


def check_runtime_sidecar(ctx: ComponentContext) -> None:
    """The webhook's sidecar rules, rechecked at render (components that bypassed admission)."""
    problems = sidecar_problems(
        ctx.spec, ctx.name, lambda *parts: join_path(f"components[{ctx.name}]", *parts)
    )
    if problems:
        raise DynamoValidationError(problems)


def with_runtime_sidecar(ctx: ComponentContext, pod: Manifest) -> Manifest:
    """mergeDynamoSidecarDefaults: Dynamo's defaults under the user's `runtime` init container."""
    init = list(pod.get("initContainers") or [])
    for i, c in enumerate(init):
        if c.get("name") == ctx.runtime_container:
            init[i] = with_standard_env(ctx, merge_container(runtime_sidecar_container(ctx), c))
            return {**pod, "initContainers": init}
    raise _problem(ctx, "podTemplate.spec.initContainers", f"{ctx.runtime_container!r} is missing")


def restores_from_checkpoint(ctx: ComponentContext) -> bool:
    """The cluster runs checkpointing and the component's checkpoint is observed Ready."""
    return ctx.options.checkpoint.enabled and ctx.checkpoint is not None and bool(ctx.checkpoint_ready)


def with_checkpoint_probe_cadence(container: Manifest) -> Manifest:
    """Restored engines come up in seconds: readiness and startup probes poll every second."""
    out = dict(container)
    for probe in ("readinessProbe", "startupProbe"):
        if out.get(probe):
            out[probe] = {**out[probe], "periodSeconds": RESTORED_PROBE_PERIOD_S}
    return out


def with_default_service_account(pod: Manifest) -> Manifest:
    """The DCD controller's fallback when no service account is set."""
    return pod if pod.get("serviceAccountName") else {**pod, "serviceAccountName": DEFAULT_SERVICE_ACCOUNT}
