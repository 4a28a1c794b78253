"""What a graph's components need at run time that a stack without the Dynamo operator cannot give
them, as problems at the component the user wrote. Pure and separate from rendering: such graphs
still render as the operator would; `components.DynamoGraphDeployment` refuses to deploy them."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from dynamo_infra.api import AnyDGD, Problem, to_hub, v1alpha1, v1beta1
from dynamo_infra.render import planner

# One component's unmet needs: (component, graph name, path of the component) -> problems.
Check = Callable[[v1beta1.Component, str, str], list[Problem]]
# Per component type; types absent here need nothing the stack lacks.
CHECKS: Mapping[str, Check] = {"planner": planner.operator_needs}


def component_path(dgd: AnyDGD, name: str) -> str:
    """Where the user wrote the component: `spec.services.<name>` (v1alpha1) or `spec.components[<name>]`."""
    if isinstance(dgd, v1alpha1.DynamoGraphDeployment):
        return f"spec.services.{name}"
    return f"spec.components[{name}]"


def unmet_needs(dgd: AnyDGD) -> list[Problem]:
    """Every component's needs this stack cannot serve."""
    hub = to_hub(dgd)
    return [
        problem
        for c in hub.spec.components or []
        if (check := CHECKS.get(c.type or "")) is not None
        for problem in check(c, hub.name, component_path(dgd, c.name))
    ]
