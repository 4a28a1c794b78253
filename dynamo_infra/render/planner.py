"""Planner component: scales workers from Prometheus metrics."""

from __future__ import annotations

from dynamo_infra.render.component_type import (
    SYSTEM_PORT,
    SYSTEM_PORT_NAME,
    base_pod_spec,
    common_container,
    system_service_port,
)
from dynamo_infra.render.context import ComponentContext, Obj
from dynamo_infra.render.worker import system_probes

# Port the planner exports its Prometheus metrics on.
PLANNER_METRICS_PORT = 9085
# Service account the planner runs as (bound to the planner role by the platform).
PLANNER_SERVICE_ACCOUNT = "planner-serviceaccount"


class Planner:
    def container(self, ctx: ComponentContext) -> Obj:
        base = common_container(ctx)
        return {
            **base,
            "env": [
                *base["env"],
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

    def service_port(self, ctx: ComponentContext) -> Obj:
        return system_service_port()
