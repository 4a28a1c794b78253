"""Intra-pod failover: the main container cloned into an active and a standby engine that share the
pod's GPUs through the GPU memory service; backend-specific port staggering from a mapping."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from dynamo_infra.api import DynamoValidationError, Problem
from dynamo_infra.render.context import ComponentContext, Obj
from dynamo_infra.render.gms import INTRAPOD_PATH

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
# vLLM: NIXL side channel 5600+N, KV events 20080+N, torch.distributed master port 29500+100N.
VLLM_NIXL_SIDE_CHANNEL_BASE = 5600
VLLM_KV_EVENT_PORT_BASE = 20080
VLLM_MASTER_PORT = 29500
VLLM_MASTER_PORT_STRIDE = 100
MASTER_PORT_FLAG = "--master-port"


def engine_name(n: int) -> str:
    return f"engine-{n}"


def engine_container(base: Obj, n: int) -> Obj:
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


def _stagger_master_port(container: Obj, offset: int) -> Obj:
    args = list(container.get("args") or [])
    for i, arg in enumerate(args[:-1]):
        if arg == MASTER_PORT_FLAG and args[i + 1].isdigit():
            args[i + 1] = str(int(args[i + 1]) + offset)
            return {**container, "args": args}
    embedded = re.compile(rf"{MASTER_PORT_FLAG} (\d+)")
    for key in ("args", "command"):
        tokens = list(container.get(key) or [])
        for i, token in enumerate(tokens):
            m = embedded.search(token)
            if m:
                tokens[i] = token[: m.start(1)] + str(int(m[1]) + offset) + token[m.end(1) :]
                return {**container, key: tokens}
    return container


def _has_master_port(container: Obj) -> bool:
    args = container.get("args") or []
    return any(a == MASTER_PORT_FLAG or f"{MASTER_PORT_FLAG} " in a for a in args) or any(
        f"{MASTER_PORT_FLAG} " in c for c in container.get("command") or []
    )


def vllm_engine(engine: Obj, n: int, nodes: int) -> Obj:
    env = [
        {"name": "DYN_VLLM_GMS_SHADOW_MODE", "value": "true"},
        {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": str(VLLM_NIXL_SIDE_CHANNEL_BASE + n)},
        {"name": "DYN_VLLM_KV_EVENT_PORT", "value": str(VLLM_KV_EVENT_PORT_BASE + n)},
    ]
    engine = {**engine, "env": [*engine["env"], *env]}
    if n > 0:
        offset = n * VLLM_MASTER_PORT_STRIDE
        if _has_master_port(engine):
            engine = _stagger_master_port(engine, offset)
        else:
            engine = {
                **engine,
                "args": [*(engine.get("args") or []), MASTER_PORT_FLAG, str(VLLM_MASTER_PORT + offset)],
            }
    if nodes > 1:
        engine = {**engine, "env": [*engine["env"], {"name": "NNODES", "value": str(nodes)}]}
    return engine


# Per-backend engine adjustments; backends not listed do not support failover at the pin.
ENGINE_OVERRIDES: Mapping[str, Callable[[Obj, int, int], Obj]] = {"vllm": vllm_engine}


def intra_pod(ctx: ComponentContext, pod: Obj, backend: str, nodes: int) -> Obj:
    """Main becomes engine-0 and engine-1 (sidecars kept after them)."""
    override = ENGINE_OVERRIDES.get(backend)
    if override is None:
        raise DynamoValidationError(
            [
                Problem(
                    f"spec.components[{ctx.name}].experimental.failover",
                    f"failover is currently supported only for vLLM (detected: {backend})",
                )
            ]
        )
    containers = list(pod.get("containers") or [])
    engines = [override(engine_container(containers[0], n), n, nodes) for n in range(ENGINE_COUNT)]
    return {**pod, "containers": [*engines, *containers[1:]]}
