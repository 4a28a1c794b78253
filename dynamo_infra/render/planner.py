"""Planner component: scales workers from Prometheus metrics."""

from __future__ import annotations

from dynamo_infra.render.component_type import DEFAULT_COMMAND, MAIN_CONTAINER, Obj, base_pod_spec, common_env
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.worker import SYSTEM_PORT, SYSTEM_PORT_NAME, system_probes

# Port the planner exports its Prometheus metrics on.
PLANNER_METRICS_PORT = 9085
# Service account the planner runs as (bound to the planner role by the platform).
PLANNER_SERVICE_ACCOUNT = "planner-serviceaccount"


class Planner:
    def container(self, ctx: ComponentContext) -> Obj:
        return {
            "name": MAIN_CONTAINER,
            "command": list(DEFAULT_COMMAND),
            "env": [
                *common_env(ctx),
                {"name": "PLANNER_PROMETHEUS_PORT", "value": str(PLANNER_METRICS_PORT)},
                {"name": "DYN_SYSTEM_PORT", "value": str(SYSTEM_PORT)},
            ],
            "ports": [
                {"name": "metrics", "containerPort": PLANNER_METRICS_PORT, "protocol": "TCP"},
                {"name": SYSTEM_PORT_NAME, "containerPort": SYSTEM_PORT, "protocol": "TCP"},
            ],
            **system_probes(),
        }

    def pod_spec(self, ctx: ComponentContext) -> Obj:
        return {**base_pod_spec(), "serviceAccountName": PLANNER_SERVICE_ACCOUNT}

    def service_ports(self, ctx: ComponentContext) -> list[Obj] | None:
        if ctx.graph.discovery_backend == "etcd":
            return None
        return [{"name": SYSTEM_PORT_NAME, "port": SYSTEM_PORT, "targetPort": SYSTEM_PORT, "protocol": "TCP"}]
