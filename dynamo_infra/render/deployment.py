"""DCD path for single-node components: the Deployment and the component Service."""

from __future__ import annotations

from dynamo_infra.render import names
from dynamo_infra.render.component_type import Obj
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.podspec import component_type, pod_spec

# Rolling-update bounds when the DGD's annotations set none.
DEFAULT_MAX_SURGE = "25%"
DEFAULT_MAX_UNAVAILABLE = "25%"
# Replicas of a component that sets none.
DEFAULT_REPLICAS = 1


def component_labels(ctx: ComponentContext) -> dict[str, str]:
    """Labels on the DCD and on the objects it owns."""
    user = dict(
        ((ctx.component.pod_template.metadata if ctx.component.pod_template else None) or {}).get("labels")
        or {}
    )
    labels = {
        **user,
        names.LABEL_COMPONENT: ctx.component.name,
        names.LABEL_NAMESPACE: ctx.dynamo_namespace,
        names.LABEL_GRAPH: ctx.graph.name,
    }
    if ctx.worker_hash:
        labels[names.LABEL_WORKER_HASH] = ctx.worker_hash
    return labels


def sub_component_type(ctx: ComponentContext) -> str | None:
    """prefill/decode appear to the runtime as sub-component types of a worker."""
    return ctx.type if ctx.type in ("prefill", "decode") else None


def pod_labels(ctx: ComponentContext) -> dict[str, str]:
    g = ctx.graph
    user_meta = (ctx.component.pod_template.metadata if ctx.component.pod_template else None) or {}
    labels = {**(g.dgd.spec.labels or {}), **component_labels(ctx)}
    if g.annotations.get(names.ANNOTATION_ENABLE_METRICS) != "false":
        labels[names.LABEL_METRICS] = "true"
    labels[names.LABEL_COMPONENT_TYPE] = ctx.type
    sub = sub_component_type(ctx)
    if sub:
        labels[names.LABEL_SUB_COMPONENT_TYPE] = sub
    labels[names.LABEL_SELECTOR] = ctx.dcd_name
    if g.discovery_backend == "kubernetes":
        labels[names.LABEL_DISCOVERY_BACKEND] = "kubernetes"
        labels[names.LABEL_DISCOVERY_ENABLED] = "true"
    labels.update(user_meta.get("labels") or {})
    # System labels the user cannot override.
    labels[names.LABEL_GRAPH] = g.name
    labels[names.LABEL_COMPONENT_TYPE] = ctx.type
    labels[names.LABEL_NAMESPACE] = ctx.dynamo_namespace
    if ctx.worker_hash:
        labels[names.LABEL_WORKER_HASH] = ctx.worker_hash
    return dict(sorted(labels.items()))


def pod_annotations(ctx: ComponentContext) -> dict[str, str]:
    g = ctx.graph
    user_meta = (ctx.component.pod_template.metadata if ctx.component.pod_template else None) or {}
    annotations = {**(g.dgd.spec.annotations or {}), **(user_meta.get("annotations") or {})}
    annotations.pop(names.ANNOTATION_ORIGIN_VERSION, None)  # kept on the DCD, not on Deployment pods
    restart_at = g.annotations.get(names.ANNOTATION_RESTART_AT)
    if restart_at:
        annotations[names.ANNOTATION_RESTART_AT] = restart_at
    return dict(sorted(annotations.items()))


def strategy(ctx: ComponentContext) -> Obj:
    a = ctx.graph.annotations
    if a.get(names.ANNOTATION_DEPLOYMENT_STRATEGY) == "Recreate":
        return {"type": "Recreate"}
    return {
        "type": "RollingUpdate",
        "rollingUpdate": {
            "maxSurge": a.get(names.ANNOTATION_MAX_SURGE, DEFAULT_MAX_SURGE),
            "maxUnavailable": a.get(names.ANNOTATION_MAX_UNAVAILABLE, DEFAULT_MAX_UNAVAILABLE),
        },
    }


def replicas(ctx: ComponentContext) -> int:
    r = ctx.component.replicas
    return DEFAULT_REPLICAS if r is None else r


def deployment(ctx: ComponentContext) -> Obj:
    template_meta: Obj = {"labels": pod_labels(ctx)}
    annotations = pod_annotations(ctx)
    if annotations:
        template_meta["annotations"] = annotations
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": ctx.dcd_name, "namespace": ctx.graph.namespace, "labels": component_labels(ctx)},
        "spec": {
            "replicas": replicas(ctx),
            "selector": {"matchLabels": {names.LABEL_SELECTOR: ctx.dcd_name}},
            "strategy": strategy(ctx),
            "template": {"metadata": template_meta, "spec": pod_spec(ctx)},
        },
    }


def service(ctx: ComponentContext) -> Obj | None:
    """The component's ClusterIP Service (frontends always; others with Kubernetes discovery)."""
    ports = component_type(ctx.type).service_ports(ctx)
    if ports is None:
        return None
    labels = component_labels(ctx)
    if ctx.graph.discovery_backend == "kubernetes":
        labels = {
            **labels,
            names.LABEL_DISCOVERY_BACKEND: "kubernetes",
            names.LABEL_DISCOVERY_ENABLED: "true",
        }
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": ctx.dcd_name.replace(".", "-"),
            "namespace": ctx.graph.namespace,
            "labels": labels,
        },
        "spec": {
            "selector": {
                names.LABEL_COMPONENT_TYPE: ctx.type,
                names.LABEL_NAMESPACE: ctx.dynamo_namespace,
                names.LABEL_COMPONENT: ctx.component.name,
            },
            "ports": ports,
        },
    }
