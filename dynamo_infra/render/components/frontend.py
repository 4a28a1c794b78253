"""Frontend component: the OpenAI-compatible HTTP entry point."""

from __future__ import annotations

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.components.common import BaseComponentDefaults, common_env, http_probe
from dynamo_infra.render.context import ComponentContext

# HTTP port the frontend serves on (container port `http`, Service port `http`).
HTTP_PORT = 8000
HTTP_PORT_NAME = "http"
# Component type the frontend defaults (and a worker's frontend sidecar) run as.
FRONTEND = "frontend"
# Frontend entry point.
COMMAND = ["python3"]
ARGS = ["-m", "dynamo.frontend"]
# Probe timings at the parity pin (the older docs' /health-after-60s liveness is superseded).
LIVENESS = {"initialDelaySeconds": 15, "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3}
READINESS = {"initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 3, "failureThreshold": 3}


def frontend_container(ctx: ComponentContext, name: str) -> Manifest:
    """The frontend defaults, also merged into a worker's frontend sidecar."""
    env = [
        *common_env(ctx, FRONTEND),
        {"name": "DYNAMO_PORT", "value": str(HTTP_PORT)},
        {"name": "DYN_HTTP_PORT", "value": str(HTTP_PORT)},
        {"name": "DYN_NAMESPACE_PREFIX", "value": ctx.runtime_dynamo_namespace},
    ]
    return {
        "name": name,
        "command": list(COMMAND),
        "args": list(ARGS),
        "env": env,
        "ports": [{"name": HTTP_PORT_NAME, "containerPort": HTTP_PORT, "protocol": "TCP"}],
        "livenessProbe": http_probe("/live", HTTP_PORT_NAME, **LIVENESS),
        "readinessProbe": http_probe("/health", HTTP_PORT_NAME, **READINESS),
    }


class Frontend(BaseComponentDefaults):
    service_without_discovery = True
    cluster_ingress = True

    def container(self, ctx: ComponentContext) -> Manifest:
        return frontend_container(ctx, "main")

    def service_port(self, ctx: ComponentContext) -> Manifest:
        return {"name": HTTP_PORT_NAME, "port": HTTP_PORT, "targetPort": HTTP_PORT_NAME, "protocol": "TCP"}
