"""Who owns each component's replicas at run time (pure): the graph (Pulumi writes them on every `up`),
the dynamo-infra agent (the planner or a scaling adapter changes them; Pulumi writes them at creation
only) or an autoscaler (an HPA or KEDA ScaledObject; ditto, and the agent leaves them alone)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

from dynamo_infra.api import AnyDGD
from dynamo_infra.render.checks.preflight import unmet_needs
from dynamo_infra.render.components.table import defaults_for
from dynamo_infra.render.rendered import RenderedComponent, RenderedGraph

ReplicaOwner = Literal["graph", "agent", "autoscaler"]
REPLICAS_GRAPH: ReplicaOwner = "graph"
REPLICAS_AGENT: ReplicaOwner = "agent"
REPLICAS_AUTOSCALER: ReplicaOwner = "autoscaler"


def replica_owner(
    component: RenderedComponent, *, autoscaled: bool, planner_scales: bool, agent: bool
) -> ReplicaOwner:
    """One component's: an autoscaler's when one is configured for it (or a legacy HPA rendered); with
    the agent, the agent's when the graph's planner scales its type or it has a scaling adapter;
    else the graph's."""
    if autoscaled or component.autoscaled:
        return REPLICAS_AUTOSCALER
    scaled_by_planner = planner_scales and defaults_for(component.type).planner_scaled
    if agent and (component.scaling_adapter or scaled_by_planner):
        return REPLICAS_AGENT
    return REPLICAS_GRAPH


def replica_owners(
    dgd: AnyDGD, rendered: RenderedGraph, autoscaled: Collection[str], *, agent: bool
) -> dict[str, ReplicaOwner]:
    """Every component's replica owner. The graph's planner scales only where it needs what the
    operator served (its kubernetes or global-planner environment: `preflight.unmet_needs`)."""
    planner_scales = bool(unmet_needs(dgd))
    return {
        name: replica_owner(c, autoscaled=name in autoscaled, planner_scales=planner_scales, agent=agent)
        for name, c in rendered.components.items()
    }
