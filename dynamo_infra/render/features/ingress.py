"""Ingress and Istio VirtualService of a component (legacy `ingress` field or the cluster default)."""

from __future__ import annotations

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import names
from dynamo_infra.render.components.table import defaults_for
from dynamo_infra.render.context import ComponentContext

# Host suffix when neither the component nor the cluster sets one.
DEFAULT_HOST_SUFFIX = "local"
# Frontend HTTP port the routes point at.
SERVICE_PORT = 8000
ISTIO_API_VERSION = "networking.istio.io/v1beta1"


def ingress_spec(ctx: ComponentContext) -> Manifest | None:
    """The component's preserved v1alpha1 ingress, else (types that take it, in a graph) the cluster default."""
    if ctx.legacy.ingress is not None:
        return dict(ctx.legacy.ingress)
    if not defaults_for(ctx.type).cluster_ingress or not ctx.has_parent:
        return None
    cfg = ctx.options.ingress
    gateway = ctx.options.virtual_service_gateway
    spec: Manifest = {
        "enabled": bool(gateway or cfg.controller_class_name),
        "host": ctx.parent_name,
        "useVirtualService": bool(gateway),
    }
    if cfg.controller_class_name:
        spec["ingressControllerClassName"] = cfg.controller_class_name
    if cfg.controller_tls_secret_name:
        spec["tls"] = {"secretName": cfg.controller_tls_secret_name}
    if cfg.host_suffix:
        spec["hostSuffix"] = cfg.host_suffix
    if gateway:
        spec["virtualServiceGateway"] = gateway
    return spec


def host(spec: Manifest) -> str:
    """`{hostPrefix}{host}.{hostSuffix or "local"}`."""
    suffix = spec.get("hostSuffix")
    return f"{spec.get('hostPrefix') or ''}{spec.get('host') or ''}.{DEFAULT_HOST_SUFFIX if suffix is None else suffix}"


def ingress(ctx: ComponentContext) -> Manifest | None:
    spec = ingress_spec(ctx)
    if not spec or not spec.get("enabled") or spec.get("ingressControllerClassName") is None:
        return None
    name = names.service_name(ctx.dcd_name)
    h = host(spec)
    body: Manifest = {
        "ingressClassName": spec["ingressControllerClassName"],
        "rules": [
            {
                "host": h,
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "pathType": "Prefix",
                            "backend": {"service": {"name": name, "port": {"number": SERVICE_PORT}}},
                        }
                    ]
                },
            }
        ],
    }
    if spec.get("tls") is not None:
        body["tls"] = [{"hosts": [h], "secretName": (spec["tls"] or {}).get("secretName") or ""}]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": ctx.namespace},
        "spec": body,
    }


def virtual_service(ctx: ComponentContext) -> Manifest | None:
    """Only when the cluster has a gateway and the spec asks for a VirtualService."""
    spec = ingress_spec(ctx)
    if not ctx.options.virtual_service_gateway or not spec:
        return None
    if not (spec.get("enabled") and spec.get("useVirtualService") and spec.get("virtualServiceGateway")):
        return None
    name = names.service_name(ctx.dcd_name)
    return {
        "apiVersion": ISTIO_API_VERSION,
        "kind": "VirtualService",
        "metadata": {"name": name, "namespace": ctx.namespace},
        "spec": {
            "hosts": [host(spec)],
            "gateways": [spec["virtualServiceGateway"]],
            "http": [
                {
                    "match": [{"uri": {"prefix": "/"}}],
                    "route": [{"destination": {"host": name, "port": {"number": SERVICE_PORT}}}],
                }
            ],
        },
    }
