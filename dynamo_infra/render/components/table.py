"""The component-type axis: per `type`, the defaults the operator starts a component from and the
choices it makes for that type (ComponentDefaultsFactory)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from dynamo_infra.api import Problem, v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.components.common import BaseComponentDefaults
from dynamo_infra.render.components.epp import EPP
from dynamo_infra.render.components.frontend import Frontend
from dynamo_infra.render.components.planner import Planner
from dynamo_infra.render.components.worker import Worker
from dynamo_infra.render.context import ComponentContext


class ComponentDefaults(Protocol):
    """What a component type contributes before user settings are merged in, and its choices."""

    service_without_discovery: bool
    cluster_ingress: bool
    sub_component_type: str | None
    dcd_service_account: str | None
    planner_scaled: bool

    def container(self, ctx: ComponentContext) -> Manifest: ...

    def pod_spec(self, ctx: ComponentContext) -> Manifest: ...

    def service_port(self, ctx: ComponentContext) -> Manifest:
        """The single port of the component's ClusterIP Service."""
        ...

    def dcd_annotations(self) -> Mapping[str, str]: ...

    def operator_needs(self, component: v1beta1.Component, graph: str, at: str) -> list[Problem]: ...


# One entry per `type` of the v1beta1 API; prefill and decode workers convert back to v1alpha1
# `componentType: worker` with that subComponentType.
COMPONENT_DEFAULTS: Mapping[str, ComponentDefaults] = {
    "frontend": Frontend(),
    "worker": Worker(),
    "prefill": Worker(sub_component_type="prefill"),
    "decode": Worker(sub_component_type="decode"),
    "planner": Planner(),
    "epp": EPP(),
}
# Components without a type (or of a type the pin does not know).
OTHER: ComponentDefaults = BaseComponentDefaults()


def defaults_for(component_type: str | None) -> ComponentDefaults:
    return COMPONENT_DEFAULTS.get(component_type or "", OTHER)


def sub_component_type(ctx: ComponentContext) -> str | None:
    """The preserved v1alpha1 subComponentType, else the one the component's type converts back to."""
    return ctx.legacy.sub_component_type or defaults_for(ctx.type).sub_component_type


# What the API server answers when a DynamoComponentDeployment's `type` is outside the CRD's enum.
DCD_TYPE_UNSUPPORTED = (
    'DynamoComponentDeployment.nvidia.com "{dcd}" is invalid: spec.type: Unsupported value: "{type}": '
    "supported values: {supported}"
)


def dcd_type_problem(ctx: ComponentContext) -> Problem | None:
    """A DCD's `type` must be one of v1beta1's: the operator's DCD for a v1alpha1 `componentType` outside
    them (`default`) is refused by the API server, and the graph stops there."""
    if not ctx.type or ctx.type in COMPONENT_DEFAULTS:
        return None
    supported = ", ".join(f'"{t}"' for t in COMPONENT_DEFAULTS)
    message = DCD_TYPE_UNSUPPORTED.format(dcd=ctx.dcd_name, type=ctx.type, supported=supported)
    return Problem(f"spec.components[{ctx.name}].type", message)
