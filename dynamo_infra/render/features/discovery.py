"""Kubernetes discovery RBAC: the ServiceAccount Dynamo pods use to find each other."""

from __future__ import annotations

import hashlib

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.context import GraphContext
from dynamo_infra.render.names import discovery_service_account

# Labels the operator puts on its discovery RBAC objects.
MANAGED_BY = "dynamo-operator"
RBAC_COMPONENT = "rbac"
# Kubernetes label values are at most 63 characters.
MAX_LABEL_VALUE = 63
# What the discovery Role grants the pods (the operator's rules).
DISCOVERY_RULES: tuple[Manifest, ...] = (
    {"apiGroups": [""], "resources": ["endpoints", "pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["nvidia.com"],
        "resources": ["dynamoworkermetadatas"],
        "verbs": ["create", "get", "list", "watch", "update", "patch", "delete"],
    },
)


def label_value(value: str) -> str:
    """Truncate to 63 chars as `<prefix>-<8 hex of sha256>` when too long."""
    if len(value) <= MAX_LABEL_VALUE:
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:8]
    return f"{value[: MAX_LABEL_VALUE - 9]}-{digest}"


def discovery_rbac(g: GraphContext) -> list[Manifest]:
    sa = discovery_service_account(g.name)
    labels = {
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "app.kubernetes.io/component": RBAC_COMPONENT,
        "app.kubernetes.io/name": label_value(sa),
    }
    meta = {"namespace": g.namespace, "labels": labels}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, **meta}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": f"{sa}-role", **meta},
            "rules": [{k: list(v) for k, v in rule.items()} for rule in DISCOVERY_RULES],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": f"{sa}-binding", **meta},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{sa}-role"},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": g.namespace}],
        },
    ]
