"""render_graph: a DynamoGraphDeployment -> every Kubernetes object the operator would create."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dynamo_infra.api import AnyDGD, DynamoValidationError, Problem, to_hub, v1beta1
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import backend as backends
from dynamo_infra.render import names
from dynamo_infra.render.autoscaling import hpa, scaling_adapter
from dynamo_infra.render.context import MAIN_CONTAINER, ComponentContext, GraphContext, Obj
from dynamo_infra.render.dcd import generate_dcd
from dynamo_infra.render.deployment import deployment, model_service, replicas, service
from dynamo_infra.render.discovery import discovery_rbac
from dynamo_infra.render.epp import epp_objects
from dynamo_infra.render.ingress import ingress, virtual_service
from dynamo_infra.render.legacy import LegacyComponent, legacy_of
from dynamo_infra.render.pullsecrets import PullSecret, with_workload_pull_secrets
from dynamo_infra.render.restart import restart_annotations
from dynamo_infra.render.volumes import pvcs, required_pvcs

# DCD spec fields that do not change a worker's pods, left out of the worker hash.
HASH_EXCLUDED_FIELDS = ("replicas", "minAvailable", "scalingAdapter", "runtimeVersionOverride")
# Experimental features rendered by later issues (GPU memory service, failover, checkpoints).
UNSUPPORTED_EXPERIMENTAL = ("gpuMemoryService", "failover", "checkpoint")


@dataclass(frozen=True)
class RenderedComponent:
    """One component: its DCD (as the operator would store it) and the objects that run it."""

    name: str
    type: str
    dcd_name: str
    replicas: int
    dcd: Obj
    objects: tuple[Obj, ...]
    scaling_adapter: bool = False
    # The DGDSA to create once (its replicas then belong to the adapter), when `scalingAdapter` is set.
    adapter: Obj | None = None
    # Replicas owned by a legacy HPA (rendered among `objects`).
    autoscaled: bool = False
    # Whether the provider should attach the namespace's matching dockerconfigjson secrets.
    pull_secret_discovery: bool = True


@dataclass(frozen=True)
class RenderedGraph:
    name: str
    namespace: str
    dynamo_namespace: str
    worker_hash: str | None
    shared: tuple[Obj, ...] = ()
    components: dict[str, RenderedComponent] = field(default_factory=dict)
    # PVCs to create when missing (never updated; retained on destroy unless opted in).
    pvcs: tuple[Obj, ...] = ()
    # PVC names the graph needs but does not create (must exist before the workloads start).
    required_pvcs: tuple[str, ...] = ()
    # DGD metadata annotations as the operator would store them (webhook default, current hash).
    annotations: Mapping[str, str] = field(default_factory=dict)
    backend_framework: str = ""

    def all_objects(self) -> list[Obj]:
        out = list(self.shared)
        for c in self.components.values():
            out.extend(c.objects)
        return out


def _fail(path: str, message: str) -> DynamoValidationError:
    return DynamoValidationError([Problem(path, message)])


def check_supported(dgd: v1beta1.DynamoGraphDeployment) -> None:
    """Raise for what this renderer does not cover yet (multinode, GMS, failover, checkpoints)."""
    for c in dgd.spec.components or []:
        if c.multinode is not None:
            raise _fail(
                f"spec.components[{c.name}].multinode",
                "multinode components are not supported yet (Grove/LWS rendering)",
            )
        exp = c.experimental.to_wire() if c.experimental else {}
        for key in UNSUPPORTED_EXPERIMENTAL:
            if key in exp and (key != "checkpoint" or exp[key].get("enabled")):
                raise _fail(f"spec.components[{c.name}].experimental.{key}", "is not supported yet")


def detect_backend(dgd: v1beta1.DynamoGraphDeployment) -> str:
    """backendFramework as set, else the single backend detected in worker commands."""
    if dgd.spec.backend_framework:
        return dgd.spec.backend_framework
    detected = ""
    for c in dgd.spec.components or []:
        if not c.is_worker:
            continue
        main = (c.pod_template.container(MAIN_CONTAINER) if c.pod_template else None) or {}
        found = backends.detect(
            list(main.get("command") or []), list(main.get("args") or []), f"spec.components[{c.name}]"
        )
        if not found:
            continue
        if detected and found != detected:
            raise _fail(
                "spec.backendFramework",
                f"multiple backend frameworks detected for generated DynamoComponentDeployments: "
                f"{detected} and {found}",
            )
        detected = found
    return detected


def graph_annotations(dgd: v1beta1.DynamoGraphDeployment, options: ClusterOptions) -> dict[str, str]:
    """DGD annotations after the operator's webhook (origin version stamped when absent)."""
    annotations = dict(dgd.metadata.annotations or {})
    if options.operator_origin_version and names.ANNOTATION_ORIGIN_VERSION not in annotations:
        annotations[names.ANNOTATION_ORIGIN_VERSION] = options.operator_origin_version
    return annotations


