"""Per component type: the base container and base pod spec the operator starts from."""

from __future__ import annotations

from typing import Any, Protocol

from dynamo_infra.render.context import ComponentContext

Obj = dict[str, Any]

# Every Dynamo pod's runtime container.
MAIN_CONTAINER = "main"
# Command of a component type that sets none (the user supplies args or a full command).
DEFAULT_COMMAND = ["/bin/sh", "-c"]
# Pod defaults for every component type.
DEFAULT_TERMINATION_GRACE_PERIOD_S = 60
DEFAULT_RESTART_POLICY = "Always"


class ComponentType(Protocol):
    """What a component type contributes before user settings are merged in."""

    def container(self, ctx: ComponentContext) -> Obj: ...

    def pod_spec(self, ctx: ComponentContext) -> Obj: ...

    def service_ports(self, ctx: ComponentContext) -> list[Obj] | None:
        """Ports of the component's Service, or None when this type gets no Service."""
        ...


def field_env(name: str, path: str) -> Obj:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def common_env(ctx: ComponentContext) -> list[Obj]:
    """Env every Dynamo container gets (component_common.go)."""
    env: list[Obj] = [
        {"name": "DYN_NAMESPACE", "value": ctx.dynamo_namespace},
        {"name": "DYN_COMPONENT", "value": ctx.type},
        {"name": "DYN_PARENT_DGD_K8S_NAME", "value": ctx.graph.name},
        {"name": "DYN_PARENT_DGD_K8S_NAMESPACE", "value": ctx.graph.namespace},
        field_env("POD_NAME", "metadata.name"),
        field_env("POD_NAMESPACE", "metadata.namespace"),
        field_env("POD_UID", "metadata.uid"),
    ]
    if ctx.graph.discovery_backend != "etcd":
        env.append({"name": "DYN_DISCOVERY_BACKEND", "value": "kubernetes"})
    return env


def base_pod_spec() -> Obj:
    return {
        "terminationGracePeriodSeconds": DEFAULT_TERMINATION_GRACE_PERIOD_S,
        "restartPolicy": DEFAULT_RESTART_POLICY,
    }


def http_probe(path: str, port: str, **timing: int) -> Obj:
    return {"httpGet": {"path": path, "port": port}, **timing}


class Other:
    """Components without a known type: common env only; a Service only with Kubernetes discovery."""

    def container(self, ctx: ComponentContext) -> Obj:
        return {"name": MAIN_CONTAINER, "command": list(DEFAULT_COMMAND), "env": common_env(ctx)}

    def pod_spec(self, ctx: ComponentContext) -> Obj:
        return base_pod_spec()

    def service_ports(self, ctx: ComponentContext) -> list[Obj] | None:
        from dynamo_infra.render.worker import SYSTEM_PORT

        if ctx.graph.discovery_backend == "etcd":
            return None
        return [{"name": "system", "port": SYSTEM_PORT, "targetPort": SYSTEM_PORT, "protocol": "TCP"}]
