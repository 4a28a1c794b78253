"""render_graph: a DynamoGraphDeployment -> every Kubernetes object the operator would create."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from dynamo_infra.api import AnyDGD, DynamoValidationError, Problem, to_hub, v1beta1
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import names
from dynamo_infra.render.component_type import MAIN_CONTAINER, Obj
from dynamo_infra.render.context import ComponentContext, GraphContext
from dynamo_infra.render.deployment import component_labels, deployment, replicas, service
from dynamo_infra.render.discovery import discovery_rbac

# Module names of the Dynamo backends in worker commands, for backendFramework detection.
BACKEND_MODULES = {"dynamo.vllm": "vllm", "dynamo.sglang": "sglang", "dynamo.trtllm": "trtllm"}
# DCD spec fields that do not change a worker's pods, left out of the worker hash.
HASH_EXCLUDED_FIELDS = ("replicas", "minAvailable", "scalingAdapter", "runtimeVersionOverride")


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


@dataclass(frozen=True)
class RenderedGraph:
    name: str
    namespace: str
    dynamo_namespace: str
    worker_hash: str | None
    shared: tuple[Obj, ...] = ()
    components: dict[str, RenderedComponent] = field(default_factory=dict)

    def all_objects(self) -> list[Obj]:
        out = list(self.shared)
        for c in self.components.values():
            out.extend(c.objects)
        return out


def detect_backend(dgd: v1beta1.DynamoGraphDeployment) -> str | None:
    """backendFramework as set, else the single backend found in worker commands."""
    if dgd.spec.backend_framework:
        return dgd.spec.backend_framework
    found: dict[str, str] = {}
    for c in dgd.spec.components or []:
        main = (c.pod_template.container(MAIN_CONTAINER) if c.pod_template else None) or {}
        words = " ".join(str(w) for w in [*(main.get("command") or []), *(main.get("args") or [])])
        for module, backend in BACKEND_MODULES.items():
            if module in words:
                found[c.name] = backend
    backends = sorted(set(found.values()))
    if len(backends) > 1:
        detail = ", ".join(f"{n}={b}" for n, b in sorted(found.items()))
        raise DynamoValidationError(
            [
                Problem(
                    "spec.backendFramework",
                    f"components use different backends ({detail}); set backendFramework",
                )
            ]
        )
    return backends[0] if backends else None


def _component_context(g: GraphContext, c: v1beta1.Component, worker_hash: str | None) -> ComponentContext:
    ns = names.dynamo_namespace(g.namespace, g.name, bool(c.global_dynamo_namespace))
    h = worker_hash if c.is_worker else None
    return ComponentContext(
        graph=g, component=c, dynamo_namespace=ns, dcd_name=names.dcd_name(g.name, c.name, h), worker_hash=h
    )


def dcd(ctx: ComponentContext, backend: str | None) -> Obj:
    """The v1beta1 DynamoComponentDeployment the operator would generate for a component."""
    spec = ctx.component.to_wire()
    template = copy.deepcopy(spec.get("podTemplate") or {})
    meta = template.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    for key in names.PROPAGATED_ANNOTATIONS:
        if key in ctx.graph.annotations and key not in annotations:
            annotations[key] = ctx.graph.annotations[key]
    if annotations:
        meta["annotations"] = annotations
    if ctx.worker_hash:
        meta["labels"] = {**(meta.get("labels") or {}), names.LABEL_WORKER_HASH: ctx.worker_hash}
    if not meta:
        template.pop("metadata")
    spec["podTemplate"] = template
    if backend:
        spec["backendFramework"] = backend
    return {
        "apiVersion": v1beta1.API_VERSION,
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": ctx.dcd_name, "namespace": ctx.graph.namespace, "labels": component_labels(ctx)},
        "spec": dict(sorted(spec.items())),
    }


def worker_hash(g: GraphContext, backend: str | None) -> str | None:
    """Hash of every worker's generated DCD (rendered with a placeholder hash), 8 hex chars."""
    workers = sorted((c for c in g.dgd.spec.components or [] if c.is_worker), key=lambda c: c.name)
    if not workers:
        return None
    rendered: dict[str, Obj] = {}
    for c in workers:
        d = dcd(_component_context(g, c, names.WORKER_HASH_PLACEHOLDER), backend)
        spec = {k: v for k, v in d["spec"].items() if k not in HASH_EXCLUDED_FIELDS}
        rendered[c.name] = {
            "labels": d["metadata"]["labels"],
            "annotations": d["metadata"].get("annotations") or {},
            "spec": spec,
        }
    payload = {
        "version": names.WORKER_HASH_VERSION,
        "backendFramework": backend or "",
        "env": g.dgd.spec.env or [],
        "workers": rendered,
    }
    return names.short_hash(payload)


def render_graph(
    dgd: AnyDGD, options: ClusterOptions | None = None, namespace: str | None = None
) -> RenderedGraph:
    """Every object the operator would create for `dgd` (either API version), grouped by component."""
    options = options or ClusterOptions()
    hub = to_hub(dgd)
    ns = namespace or hub.metadata.namespace or options.namespace
    g = GraphContext(dgd=hub, namespace=ns, options=options)
    backend = detect_backend(hub)
    whash = worker_hash(g, backend)
    shared: list[Obj] = discovery_rbac(g) if g.discovery_backend == "kubernetes" else []
    components: dict[str, RenderedComponent] = {}
    for c in sorted(hub.spec.components or [], key=lambda c: c.name):
        if c.multinode is not None:
            raise DynamoValidationError(
                [
                    Problem(
                        f"spec.components[{c.name}].multinode",
                        "multinode components are not supported yet (Grove/LWS rendering)",
                    )
                ]
            )
        ctx = _component_context(g, c, whash)
        objects = [o for o in (service(ctx), deployment(ctx)) if o is not None]
        components[c.name] = RenderedComponent(
            name=c.name,
            type=ctx.type,
            dcd_name=ctx.dcd_name,
            replicas=replicas(ctx),
            dcd=dcd(ctx, backend),
            objects=tuple(objects),
            scaling_adapter=c.scaling_adapter is not None,
        )
    return RenderedGraph(
        name=g.name,
        namespace=ns,
        dynamo_namespace=names.dynamo_namespace(ns, g.name),
        worker_hash=whash,
        shared=tuple(shared),
        components=components,
    )
