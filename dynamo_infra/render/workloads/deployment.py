"""DCD path for single-node components: the Deployment, the component Service, model Services."""

from __future__ import annotations

from dynamo_infra.api import DynamoValidationError, Problem
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import names, roles
from dynamo_infra.render.components.table import defaults_for, sub_component_type
from dynamo_infra.render.context import DISCOVERY_KUBERNETES, ComponentContext
from dynamo_infra.render.features import checkpoint
from dynamo_infra.render.multinode import Deployer, Role
from dynamo_infra.render.podspec import placement, pod_spec, with_default_service_account
from dynamo_infra.render.workloads import capture

# Rolling-update bounds when the component's annotations set none.
DEFAULT_MAX_SURGE = "25%"
DEFAULT_MAX_UNAVAILABLE = "25%"
# `nvidia.com/deployment-strategy` value that switches to the Recreate strategy.
STRATEGY_RECREATE = "Recreate"
# Replicas of a component that sets none (what the API server defaults a Deployment to).
DEFAULT_REPLICAS = 1
# Why a component with role pod templates renders no Deployment.
ROLE_TEMPLATES_NEED_LWS = (
    "role pod templates render as a LeaderWorkerSet or a Grove PodCliqueSet; enable one of them"
)
# Port of the model headless Service (the worker system port).
MODEL_SERVICE_PORT = 9090
# DCD metadata labels that win over pod-template labels on the workload.
OBJECT_LABEL_KEYS = (
    names.LABEL_COMPONENT,
    names.LABEL_NAMESPACE,
    names.LABEL_GRAPH,
    names.LABEL_WORKER_HASH,
    names.LABEL_COMPONENT_CLASS,
)


def kube_labels(ctx: ComponentContext) -> dict[str, str]:
    """GetDCDKubeLabels: labels of the Deployment (and base of the pod labels)."""
    labels = {**ctx.labels, **ctx.legacy.labels, **ctx.template_labels}
    if ctx.model_ref:
        labels[names.LABEL_BASE_MODEL_HASH] = names.model_hash(ctx.model_ref)
    sub_type = sub_component_type(ctx)
    if sub_type:
        labels[names.LABEL_SUB_COMPONENT_TYPE] = sub_type
    labels[names.LABEL_COMPONENT] = ctx.name
    labels[names.LABEL_NAMESPACE] = ctx.dynamo_namespace
    labels.update({k: ctx.labels[k] for k in OBJECT_LABEL_KEYS if ctx.labels.get(k)})
    return dict(sorted(labels.items()))


def kube_annotations(ctx: ComponentContext) -> dict[str, str]:
    """GetDCDKubeAnnotations: pod-template annotations without the origin version."""
    annotations = {**ctx.legacy.annotations, **ctx.template_annotations}
    if ctx.model_ref:
        annotations[names.ANNOTATION_BASE_MODEL] = ctx.model_ref
    annotations.pop(names.ANNOTATION_ORIGIN_VERSION, None)
    for key in names.TOPOLOGY_SOURCE_ANNOTATIONS:
        annotations.pop(key, None)
        if ctx.annotations.get(key):
            annotations[key] = ctx.annotations[key]
    return dict(sorted(annotations.items()))


def pod_labels(ctx: ComponentContext, annotations: dict[str, str]) -> dict[str, str]:
    labels = kube_labels(ctx)
    if annotations.get(names.ANNOTATION_ENABLE_METRICS) != "false":
        labels[names.LABEL_METRICS] = "true"
    if ctx.has_parent:
        labels[names.LABEL_GRAPH] = ctx.parent_name
    if ctx.type:
        labels[names.LABEL_COMPONENT_TYPE] = ctx.type
    labels[names.LABEL_COMPONENT] = ctx.name
    labels[names.LABEL_NAMESPACE] = ctx.dynamo_namespace
    if ctx.labels.get(names.LABEL_WORKER_HASH):
        labels[names.LABEL_WORKER_HASH] = ctx.labels[names.LABEL_WORKER_HASH]
    labels[names.LABEL_SELECTOR] = ctx.dcd_name
    if ctx.k8s_discovery:
        labels[names.LABEL_DISCOVERY_BACKEND] = DISCOVERY_KUBERNETES
        labels[names.LABEL_DISCOVERY_ENABLED] = "true"
    return dict(sorted(labels.items()))


def _int_or_string(value: str) -> int | str:
    """intstr.Parse: digits become an integer."""
    return int(value) if value.isdigit() else value


