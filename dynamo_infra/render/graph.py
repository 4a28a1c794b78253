"""render_graph: a DynamoGraphDeployment -> every Kubernetes object the operator would create."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from dynamo_infra.api import AnyDGD, DynamoValidationError, Problem, v1beta1
from dynamo_infra.api.loader import served_hub
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import names, worker_hash
from dynamo_infra.render.backends import table as backends
from dynamo_infra.render.backends.vllm import wait_leader_config_map
from dynamo_infra.render.checks.name_check import DerivedNameError, rendered_name_problems
from dynamo_infra.render.collector import without_cycle_collection
from dynamo_infra.render.components.epp import epp_objects
from dynamo_infra.render.components.table import dcd_type_problem
from dynamo_infra.render.context import ComponentContext, GraphContext, component_context
from dynamo_infra.render.features import checkpoint, dra, snapshot
from dynamo_infra.render.features.autoscaling import scaling_adapter
from dynamo_infra.render.features.discovery import discovery_rbac
from dynamo_infra.render.features.ingress import ingress, virtual_service
from dynamo_infra.render.features.pullsecrets import PullSecret, with_workload_pull_secrets
from dynamo_infra.render.features.restart import restart_annotations
from dynamo_infra.render.features.volumes import pvcs, required_pvcs
from dynamo_infra.render.legacy import legacy_of
from dynamo_infra.render.podspec import placement, pod_spec, with_default_service_account
from dynamo_infra.render.rendered import PATHWAY_COMPONENTS, PATHWAY_GROVE, RenderedComponent, RenderedGraph
from dynamo_infra.render.workloads import capture, grove, lws
from dynamo_infra.render.workloads.dcd import as_stored, generate_dcd
from dynamo_infra.render.workloads.deployment import model_service, replicas
from dynamo_infra.render.workloads.table import component_objects, workload_kind

# Operator error when a multinode graph has neither Grove nor LWS.
NO_MULTINODE_ORCHESTRATOR = "no multinode orchestrator available"


def graph_annotations(dgd: v1beta1.DynamoGraphDeployment, options: ClusterOptions) -> dict[str, str]:
    """DGD annotations after the operator's webhook (origin version stamped when absent)."""
    annotations = dict(dgd.metadata.annotations or {})
    if options.operator_origin_version and names.ANNOTATION_ORIGIN_VERSION not in annotations:
        annotations[names.ANNOTATION_ORIGIN_VERSION] = options.operator_origin_version
    return annotations


def graph_worker_hash(g: GraphContext) -> str:
    """ComputeDGDWorkersSpecHash over the graph's worker DCDs, generated with the placeholder hash."""
    return worker_hash.worker_hash(
        {
            c.name: (generate_dcd(g, c, worker_hash.PLACEHOLDER), g.legacy.component(c.name))
            for c in g.dgd.spec.components or []
            if c.is_worker
        },
        runtime_version_gates=g.options.runtime_version_gates,
    )


def is_grove_pathway(g: GraphContext) -> bool:
    """Grove when available, unless the DGD annotation `nvidia.com/enable-grove` says "false"."""
    opted_out = (g.annotations.get(names.ANNOTATION_ENABLE_GROVE) or "").lower() == "false"
    return g.options.grove_enabled and not opted_out


def validate(g: GraphContext, contexts: Sequence[ComponentContext], grove_path: bool) -> None:
    """Reconcile errors of the operator's controllers that depend on the cluster or the pathway, all
    of them at once (its admission webhook's rules are `render.checks.admission`'s)."""
    problems: list[Problem] = []
    multinode = [ctx for ctx in contexts if ctx.node_count > 1]
    if multinode and not grove_path and not g.options.lws_enabled:
        problems.append(Problem(f"spec.components[{multinode[0].name}].multinode", NO_MULTINODE_ORCHESTRATOR))
    problems.extend(p for ctx in contexts if (p := ctx.runtime_version_problem) is not None)
    problems.extend(checkpoint.gate_problems(g))
    if not grove_path:
        problems.extend(p for ctx in contexts if (p := dcd_type_problem(ctx)) is not None)
    if problems:
        raise DynamoValidationError(problems)


def objects_before_checkpoints(g: GraphContext, contexts: Sequence[ComponentContext]) -> list[Manifest]:
    """The graph-owned objects the operator makes before its checkpoint step: discovery RBAC, GMS
    claim templates."""
    shared: list[Manifest] = discovery_rbac(g) if g.k8s_discovery else []
    shared.extend(dra.graph_claim_templates(g, list(contexts)))
    return shared


