"""The operator's validating webhook on a graph, with the stack's cluster options: every rule of
`api.admission` (those that depend on Grove, checkpointing or the InferencePool API included), plus
the Grove pod-name budget, which needs Grove's clique names. Pure; `plan_graph` runs it before
anything is written. Rendering itself never does: it renders what the operator's controllers would
for any graph, admitted or not."""

from __future__ import annotations

from dynamo_infra.api import AnyDGD, DynamoValidationError, Problem, admission, to_hub, v1alpha1
from dynamo_infra.api.admission import Review
from dynamo_infra.api.admission.paths import Paths
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render.context import component_context
from dynamo_infra.render.workloads import grove


def review_graph(dgd: AnyDGD, options: ClusterOptions, namespace: str | None = None) -> Review:
    """The webhook's answer to creating `dgd` in `namespace` (default: its own, else the options')."""
    ns = namespace or dgd.metadata.namespace or options.namespace
    features = options.operator_features
    out = admission.review(dgd, features, namespace=ns)
    on_grove, _ = admission.grove_pathway(features, dgd.metadata.annotations)
    if on_grove:
        out += Review(tuple(grove_name_problems(dgd, options)))
    return out


def grove_name_problems(dgd: AnyDGD, options: ClusterOptions) -> list[Problem]:
    """PCS + PCSG + clique names over Grove's limit (none for a graph v1beta1 cannot hold: the
    v1alpha1 rules deny it)."""
    try:
        hub = to_hub(dgd)
    except DynamoValidationError:
        return []
    members = [
        grove.Member(c, component_context({"metadata": {"name": c.name}, "spec": c.to_wire()}, options))
        for c in hub.spec.components or []
    ]
    paths = Paths(isinstance(dgd, v1alpha1.DynamoGraphDeployment))
    return grove.pod_name_problems(hub.name, members, lambda name: paths.component(name)("name"))