def worker_hash(g: GraphContext) -> str | None:
    """Hash of every worker's generated DCD (rendered with a placeholder hash), 8 hex chars."""
    workers = sorted((c for c in g.dgd.spec.components or [] if c.is_worker), key=lambda c: c.name)
    if not workers:
        return None
    rendered: dict[str, Obj] = {}
    for c in workers:
        d = generate_dcd(g, c, names.WORKER_HASH_PLACEHOLDER)
        rendered[c.name] = {
            "labels": d["metadata"]["labels"],
            "annotations": d["metadata"].get("annotations") or {},
            "spec": {k: v for k, v in d["spec"].items() if k not in HASH_EXCLUDED_FIELDS},
        }
    payload = {
        "version": names.WORKER_HASH_VERSION,
        "backendFramework": g.backend,
        "env": g.dgd.spec.env or [],
        "workers": rendered,
    }
    return names.short_hash(payload)


def component_context(
    dcd: Obj,
    options: ClusterOptions,
    legacy: LegacyComponent | None = None,
    graph_spec_annotations: Mapping[str, str] | None = None,
) -> ComponentContext:
    meta = dcd.get("metadata") or {}
    return ComponentContext(
        namespace=str(meta.get("namespace") or options.namespace),
        options=options,
        dcd_name=str(meta["name"]),
        labels=dict(meta.get("labels") or {}),
        annotations=dict(meta.get("annotations") or {}),
        spec=dict(dcd.get("spec") or {}),
        legacy=legacy or LegacyComponent(),
        graph_spec_annotations=dict(graph_spec_annotations or {}),
    )


def component_objects(ctx: ComponentContext, pull_secrets: Sequence[PullSecret] | None = None) -> list[Obj]:
    """What the component controller creates for one single-node DCD (model Service excluded)."""
    objects = [deployment(ctx), service(ctx), ingress(ctx), virtual_service(ctx), hpa(ctx)]
    out = [o for o in objects if o is not None]
    if pull_secrets and ctx.options.image_pull_secret_discovery:
        out = [with_workload_pull_secrets(o, pull_secrets) for o in out]
    return out


def render_dcd(
    dcd: Obj, options: ClusterOptions | None = None, pull_secrets: Sequence[PullSecret] | None = None
) -> list[Obj]:
    """Objects for a standalone DynamoComponentDeployment (v1beta1 wire form)."""
    ctx = component_context(dcd, options or ClusterOptions())
    if (ctx.spec.get("multinode") or {}).get("nodeCount", 1) > 1:
        raise _fail("spec.multinode", "multinode components are not supported yet (LWS rendering)")
    model = model_service(ctx)
    return [*component_objects(ctx, pull_secrets), *([model] if model else [])]


def render_graph(
    dgd: AnyDGD,
    options: ClusterOptions | None = None,
    namespace: str | None = None,
    *,
    restart_status: Mapping[str, Any] | None = None,
    pull_secrets: Sequence[PullSecret] | None = None,
) -> RenderedGraph:
    """Every object the operator would create for `dgd` (either API version), grouped by component.

    `restart_status` is the DGD's `status.restart` when the caller tracks one; `pull_secrets` are
    the namespace's dockerconfigjson secrets (see `pullsecrets.from_secret`) when known.
    """
    options = options or ClusterOptions()
    hub = to_hub(dgd)
    check_supported(hub)
    ns = namespace or hub.metadata.namespace or options.namespace
    g = GraphContext(
        dgd=hub,
        namespace=ns,
        options=options,
        annotations=graph_annotations(hub, options),
        legacy=legacy_of(dgd),
        backend=detect_backend(hub),
        restart_at=restart_annotations(hub, restart_status),
    )
    whash = worker_hash(g)
    shared: list[Obj] = discovery_rbac(g) if g.discovery_backend == "kubernetes" else []
    shared.extend(epp_objects(g))
    components: dict[str, RenderedComponent] = {}
    models: set[str] = set()
    for c in sorted(hub.spec.components or [], key=lambda c: c.name):
        dcd = generate_dcd(g, c, whash)
        ctx = component_context(dcd, options, g.legacy.component(c.name), hub.spec.annotations)
        objects = component_objects(ctx, pull_secrets)
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
            dcd=dcd,
            objects=tuple(objects),
            scaling_adapter=adapter is not None,
            adapter=adapter,
            autoscaled=any(o["kind"] == "HorizontalPodAutoscaler" for o in objects),
            pull_secret_discovery=options.image_pull_secret_discovery
            and ctx.template_annotations.get(names.ANNOTATION_DISABLE_PULL_SECRET_DISCOVERY) != "true",
        )
    annotations = dict(g.annotations)
    if whash:
        annotations[names.ANNOTATION_CURRENT_WORKER_HASH] = whash
    return RenderedGraph(
        name=g.name,
        namespace=ns,
        dynamo_namespace=names.dynamo_namespace(ns, g.name),
        worker_hash=whash,
        shared=tuple(shared),
        components=components,
        pvcs=tuple(pvcs(g)),
        required_pvcs=tuple(required_pvcs(g)),
        annotations=dict(sorted(annotations.items())),
        backend_framework=g.backend,
    )