def objects_after_checkpoints(g: GraphContext, contexts: Sequence[ComponentContext]) -> list[Manifest]:
    """The graph-owned objects the operator makes after its checkpoint step: EPP objects, the
    wait-leader script."""
    shared = epp_objects(g)
    if any(ctx.node_count > 1 for ctx in contexts):
        shared.append(wait_leader_config_map(g.name, g.namespace))
    return shared


def shared_objects(g: GraphContext, contexts: Sequence[ComponentContext]) -> list[Manifest]:
    """Graph-owned objects, in the operator's order."""
    return [*objects_before_checkpoints(g, contexts), *objects_after_checkpoints(g, contexts)]


def has_multinode_component(dgd: AnyDGD) -> bool:
    """HasAnyMultinodeComponent: some component runs on more than one node."""
    return any(
        c.multinode is not None and c.multinode.node_count > 1 for c in served_hub(dgd).spec.components or []
    )


def required_secrets(contexts: Sequence[ComponentContext]) -> tuple[str, ...]:
    """Secrets multinode components mount but never create (the TRT-LLM MPI SSH key pair)."""
    multinode = (ctx for ctx in contexts if ctx.node_count > 1)
    out = {backends.component_backend(ctx).multinode_secret(ctx) for ctx in multinode}
    return tuple(sorted(s for s in out if s))


def _pull_secret_discovery(options: ClusterOptions, ctx: ComponentContext) -> bool:
    return (
        options.image_pull_secret_discovery
        and ctx.template_annotations.get(names.ANNOTATION_DISABLE_PULL_SECRET_DISCOVERY) != "true"
    )


@dataclass(frozen=True)
class _Pathway:
    components: dict[str, RenderedComponent]
    workloads: tuple[Manifest, ...] = ()
    checkpoints: tuple[Manifest, ...] = ()
    checkpoint_status: Mapping[str, Manifest] = field(default_factory=dict)


def _checkpoint_for(
    g: GraphContext, c: v1beta1.Component, ctx: ComponentContext, whash: str | None
) -> tuple[Manifest | None, Manifest | None]:
    """The component's DynamoCheckpoint (snapshot API: SnapshotJob, or the PodSnapshot it references)
    and its status entry (checkpoint gate on)."""
    if not g.options.checkpoint.enabled or checkpoint.config_of(c) is None:
        return None, None
    if snapshot.applies(ctx):
        own = (c.pod_template.to_wire().get("metadata") if c.pod_template else None) or {}
        return capture.checkpoint_object(ctx, own), capture.status_entry(ctx)
    name = checkpoint.managed_name(g, c, whash)
    pod = with_default_service_account(
        pod_spec(replace(ctx, checkpoint_ready=None), placement(ctx, lws.DEPLOYER))
    )
    obj = checkpoint.checkpoint_object(g, c, whash, pod)
    ckpt_id = obj["metadata"]["labels"][checkpoint.LABEL_CHECKPOINT_ID] if obj else ""
    identity = checkpoint.identity_hash(obj["spec"]["identity"]) if obj else ""
    return obj, checkpoint.status_entry(name, ckpt_id, ctx.checkpoint_ready, identity)


