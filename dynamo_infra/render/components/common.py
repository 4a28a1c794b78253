"""What every component type starts from: the common env, container and pod spec, and the defaults
of a component whose type has no module of its own (BaseComponentDefaults)."""

from __future__ import annotations

from collections.abc import Mapping

from dynamo_infra.api import Problem, v1beta1
from dynamo_infra.api.admission.sidecar import SIDECAR_RESTART_POLICY
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.context import (
    DISCOVERY_ETCD,
    DISCOVERY_KUBERNETES,
    DISCOVERY_MODE_CONTAINER,
    MAIN_CONTAINER,
    ComponentContext,
)

__all__ = ["MAIN_CONTAINER", "BaseComponentDefaults", "Manifest"]

# Command of a component type that sets none (the user supplies args or a full command).
DEFAULT_COMMAND = ["/bin/sh", "-c"]
# Pod defaults for every component type.
DEFAULT_TERMINATION_GRACE_PERIOD_S = 60
DEFAULT_RESTART_POLICY = "Always"
# Dynamo system server (health, metrics) port, exposed by the Service of non-frontend components.
SYSTEM_PORT = 9090
SYSTEM_PORT_NAME = "system"
# Sidecar mode: the runtime's probes watch only its own HTTP server, never the engine's model loading.
SIDECAR_STARTUP = {"periodSeconds": 2, "timeoutSeconds": 1, "failureThreshold": 30}
SIDECAR_LIVENESS = {"periodSeconds": 5, "timeoutSeconds": 4, "failureThreshold": 3}
SIDECAR_READINESS = {"periodSeconds": 5, "timeoutSeconds": 4, "failureThreshold": 3}


def field_env(name: str, path: str) -> Manifest:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def common_env(ctx: ComponentContext, component_type: str | None = None) -> list[Manifest]:
    """Env every Dynamo container gets (component_common.go), in the operator's order."""
    env: list[Manifest] = [
        {"name": "DYN_NAMESPACE", "value": ctx.runtime_dynamo_namespace},
        {"name": "DYN_COMPONENT", "value": ctx.type if component_type is None else component_type},
        {"name": "DYN_PARENT_DGD_K8S_NAME", "value": ctx.parent_name},
        {"name": "DYN_PARENT_DGD_K8S_NAMESPACE", "value": ctx.namespace},
        field_env("POD_NAME", "metadata.name"),
        field_env("POD_NAMESPACE", "metadata.namespace"),
        field_env("POD_UID", "metadata.uid"),
    ]
    if ctx.discovery_backend != DISCOVERY_ETCD:
        env.append({"name": "DYN_DISCOVERY_BACKEND", "value": DISCOVERY_KUBERNETES})
    if ctx.discovery_mode == DISCOVERY_MODE_CONTAINER:
        env.append({"name": "CONTAINER_NAME", "value": ctx.runtime_container})
        env.append({"name": "DYN_KUBE_DISCOVERY_MODE", "value": DISCOVERY_MODE_CONTAINER})
    return env


def common_container(ctx: ComponentContext) -> Manifest:
    return {"name": MAIN_CONTAINER, "command": list(DEFAULT_COMMAND), "env": common_env(ctx)}


def runtime_sidecar_container(ctx: ComponentContext) -> Manifest:
    """dynamoSidecarBaseContainer: the defaults of sidecar mode's `runtime` init container (no command:
    the image's entrypoint runs); engine health, canaries and NIXL telemetry stay with the engine."""
    env = [
        *common_env(ctx),
        {"name": "DYN_SYSTEM_ENABLED", "value": "true"},
        {"name": "DYN_SYSTEM_PORT", "value": str(SYSTEM_PORT)},
    ]
    if ctx.worker_hash:
        env.append({"name": "DYN_NAMESPACE_WORKER_SUFFIX", "value": ctx.worker_hash})
    return {
        "name": ctx.runtime_container,
        "env": env,
        "ports": [{"name": SYSTEM_PORT_NAME, "containerPort": SYSTEM_PORT, "protocol": "TCP"}],
        "restartPolicy": SIDECAR_RESTART_POLICY,
        "livenessProbe": http_probe("/live", SYSTEM_PORT_NAME, **SIDECAR_LIVENESS),
        "readinessProbe": http_probe("/health", SYSTEM_PORT_NAME, **SIDECAR_READINESS),
        "startupProbe": http_probe("/live", SYSTEM_PORT_NAME, **SIDECAR_STARTUP),
    }


def base_pod_spec() -> Manifest:
    return {
        "terminationGracePeriodSeconds": DEFAULT_TERMINATION_GRACE_PERIOD_S,
        "restartPolicy": DEFAULT_RESTART_POLICY,
    }


def http_probe(path: str, port: str, **timing: int) -> Manifest:
    return {"httpGet": {"path": path, "port": port}, **timing}


def system_service_port() -> Manifest:
    return {"name": SYSTEM_PORT_NAME, "port": SYSTEM_PORT, "targetPort": SYSTEM_PORT_NAME, "protocol": "TCP"}


class BaseComponentDefaults:
    """Components without a known type: common env only; the choices every type starts from."""

    # A Service even when discovery is not Kubernetes (the frontend is the graph's HTTP entry point).
    service_without_discovery = False
    # The cluster's default Ingress / VirtualService when the component preserves none.
    cluster_ingress = False
    # v1alpha1 subComponentType the hub type converts back to.
    sub_component_type: str | None = None
    # Service account the DGD controller sets on the generated DCD's pod template.
    dcd_service_account: str | None = None
    # Whether the graph's Dynamo Planner scales components of this type (its worker types).
    planner_scaled = False

    def container(self, ctx: ComponentContext) -> Manifest:
        return common_container(ctx)

    def pod_spec(self, ctx: ComponentContext) -> Manifest:
        return base_pod_spec()

    def service_port(self, ctx: ComponentContext) -> Manifest:
        return system_service_port()

    def dcd_annotations(self) -> Mapping[str, str]:
        """Pod-template annotations the DGD controller adds to the generated DCD (not on Grove)."""
        return {}

    def operator_needs(self, component: v1beta1.Component, graph: str, at: str) -> list[Problem]:
        """What the component needs at run time that only the Dynamo operator serves (see preflight)."""
        return []
