"""plan_graph: the child resources a DynamoGraphDeployment declares, with their inputs.

Pure (no Pulumi): the graph loaded, checked and rendered once (through `render.cache`, which the
stack's reading of its graphs filled); `DynamoGraphDeployment` creates what the plan lists, in its
order (claims, shared objects, checkpoints, the Grove PodCliqueSet, components, autoscalers), and
wires the outputs that depend on a checkpoint's readiness.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynamo_infra.api import AnyDGD, DynamoValidationError, Problem
from dynamo_infra.api.admission import Review
from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.config import ClusterOptions
from dynamo_infra.graph_source import GraphSource, load_graph
from dynamo_infra.render import RenderedComponent, RenderedGraph, cache
from dynamo_infra.render.checks.preflight import unmet_needs
from dynamo_infra.render.names import LABEL_COMPONENT
from dynamo_infra.render.runtime.replicas import REPLICAS_GRAPH, ReplicaOwner, replica_owners

# A ComponentWorkload's `await` input: {"mode": "wait"|"skip", "timeoutSeconds": int}.
AwaitPolicy = dict[str, Any]


@dataclass(frozen=True)
class ClaimPlan:
    """A PersistentVolumeClaim: `manifest` to create when missing, None for a claim that must exist."""

    name: str
    claim_name: str
    manifest: Manifest | None
    delete_on_destroy: bool
    await_policy: AwaitPolicy


@dataclass(frozen=True)
class WorkloadPlan:
    """Objects of the graph as a whole (shared objects, the Grove PodCliqueSet): one ComponentWorkload."""

    name: str
    objects: tuple[Manifest, ...]
    await_policy: AwaitPolicy
    pull_secret_discovery: bool = False
    # Checkpoints whose readiness the objects are rendered again with (empty: as planned).
    checkpoints: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckpointPlan:
    """The DGD-managed DynamoCheckpoint of one component; `wait` blocks the `up` until it is Ready."""

    name: str
    component: str
    checkpoint: Manifest
    wait: bool
    timeout_seconds: int


@dataclass(frozen=True)
class ComponentPlan:
    """A DynamoComponentDeployment. With `checkpoints`, its status (and, unless the PodCliqueSet holds its
    pods, its objects: `rerender_objects`) come from the graph rendered again with their readiness.
    `replicas`: who owns its replicas at run time (`render.runtime.replicas`)."""

    name: str
    rendered: RenderedComponent
    checkpoints: tuple[str, ...] = ()
    rerender_objects: bool = False
    replicas: ReplicaOwner = REPLICAS_GRAPH


@dataclass(frozen=True)
class ScalingPlan:
    """The autoscaler (ScalingAdapter) that owns one component's replicas."""

    name: str
    component: str
    autoscaler: Autoscaler


@dataclass(frozen=True)
class GraphPlan:
    dgd: AnyDGD
    options: ClusterOptions
    # The namespace asked for (None: the options' namespace), as render_graph takes it.
    namespace: str | None
    rendered: RenderedGraph
    claims: tuple[ClaimPlan, ...]
    shared: WorkloadPlan | None
    checkpoints: tuple[CheckpointPlan, ...]
    podcliqueset: WorkloadPlan | None
    components: tuple[ComponentPlan, ...]
    scaling: tuple[ScalingPlan, ...]
    # Whether the graph went through the operator's validating webhook (its updates do too).
    admitted: bool = False
    # What the operator's validating webhook would warn about the graph (logged, never fatal).
    warnings: tuple[str, ...] = ()
    # What of the graph will not work without the dynamo-infra agent (logged as warnings).
    unserved: tuple[str, ...] = ()

    def rendered_with(self, ready: Mapping[str, bool]) -> RenderedGraph:
        """The graph rendered again with the observed readiness of some components' checkpoints."""
        return cache.rendered(self.dgd, self.options, self.namespace, checkpoint_ready=ready)


def checkpoint_owners(rendered: RenderedGraph) -> dict[str, Manifest]:
    """The graph's DGD-managed DynamoCheckpoints by the component they capture."""
    return {str(o["metadata"]["labels"][LABEL_COMPONENT]): o for o in rendered.checkpoints}


def checked_autoscalers(
    rendered: RenderedGraph, autoscalers: Mapping[str, Autoscaler]
) -> dict[str, Autoscaler]:
    """Autoscalers only for components that exist and hand their replicas over (`scalingAdapter`)."""
    problems = []
    for component in autoscalers:
        c = rendered.components.get(component)
        if c is None:
            problems.append(
                Problem(f"autoscalers.{component}", f"graph {rendered.name} has no component {component!r}")
            )
        elif not c.scaling_adapter:
            problems.append(
                Problem(
                    f"autoscalers.{component}",
                    "the component must set scalingAdapter so the autoscaler owns its replicas",
                )
            )
    if problems:
        raise DynamoValidationError(problems)
    return dict(autoscalers)