def components_pathway(
    g: GraphContext,
    whash: str | None,
    pull_secrets: Sequence[PullSecret] | None,
    ready: Mapping[str, bool],
    dcds: Mapping[str, Manifest] | None = None,
) -> _Pathway:
    """One DCD per component; Deployment or LeaderWorkerSet, Service, Ingress, VirtualService.
    `dcds`: the components' DCDs already generated with `whash` (`generated_dcds`), if any."""
    components: dict[str, RenderedComponent] = {}
    checkpoints: list[Manifest] = []
    status: dict[str, Manifest] = {}
    models: set[str] = set()
    for c in sorted(g.dgd.spec.components or [], key=lambda c: c.name):
        dcd = dcds[c.name] if dcds is not None else generate_dcd(g, c, whash)
        ctx = component_context(
            dcd, g.options, g.legacy.component(c.name), g.dgd.spec.annotations, ready.get(c.name)
        )
        gated = checkpoint.gates_replicas(ctx, ctx.checkpoint_ready)
        if gated:
            dcd = {**dcd, "spec": {**dcd["spec"], "replicas": 0}}
            ctx = replace(ctx, spec=dcd["spec"])
        ckpt, entry = _checkpoint_for(g, c, ctx, whash if c.is_worker else None)
        if ckpt is not None:
            checkpoints.append(ckpt)
        if entry is not None:
            status[c.name] = entry
        kind = workload_kind(ctx)
        objects = component_objects(ctx, kind, pull_secrets)
        model = model_service(ctx)
        if model is not None and ctx.model_ref not in models:
            models.add(str(ctx.model_ref))
            objects.append(model)
        adapter = scaling_adapter(g, c)
        components[c.name] = RenderedComponent(
            name=c.name,
            type=ctx.type,
            dcd_name=ctx.dcd_name,
            replicas=replicas(ctx),
            dcd=as_stored(dcd),
            objects=tuple(objects),
            scaling_adapter=adapter is not None,
            adapter=adapter,
            autoscaled=any(o["kind"] == "HorizontalPodAutoscaler" for o in objects),
            pull_secret_discovery=_pull_secret_discovery(g.options, ctx),
            workload_kind=kind,
            waiting_for_checkpoint=gated,
        )
    return _Pathway(components, (), tuple(checkpoints), status)


def grove_pathway(
    g: GraphContext,
    whash: str | None,
    pull_secrets: Sequence[PullSecret] | None,
    ready: Mapping[str, bool],
    dcds: Mapping[str, Manifest] | None = None,
) -> _Pathway:
    """One PodCliqueSet for the graph; per component only its Service, Ingress and VirtualService."""
    members = []
    suffix = grove.worker_hash_suffix(g, whash)
    for c in g.dgd.spec.components or []:
        if suffix and c.is_worker:
            c = grove.with_worker_hash_label(c, suffix)
        spec = generate_dcd(g, c, None, grove=True)
        ctx = component_context(
            spec, g.options, g.legacy.component(c.name), g.dgd.spec.annotations, ready.get(c.name)
        )
        members.append(grove.Member(c, replace(ctx, dcd_name=names.component_base_name(g.name, c.name))))
    pcs = grove.pod_clique_set(g, members, ready)
    if pull_secrets and g.options.image_pull_secret_discovery:
        pcs = with_workload_pull_secrets(pcs, pull_secrets)
    name = pcs["metadata"]["name"]
    components: dict[str, RenderedComponent] = {}
    checkpoints: list[Manifest] = []
    status: dict[str, Manifest] = {}
    models: set[str] = set()
    for m in sorted(members, key=lambda m: m.component.name):
        c, ctx = m.component, m.ctx
        objects = [o for o in (grove.component_service(g, m), ingress(ctx), virtual_service(ctx)) if o]
        model = model_service(ctx)
        if model is not None and ctx.model_ref not in models:
            models.add(str(ctx.model_ref))
            objects.append(model)
        ckpt, entry = _checkpoint_for(g, c, ctx, None)
        if ckpt is not None:
            checkpoints.append(ckpt)
        if entry is not None:
            status[c.name] = entry
        adapter = scaling_adapter(g, c)
        target = grove.scale_target(name, m, ready.get(c.name))
        components[c.name] = RenderedComponent(
            name=c.name,
            type=ctx.type,
            dcd_name=ctx.dcd_name,
            replicas=replicas(ctx),
            dcd=None,
            objects=tuple(objects),
            scaling_adapter=adapter is not None,
            adapter=adapter,
            pull_secret_discovery=_pull_secret_discovery(g.options, ctx),
            workload_kind=str(target["kind"]),
            scale_target=target,
            waiting_for_checkpoint=checkpoint.gates_replicas(ctx, ctx.checkpoint_ready),
        )
    return _Pathway(components, (pcs,), tuple(checkpoints), status)


def generated_dcds(g: GraphContext, whash: str | None) -> dict[str, Manifest]:
    """Each component's generated DCD, as the component path renders it."""
    return {c.name: generate_dcd(g, c, whash) for c in g.dgd.spec.components or []}


def component_contexts(
    g: GraphContext, whash: str | None, dcds: Mapping[str, Manifest] | None = None
) -> list[ComponentContext]:
    """Each component's context from its generated DCD (`dcds`, else generated here)."""
    dcds = dcds if dcds is not None else generated_dcds(g, whash)
    return [
        component_context(dcds[c.name], g.options, g.legacy.component(c.name), g.dgd.spec.annotations)
        for c in g.dgd.spec.components or []
    ]