def strategy(ctx: ComponentContext, annotations: dict[str, str]) -> Manifest:
    resource = {**ctx.legacy.annotations, **ctx.template_annotations}
    if resource.get(names.ANNOTATION_DEPLOYMENT_STRATEGY) == STRATEGY_RECREATE:
        return {"type": "Recreate"}
    surge = annotations.get(names.ANNOTATION_MAX_SURGE) or DEFAULT_MAX_SURGE
    unavailable = annotations.get(names.ANNOTATION_MAX_UNAVAILABLE) or DEFAULT_MAX_UNAVAILABLE
    return {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": _int_or_string(surge), "maxUnavailable": _int_or_string(unavailable)},
    }


def replicas(ctx: ComponentContext) -> int:
    r = ctx.spec.get("replicas")
    return DEFAULT_REPLICAS if r is None else int(r)


def _metadata(
    ctx: ComponentContext, name: str, labels: dict[str, str], annotations: dict[str, str]
) -> Manifest:
    meta: Manifest = {"name": name, "namespace": ctx.namespace, "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    return meta


def pod_template(ctx: ComponentContext, deployer: Deployer, role: Role = Role.MAIN) -> Manifest:
    """generatePodTemplateSpec of the DCD controller: pod labels and annotations, role's pod spec."""
    restore_labels, restore_annotations = capture.restore_target_metadata(ctx)
    annotations = {
        **kube_annotations(ctx),
        **checkpoint.restore_candidate_annotations(ctx),
        **restore_annotations,
    }
    meta: Manifest = {"labels": dict(sorted({**pod_labels(ctx, annotations), **restore_labels}.items()))}
    if annotations:
        meta["annotations"] = dict(annotations)
    spec = with_default_service_account(pod_spec(ctx, placement(ctx, deployer, role)))
    return {"metadata": meta, "spec": spec}


def deployment(ctx: ComponentContext, deployer: Deployer) -> Manifest:
    """The component's Deployment (`deployer` addresses peers of a multinode DCD without LWS)."""
    if roles.has_role_pod_templates(ctx.spec):
        # The leader and worker templates have no Deployment pod to become.
        raise DynamoValidationError([Problem(f"components[{ctx.name}].roles", ROLE_TEMPLATES_NEED_LWS)])
    annotations = kube_annotations(ctx)
    spec: Manifest = {}
    if ctx.spec.get("replicas") is not None:
        spec["replicas"] = int(ctx.spec["replicas"])
    spec.update(
        {
            "selector": {"matchLabels": {names.LABEL_SELECTOR: ctx.dcd_name}},
            "strategy": strategy(ctx, annotations),
            "template": pod_template(ctx, deployer),
        }
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(ctx, ctx.dcd_name, kube_labels(ctx), annotations),
        "spec": spec,
    }


def service(ctx: ComponentContext) -> Manifest | None:
    """The component's ClusterIP Service: with Kubernetes discovery, or when its type always has one."""
    defaults = defaults_for(ctx.type)
    if not (ctx.k8s_discovery or defaults.service_without_discovery):
        return None
    labels = kube_labels(ctx)
    if ctx.k8s_discovery:
        labels = {
            **labels,
            names.LABEL_DISCOVERY_BACKEND: DISCOVERY_KUBERNETES,
            names.LABEL_DISCOVERY_ENABLED: "true",
        }
    selector = {
        names.LABEL_COMPONENT_TYPE: ctx.type,
        names.LABEL_NAMESPACE: ctx.dynamo_namespace,
        names.LABEL_COMPONENT: ctx.name,
    }
    if ctx.node_count > 1:
        selector[names.LABEL_ROLE] = names.ROLE_LEADER
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(
            ctx, names.service_name(ctx.dcd_name), dict(sorted(labels.items())), kube_annotations(ctx)
        ),
        "spec": {"selector": selector, "ports": [defaults.service_port(ctx)]},
    }


def model_service(ctx: ComponentContext) -> Manifest | None:
    """Headless Service that finds every pod serving the component's base model."""
    model = ctx.model_ref
    if not model:
        return None
    model_hash = names.model_hash(model)
    annotations = {**ctx.graph_spec_annotations, names.ANNOTATION_BASE_MODEL: model}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": names.model_service_name(model),
            "namespace": ctx.namespace,
            "labels": {
                names.LABEL_BASE_MODEL_HASH: model_hash,
                names.LABEL_MANAGED_BY: names.MANAGED_BY_OPERATOR,
            },
            "annotations": dict(sorted(annotations.items())),
        },
        "spec": {
            "clusterIP": "None",
            "selector": {names.LABEL_BASE_MODEL_HASH: model_hash},
            "ports": [
                {
                    "name": "system",
                    "port": MODEL_SERVICE_PORT,
                    "targetPort": MODEL_SERVICE_PORT,
                    "protocol": "TCP",
                }
            ],
        },
    }
