"""Worker components (worker, prefill, decode): the inference engines."""

from __future__ import annotations

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.component_common import (
    SYSTEM_PORT,
    SYSTEM_PORT_NAME,
    BaseComponentDefaults,
    common_container,
    http_probe,
)
from dynamo_infra.render.context import ComponentContext

__all__ = ["SYSTEM_PORT", "SYSTEM_PORT_NAME", "Worker", "system_probes"]

# NIXL telemetry exporter port.
NIXL_PORT = 19090
NIXL_PORT_NAME = "nixl"
# Forward-pass metrics port.
FORWARDPASS_METRIC_PORT = 20380
# Probe timings at the parity pin (liveness failureThreshold 1 whatever the runtime version).
LIVENESS = {"periodSeconds": 5, "timeoutSeconds": 4, "failureThreshold": 1}
READINESS = {"periodSeconds": 10, "timeoutSeconds": 4, "failureThreshold": 3}
STARTUP = {"periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 720}
# Endpoints whose health makes a worker ready.
HEALTH_ENDPOINTS = '["generate"]'
# Per-endpoint health checks are off at the pin whatever the runtime version.
HEALTH_CHECK_ENABLED = "false"


def worker_env(ctx: ComponentContext) -> list[Manifest]:
    env = [
        {"name": "DYN_SYSTEM_ENABLED", "value": "true"},
        {"name": "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS", "value": HEALTH_ENDPOINTS},
        {"name": "DYN_SYSTEM_PORT", "value": str(SYSTEM_PORT)},
        {"name": "DYN_HEALTH_CHECK_ENABLED", "value": HEALTH_CHECK_ENABLED},
        {"name": "NIXL_TELEMETRY_ENABLE", "value": "n"},
        {"name": "NIXL_TELEMETRY_EXPORTER", "value": "prometheus"},
        {"name": "NIXL_TELEMETRY_PROMETHEUS_PORT", "value": str(NIXL_PORT)},
        {"name": "DYN_FORWARDPASS_METRIC_PORT", "value": str(FORWARDPASS_METRIC_PORT)},
    ]
    if ctx.worker_hash:
        env.append({"name": "DYN_NAMESPACE_WORKER_SUFFIX", "value": ctx.worker_hash})
    return env


def system_probes() -> Manifest:
    return {
        "livenessProbe": http_probe("/live", SYSTEM_PORT_NAME, **LIVENESS),
        "readinessProbe": http_probe("/health", SYSTEM_PORT_NAME, **READINESS),
        "startupProbe": http_probe("/live", SYSTEM_PORT_NAME, **STARTUP),
    }


class Worker(BaseComponentDefaults):
    # The planner (1.4.0) scales components of type worker, prefill and decode.
    planner_scaled = True

    def __init__(self, sub_component_type: str | None = None) -> None:
        self.sub_component_type = sub_component_type

    def container(self, ctx: ComponentContext) -> Manifest:
        base = common_container(ctx)
        return {
            **base,
            "env": [*base["env"], *worker_env(ctx)],
            "ports": [
                {"name": SYSTEM_PORT_NAME, "containerPort": SYSTEM_PORT, "protocol": "TCP"},
                {"name": NIXL_PORT_NAME, "containerPort": NIXL_PORT, "protocol": "TCP"},
            ],
            **system_probes(),
        }