class Pathway(Protocol):
    def __call__(
        self,
        g: GraphContext,
        whash: str | None,
        pull_secrets: Sequence[PullSecret] | None,
        ready: Mapping[str, bool],
        dcds: Mapping[str, Manifest] | None = None,
    ) -> _Pathway: ...


PATHWAYS: Mapping[str, Pathway] = {PATHWAY_COMPONENTS: components_pathway, PATHWAY_GROVE: grove_pathway}


def graph_context(
    dgd: AnyDGD,
    options: ClusterOptions,
    namespace: str | None = None,
    restart_status: Mapping[str, Any] | None = None,
) -> GraphContext:
    """The graph as the operator reads it (API server defaults, hub version) with what it derives."""
    hub = served_hub(dgd)
    return GraphContext(
        dgd=hub,
        namespace=namespace or hub.metadata.namespace or options.namespace,
        options=options,
        annotations=graph_annotations(hub, options),
        legacy=legacy_of(hub),
        backend=backends.graph_backend_framework(hub),
        restart_at=restart_annotations(hub, restart_status),
    )


def keep_running_generation(
    dgd: AnyDGD,
    options: ClusterOptions,
    namespace: str | None,
    running_worker_hash: str | None,
    *,
    worker_hash_of: Callable[[ClusterOptions], str] | None = None,
) -> ClusterOptions:
    """The options to render a deployed graph with, so that upgrading this package restarts nothing.

    A graph whose running worker generation (`running_worker_hash`: its DGD record's current worker
    hash) is what the operator at our pin gives its spec, and not what the runtime-version gates
    give, was deployed by a dynamo-infra without them: it keeps rendering so until its workers change
    (a new generation then follows its runtime's release). Otherwise `options` as they are.
    `worker_hash_of(options)`: the graph's worker hash with those options (default: computed here).
    """
    if not running_worker_hash or not options.runtime_version_gates:
        return options
    hash_of = worker_hash_of or (lambda o: graph_worker_hash(graph_context(dgd, o, namespace)))
    if hash_of(options) == running_worker_hash:
        return options
    held = options.model_copy(update={"runtime_version_gates": False})
    return held if hash_of(held) == running_worker_hash else options


@without_cycle_collection
def render_graph(
    dgd: AnyDGD,
    options: ClusterOptions | None = None,
    namespace: str | None = None,
    *,
    restart_status: Mapping[str, Any] | None = None,
    pull_secrets: Sequence[PullSecret] | None = None,
    checkpoint_ready: Mapping[str, bool] | None = None,
) -> RenderedGraph:
    """Every object the operator would create for `dgd` (either API version), grouped by component.

    `restart_status` is the DGD's `status.restart` when the caller tracks one; `pull_secrets` are
    the namespace's dockerconfigjson secrets (see `pullsecrets.from_secret`) when known;
    `checkpoint_ready` is the observed readiness of each component's checkpoint. DerivedNameError
    when a derived name or label value would break the API server's rules (`render.checks.name_check`).
    """
    options = options or ClusterOptions()
    g = graph_context(dgd, options, namespace, restart_status)
    ns = g.namespace
    pathway = PATHWAY_GROVE if is_grove_pathway(g) else PATHWAY_COMPONENTS
    whash = graph_worker_hash(g)
    dcds = generated_dcds(g, whash)
    contexts = component_contexts(g, whash, dcds)
    validate(g, contexts, pathway == PATHWAY_GROVE)
    shared = shared_objects(g, contexts)
    rendered = PATHWAYS[pathway](g, whash, pull_secrets, checkpoint_ready or {}, dcds)
    annotations = {**g.annotations, names.ANNOTATION_CURRENT_WORKER_HASH: whash}
    out = RenderedGraph(
        name=g.name,
        namespace=ns,
        dynamo_namespace=names.dynamo_namespace(ns, g.name),
        worker_hash=whash,
        shared=tuple(shared),
        components=rendered.components,
        pvcs=tuple(pvcs(g)),
        required_pvcs=tuple(required_pvcs(g)),
        annotations=dict(sorted(annotations.items())),
        backend_framework=g.backend,
        pathway=pathway,
        workloads=rendered.workloads,
        checkpoints=rendered.checkpoints,
        required_secrets=required_secrets(contexts),
        checkpoint_status=rendered.checkpoint_status,
    )
    problems = rendered_name_problems(out, dgd)
    if problems:
        raise DerivedNameError(problems)
    return out
