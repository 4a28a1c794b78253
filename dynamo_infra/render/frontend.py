"""Frontend component: the OpenAI-compatible HTTP entry point."""

from __future__ import annotations

from dynamo_infra.render.component_type import (
    MAIN_CONTAINER,
    Obj,
    base_pod_spec,
    common_env,
    http_probe,
)
from dynamo_infra.render.context import ComponentContext

# HTTP port the frontend serves on (container port `http`, Service port `http`).
HTTP_PORT = 8000
HTTP_PORT_NAME = "http"
# Frontend entry point.
COMMAND = ["python3"]
ARGS = ["-m", "dynamo.frontend"]
# Probe timings at the parity pin (the older docs' /health-after-60s liveness is superseded).
LIVENESS = {"initialDelaySeconds": 15, "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3}
READINESS = {"initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 3, "failureThreshold": 3}


class Frontend:
    def container(self, ctx: ComponentContext) -> Obj:
        env = [
            *common_env(ctx),
            {"name": "DYNAMO_PORT", "value": str(HTTP_PORT)},
            {"name": "DYN_HTTP_PORT", "value": str(HTTP_PORT)},
            {"name": "DYN_NAMESPACE_PREFIX", "value": ctx.dynamo_namespace},
        ]
        return {
            "name": MAIN_CONTAINER,
            "command": list(COMMAND),
            "args": list(ARGS),
            "env": env,
            "ports": [{"name": HTTP_PORT_NAME, "containerPort": HTTP_PORT, "protocol": "TCP"}],
            "livenessProbe": http_probe("/live", HTTP_PORT_NAME, **LIVENESS),
            "readinessProbe": http_probe("/health", HTTP_PORT_NAME, **READINESS),
        }

    def pod_spec(self, ctx: ComponentContext) -> Obj:
        return base_pod_spec()

    def service_ports(self, ctx: ComponentContext) -> list[Obj] | None:
        return [{"name": HTTP_PORT_NAME, "port": HTTP_PORT, "targetPort": HTTP_PORT_NAME, "protocol": "TCP"}]