def plan_graph(
    name: str,
    graph: GraphSource,
    options: ClusterOptions | None = None,
    namespace: str | None = None,
    *,
    delete_pvcs_on_destroy: bool = False,
    autoscalers: Mapping[str, Autoscaler] | None = None,
    admission: bool | None = None,
    agent: bool = False,
    running_worker_hash: str | None = None,
) -> GraphPlan:
    """The plan of graph `name`. AdmissionDenied for a graph the operator's validating webhook would
    deny with these cluster options (`render.checks.admission`; unless `admission` is False, by default
    `options.admission.enabled`); DynamoValidationError for autoscalers of components that do not
    hand their replicas over. Components that need what only the operator served at run time
    (`render.checks.preflight`: a planner) need the dynamo-infra `agent`: without it, `unserved` says what
    will not work. `running_worker_hash`: the current worker hash of the graph's DGD record when it is
    deployed, so a generation an earlier dynamo-infra rendered keeps running (`keep_running_generation`)."""
    options = options or ClusterOptions()
    admitting = options.admission.enabled if admission is None else admission
    dgd = load_graph(graph, admission=admitting)
    review = cache.reviewed(dgd, options, namespace) if admitting else Review()
    review.raise_denied()
    unserved = () if agent else tuple(str(p) for p in unmet_needs(dgd))
    options = cache.effective_options(dgd, options, namespace, running_worker_hash)
    rendered = cache.rendered(dgd, options, namespace)
    awaited = {"mode": options.await_policy.mode, "timeoutSeconds": options.await_policy.timeout_seconds}
    # Objects of the graph as a whole are applied, never awaited.
    not_awaited = {"mode": "skip", "timeoutSeconds": options.await_policy.timeout_seconds}
    claims = [
        ClaimPlan(f"{name}-pvc-{claim}", claim, manifest, delete_pvcs_on_destroy, awaited)
        for claim, manifest in [
            *((str(m["metadata"]["name"]), m) for m in rendered.pvcs),
            *((n, None) for n in rendered.required_pvcs),
        ]
    ]
    shared = WorkloadPlan(f"{name}-shared", rendered.shared, not_awaited) if rendered.shared else None
    checkpoints = tuple(
        CheckpointPlan(
            f"{name}-checkpoint-{component.lower()}",
            component,
            obj,
            # Only WaitForCheckpoint components wait for the capture (and not where nothing runs pods).
            wait=rendered.components[component].waiting_for_checkpoint
            and options.await_policy.mode != "skip",
            timeout_seconds=options.checkpoint.timeout_seconds,
        )
        for component, obj in checkpoint_owners(rendered).items()
    )
    every_checkpoint = tuple(c.component for c in checkpoints)
    # Grove: one PodCliqueSet runs every component, rendered once every checkpoint's readiness is known;
    # the components hold their Services.
    podcliqueset = (
        WorkloadPlan(
            f"{name}-podcliqueset",
            rendered.workloads,
            not_awaited,
            # Its cliques' pods get discovered secrets when the cluster option is on, but for those of
            # components that opt out (their clique's annotation, `render.features.pullsecrets`).
            pull_secret_discovery=any(c.pull_secret_discovery for c in rendered.components.values()),
            checkpoints=every_checkpoint,
        )
        if rendered.workloads
        else None
    )
    scaling = tuple(
        ScalingPlan(f"{name}-{component.lower()}-scaling", component, spec)
        for component, spec in checked_autoscalers(rendered, autoscalers or {}).items()
    )
    owners = replica_owners(dgd, rendered, {s.component for s in scaling}, agent=agent)
    components = tuple(
        ComponentPlan(f"{name}-{c.name.lower()}", c, replicas=owners[c.name])
        if c.name not in every_checkpoint
        else ComponentPlan(
            f"{name}-{c.name.lower()}",
            c,
            checkpoints=every_checkpoint if podcliqueset else (c.name,),
            rerender_objects=podcliqueset is None,
            replicas=owners[c.name],
        )
        for c in rendered.components.values()
    )
    return GraphPlan(
        dgd,
        options,
        namespace,
        rendered,
        tuple(claims),
        shared,
        checkpoints,
        podcliqueset,
        components,
        scaling,
        admitting,
        review.warnings,
        unserved,
    )
