"""Scaling adapters (DGDSA) and the legacy `autoscaling` HPA."""

from __future__ import annotations

from dynamo_infra.api import v1beta1
from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import names
from dynamo_infra.render.context import ComponentContext, GraphContext

# Adapters are stored (and written by the operator) as v1alpha1.
ADAPTER_API_VERSION = "nvidia.com/v1alpha1"
# Initial adapter replicas when the component sets none.
DEFAULT_ADAPTER_REPLICAS = 1
# Target CPU utilisation of a legacy HPA that lists no metrics.
DEFAULT_HPA_CPU_UTILIZATION = 80


def scaling_adapter(g: GraphContext, component: v1beta1.Component) -> Manifest | None:
    """The component's DGDSA (`scalingAdapter` present); its replicas matter only at creation."""
    if component.scaling_adapter is None:
        return None
    replicas = DEFAULT_ADAPTER_REPLICAS if component.replicas is None else component.replicas
    return {
        "apiVersion": ADAPTER_API_VERSION,
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "metadata": {
            "name": names.adapter_name(g.name, component.name),
            "namespace": g.namespace,
            "labels": {names.LABEL_GRAPH: g.name, names.LABEL_COMPONENT: component.name},
        },
        "spec": {"replicas": replicas, "dgdRef": {"name": g.name, "serviceName": component.name}},
    }


def hpa(ctx: ComponentContext) -> Manifest | None:
    """Legacy HPA for `autoscaling.enabled` (only with the cluster option; the pin ignores the field)."""
    cfg = ctx.legacy.autoscaling or {}
    if not ctx.options.legacy_autoscaling_hpa or not cfg.get("enabled"):
        return None
    metrics = cfg.get("metrics") or [_cpu_metric()]
    spec: Manifest = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": ctx.dcd_name},
        "maxReplicas": cfg.get("maxReplicas") or max(1, int(cfg.get("minReplicas") or 1)),
        "metrics": metrics,
    }
    if cfg.get("minReplicas") is not None:
        spec["minReplicas"] = cfg["minReplicas"]
    if cfg.get("behavior"):
        spec["behavior"] = cfg["behavior"]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": ctx.dcd_name, "namespace": ctx.namespace, "labels": dict(ctx.labels)},
        "spec": spec,
    }


# KEDA's ScaledObject API.
KEDA_API_VERSION = "keda.sh/v1alpha1"
# Workload kinds a component's replicas live on (each has a scale subresource).
SCALABLE_KINDS = ("Deployment", "LeaderWorkerSet")


def scale_target(objects: tuple[Manifest, ...], grove_target: Manifest | None) -> Manifest:
    """`{apiVersion, kind, name}` of the object whose replicas the autoscaler drives."""
    if grove_target is not None:
        return {k: grove_target[k] for k in ("apiVersion", "kind", "name")}
    for o in objects:
        if o["kind"] in SCALABLE_KINDS:
            return {"apiVersion": o["apiVersion"], "kind": o["kind"], "name": o["metadata"]["name"]}
    raise ValueError("the component has no scalable workload")


def autoscaler_object(target: Manifest, namespace: str, spec: Autoscaler, labels: dict[str, str]) -> Manifest:
    """The HPA or KEDA ScaledObject (named after its target) that owns the target's replicas."""
    meta = {"name": target["name"], "namespace": namespace, "labels": dict(labels)}
    if spec.kind == "keda":
        keda: Manifest = {
            "scaleTargetRef": dict(target),
            "minReplicaCount": spec.min_replicas,
            "maxReplicaCount": spec.max_replicas,
            "triggers": list(spec.triggers or []),
        }
        if spec.polling_interval is not None:
            keda["pollingInterval"] = spec.polling_interval
        if spec.cooldown_period is not None:
            keda["cooldownPeriod"] = spec.cooldown_period
        return {"apiVersion": KEDA_API_VERSION, "kind": "ScaledObject", "metadata": meta, "spec": keda}
    hpa_spec: Manifest = {
        "scaleTargetRef": dict(target),
        "minReplicas": spec.min_replicas,
        "maxReplicas": spec.max_replicas,
        "metrics": list(spec.metrics or [_cpu_metric()]),
    }
    if spec.behavior:
        hpa_spec["behavior"] = spec.behavior
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta,
        "spec": hpa_spec,
    }


def _cpu_metric() -> Manifest:
    return {
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": DEFAULT_HPA_CPU_UTILIZATION},
        },
    }
