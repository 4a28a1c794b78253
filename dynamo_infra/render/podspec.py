"""GenerateBasePodSpec: a component's pod spec, in the operator's merge order."""

from __future__ import annotations

import copy
from collections.abc import Mapping

from dynamo_infra.api.merge import merge_env, merge_override
from dynamo_infra.render.component_type import MAIN_CONTAINER, ComponentType, Obj, Other
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.frontend import Frontend
from dynamo_infra.render.names import discovery_service_account
from dynamo_infra.render.planner import Planner
from dynamo_infra.render.worker import Worker

COMPONENT_TYPES: Mapping[str, ComponentType] = {
    "frontend": Frontend(),
    "worker": Worker(),
    "prefill": Worker(),
    "decode": Worker(),
    "planner": Planner(),
}
OTHER: ComponentType = Other()

# Group id that owns mounted volumes when the user sets no pod securityContext.
DEFAULT_FS_GROUP = 1000
# /dev/shm as a memory-backed emptyDir, resizable by `sharedMemorySize` ("0" disables it).
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


def component_type(type_name: str) -> ComponentType:
    return COMPONENT_TYPES.get(type_name, OTHER)


def main_container(ctx: ComponentContext) -> Obj:
    """Base container of the type, with the user's `main` container and the DGD env merged in."""
    base = component_type(ctx.type).container(ctx)
    user = (
        copy.deepcopy(
            ctx.component.pod_template.container(MAIN_CONTAINER) if ctx.component.pod_template else None
        )
        or {}
    )
    user_env = merge_env(ctx.graph.dgd.spec.env, user.get("env"))
    rest = {k: v for k, v in user.items() if k not in ("name", "env", *PROBES)}
    container = merge_override(base, rest)
    for probe in PROBES:
        if user.get(probe):
            container[probe] = user[probe]
    container["env"] = merge_env(base.get("env"), user_env)
    infra = ctx.graph.options.infrastructure
    present = {e["name"] for e in container["env"]}
    extra = [
        {"name": env, "value": getattr(infra, attr)}
        for env, attr in STANDARD_ENV
        if getattr(infra, attr) and env not in present
    ]
    if extra:
        container["env"] = merge_env(container["env"], extra)
    return container


def _with_shared_memory(pod: Obj, main: Obj, size: str | int | None) -> tuple[Obj, Obj]:
    if str(size) == "0":
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


def pod_spec(ctx: ComponentContext) -> Obj:
    """The pod spec the operator generates for a single-node component."""
    main = main_container(ctx)
    user_spec = copy.deepcopy((ctx.component.pod_template.spec if ctx.component.pod_template else None) or {})
    sidecars = [c for c in user_spec.pop("containers", None) or [] if c.get("name") != MAIN_CONTAINER]
    pod = merge_override(component_type(ctx.type).pod_spec(ctx), user_spec)
    if "securityContext" not in user_spec:
        pod["securityContext"] = {"fsGroup": DEFAULT_FS_GROUP}
    if not pod.get("serviceAccountName") and ctx.graph.discovery_backend == "kubernetes":
        pod["serviceAccountName"] = discovery_service_account(ctx.graph.name)
    pod, main = _with_shared_memory(pod, main, ctx.component.shared_memory_size)
    pod["containers"] = [main, *sidecars]
    return pod
