"""What a graph's components need at run time that the Dynamo operator served (a stack serves it only
with the dynamo-infra agent), as problems at the component the user wrote. Pure and separate from
rendering: such graphs render as the operator would; `dynamo_infra.components.DynamoGraphDeployment` warns
about them when the stack runs no agent."""

from __future__ import annotations

from dynamo_infra.api import AnyDGD, Problem, to_hub, v1alpha1
from dynamo_infra.render.components.table import defaults_for


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
        for problem in defaults_for(c.type).operator_needs(c, hub.name, component_path(dgd, c.name))
    ]
