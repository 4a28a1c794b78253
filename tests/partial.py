"""What the operator leaves behind for a graph it fails on: `render_graph` refuses such a graph before
any write, this says which of its objects the operator creates before (or besides) the failure.

The operator reconciles a graph in steps: the graph-level objects come first (discovery RBAC and GPU
memory service claim templates; a component with checkpointing while the cluster has it off stops
the graph there; then EPP objects and the wait-for-leader ConfigMap); a multinode graph with neither
Grove nor LWS stops there. On Grove the PodCliqueSet is all or nothing. On the component path
the graph controller creates one DCD per component (the API server refuses a DCD whose type is not
v1beta1's, which stops the loop) and each DCD's controller then renders its workload on its own, so
one component failing leaves the others' objects. The webhook's rules are not applied here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dynamo_infra.api import AnyDGD, DynamoValidationError
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render.components.table import dcd_type_problem
from dynamo_infra.render.context import component_context
from dynamo_infra.render.features import checkpoint
from dynamo_infra.render.graph import (
    component_contexts,
    graph_context,
    graph_worker_hash,
    grove_pathway,
    is_grove_pathway,
    objects_after_checkpoints,
    objects_before_checkpoints,
)
from dynamo_infra.render.workloads.dcd import as_stored, generate_dcd
from dynamo_infra.render.workloads.deployment import model_service
from dynamo_infra.render.workloads.table import component_objects, workload_kind


@dataclass(frozen=True)
class PartialGraph:
    """The objects the operator creates for a graph, in its order, and why components have none."""

    objects: tuple[Manifest, ...]
    # Component name -> the problems its DCD or workload stopped at.
    failures: Mapping[str, DynamoValidationError] = field(default_factory=dict)


def operator_partial(dgd: AnyDGD, options: ClusterOptions, namespace: str | None = None) -> PartialGraph:
    """Everything the operator creates for `dgd` up to and around the steps that fail."""
    g = graph_context(dgd, options, namespace)
    whash = graph_worker_hash(g)
    contexts = component_contexts(g, whash)
    out = objects_before_checkpoints(g, contexts)
    if checkpoint.gate_problems(g):
        return PartialGraph(tuple(out))
    out.extend(objects_after_checkpoints(g, contexts))
    if is_grove_pathway(g):
        try:
            grove = grove_pathway(g, whash, None, {})
        except DynamoValidationError as e:
            return PartialGraph(tuple(out), {g.name: e})
        out.extend(grove.workloads)
        out.extend(o for c in grove.components.values() for o in c.objects)
        return PartialGraph(tuple(out))
    if any(ctx.node_count > 1 for ctx in contexts) and not options.lws_enabled:
        return PartialGraph(tuple(out))
    failures: dict[str, DynamoValidationError] = {}
    models: set[str] = set()
    for c in sorted(g.dgd.spec.components or [], key=lambda c: c.name):
        dcd = generate_dcd(g, c, whash)
        ctx = component_context(dcd, options, g.legacy.component(c.name), g.dgd.spec.annotations)
        problem = dcd_type_problem(ctx)
        if problem is not None:
            failures[c.name] = DynamoValidationError([problem])
            continue
        out.append(as_stored(dcd))
        try:
            objects = component_objects(ctx, workload_kind(ctx))
        except DynamoValidationError as e:
            failures[c.name] = e
            continue
        out.extend(objects)
        model = model_service(ctx)
        if model is not None and ctx.model_ref not in models:
            models.add(str(ctx.model_ref))
            out.append(model)
    return PartialGraph(tuple(out), failures)
