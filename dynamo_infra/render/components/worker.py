"""Worker components (worker, prefill, decode): the inference engines.

WorkerDefaults.GetBaseContainer as the operator has it at the 1.6.0 cut (michaelfeil/dynamo 80b177f2,
`internal/dynamo/component_worker.go`): two defaults follow the component's resolved runtime version
(CanaryHealthChecks, IncreasedWorkerFailureThreshold); below 1.5.0 or unresolved they are as at our pin.
No backend opts out of the canary health checks there (`backend_{vllm,sglang,trtllm}.go` at 80b177f2).
"""

from __future__ import annotations

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.api.releases import CANARY_HEALTH_CHECKS, INCREASED_WORKER_FAILURE_THRESHOLD
from dynamo_infra.render.components.common import (
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
# Probe timings (liveness failureThreshold as at the pin; see LIVENESS_FAILURE_THRESHOLD_INCREASED).
LIVENESS = {"periodSeconds": 5, "timeoutSeconds": 4, "failureThreshold": 1}
# Liveness failures before a restart from runtime 1.5.0 on (IncreasedWorkerFailureThreshold).
LIVENESS_FAILURE_THRESHOLD_INCREASED = 3
READINESS = {"periodSeconds": 10, "timeoutSeconds": 4, "failureThreshold": 3}
STARTUP = {"periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 720}
# Endpoints whose health makes a worker ready.
HEALTH_ENDPOINTS = '["generate"]'
# Canary health checks: off below runtime 1.5.0 (as at the pin), on from it (CanaryHealthChecks).
HEALTH_CHECK_ENABLED = "false"
HEALTH_CHECK_ENABLED_CANARY = "true"


def health_check_enabled(ctx: ComponentContext) -> str:
    """`DYN_HEALTH_CHECK_ENABLED` for the component's runtime version."""
    return (
        HEALTH_CHECK_ENABLED_CANARY
        if CANARY_HEALTH_CHECKS.enabled(ctx.runtime_version)
        else HEALTH_CHECK_ENABLED
    )


def liveness_failure_threshold(ctx: ComponentContext) -> int:
    """The worker liveness probe's failureThreshold for the component's runtime version."""
    if INCREASED_WORKER_FAILURE_THRESHOLD.enabled(ctx.runtime_version):
        return LIVENESS_FAILURE_THRESHOLD_INCREASED
    return LIVENESS["failureThreshold"]


def worker_env(ctx: ComponentContext) -> list[Manifest]:
    env = [
        {"name": "DYN_SYSTEM_ENABLED", "value": "true"},
        {"name": "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS", "value": HEALTH_ENDPOINTS},
        {"name": "DYN_SYSTEM_PORT", "value": str(SYSTEM_PORT)},
        {"name": "DYN_HEALTH_CHECK_ENABLED", "value": health_check_enabled(ctx)},
        {"name": "NIXL_TELEMETRY_ENABLE", "value": "n"},
        {"name": "NIXL_TELEMETRY_EXPORTER", "value": "prometheus"},
        {"name": "NIXL_TELEMETRY_PROMETHEUS_PORT", "value": str(NIXL_PORT)},
        {"name": "DYN_FORWARDPASS_METRIC_PORT", "value": str(FORWARDPASS_METRIC_PORT)},
    ]
    if ctx.worker_hash:
        env.append({"name": "DYN_NAMESPACE_WORKER_SUFFIX", "value": ctx.worker_hash})
    return env


def system_probes(liveness_failures: int = LIVENESS["failureThreshold"]) -> Manifest:
    """The system-port probes (the planner's too); `liveness_failures` restarts the container."""
    return {
        "livenessProbe": http_probe(
            "/live", SYSTEM_PORT_NAME, **{**LIVENESS, "failureThreshold": liveness_failures}
        ),
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
            **system_probes(liveness_failure_threshold(ctx)),
        }
