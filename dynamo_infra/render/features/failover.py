"""Intra-pod failover: the main container cloned into an active and a standby engine that share the
pod's GPUs through the GPU memory service; each backend adjusts its engines (or refuses failover)."""

from __future__ import annotations

from dynamo_infra.api import DynamoValidationError, Problem
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.backends.table import Backend
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.features.gms import INTRAPOD_PATH

# Active + standby.
ENGINE_COUNT = 2
# Engine N serves its Dynamo system server on 9090+N and forward-pass metrics on 20380+N.
SYSTEM_PORT_BASE = 9090
FORWARDPASS_METRIC_PORT_BASE = 20380
# Lock the engines race for: the holder is the active engine.
LOCK_PATH = f"{INTRAPOD_PATH}/failover.lock"
# Env the clone replaces with per-engine values or drops.
REPLACED_ENV = frozenset(
    {
        "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS",
        "DYN_SYSTEM_PORT",
        "DYN_SYSTEM_ENABLED",
        "DYN_HEALTH_CHECK_ENABLED",
        "CONTAINER_NAME",
        "DYN_FORWARDPASS_METRIC_PORT",
    }
)


def engine_name(n: int) -> str:
    return f"engine-{n}"


def engine_container(base: Manifest, n: int) -> Manifest:
    """Engine N: its own system port (`system-N`), env and probes retargeted to it."""
    name, port_name, port = engine_name(n), f"system-{n}", SYSTEM_PORT_BASE + n
    env = [e for e in base.get("env") or [] if e.get("name") not in REPLACED_ENV]
    env += [
        {"name": "ENGINE_ID", "value": str(n)},
        {"name": "CONTAINER_NAME", "value": name},
        {"name": "FAILOVER_LOCK_PATH", "value": LOCK_PATH},
        {"name": "DYN_SYSTEM_STARTING_HEALTH_STATUS", "value": "notready"},
        {"name": "DYN_SYSTEM_PORT", "value": str(port)},
        {"name": "DYN_SYSTEM_ENABLED", "value": "true"},
        {"name": "DYN_FORWARDPASS_METRIC_PORT", "value": str(FORWARDPASS_METRIC_PORT_BASE + n)},
    ]
    engine = {
        **base,
        "name": name,
        "env": env,
        "ports": [{"name": port_name, "containerPort": port, "protocol": "TCP"}],
    }
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        if engine.get(probe, {}).get("httpGet"):
            engine[probe] = {**engine[probe], "httpGet": {**engine[probe]["httpGet"], "port": port_name}}
    return engine


def intra_pod(ctx: ComponentContext, pod: Manifest, backend: Backend, nodes: int) -> Manifest:
    """Main becomes engine-0 and engine-1 (sidecars kept after them)."""
    containers = list(pod.get("containers") or [])
    clones = [
        backend.failover_engine(engine_container(containers[0], n), n, nodes) for n in range(ENGINE_COUNT)
    ]
    engines = [e for e in clones if e is not None]
    if len(engines) != ENGINE_COUNT:
        raise DynamoValidationError(
            [
                Problem(
                    f"spec.components[{ctx.name}].experimental.failover",
                    f"failover is currently supported only for vLLM (detected: {backend.name})",
                )
            ]
        )
    return {**pod, "containers": [*engines, *containers[1:]]}
