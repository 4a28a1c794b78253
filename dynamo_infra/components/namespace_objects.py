"""What the operator creates in every graph namespace in cluster-wide mode, which the platform layer
creates instead: the planner and EPP service accounts, each with a RoleBinding to its ClusterRole
(RBACManager), and the copy of the MPI SSH key secret (SSHKeyManager). Pure (no Pulumi).

They are the operator's objects, labels included, so a graph moves between the operator and a stack
without a change; the stack records its ownership in an annotation of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynamo_infra.render.components.epp import SERVICE_ACCOUNT as EPP_SERVICE_ACCOUNT
from dynamo_infra.render.components.planner import PLANNER_SERVICE_ACCOUNT

# Label naming the tool that manages an object.
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"

# What the planner does (the operator's chart, `templates/planner.yaml` at the pin): reads and patches its
# graph, scales through the adapters' scale subresource, and discovers and registers Dynamo endpoints
# (EndpointSlices, DynamoWorkerMetadata) as every runtime process does.
PLANNER_RULES = [
    {
        "apiGroups": ["nvidia.com"],
        "resources": ["dynamocomponentdeployments", "dynamographdeployments"],
        "verbs": ["get", "list", "create", "update", "patch"],
    },
    {
        "apiGroups": ["nvidia.com"],
        "resources": ["dynamographdeploymentscalingadapters/scale"],
        "verbs": ["patch"],
    },
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["nvidia.com"],
        "resources": ["dynamoworkermetadatas"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
]
# What the endpoint picker watches: pods and endpoint slices of the pool, the InferencePool itself.
EPP_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["inference.networking.k8s.io"],
        "resources": ["inferencepools"],
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": ["nvidia.com"], "resources": ["dynamoworkermetadatas"], "verbs": ["get", "list", "watch"]},
]


# ClusterRoles the per-namespace planner and EPP accounts are bound to (the operator's
# `rbac.plannerClusterRoleName` / `rbac.eppClusterRoleName`, which its chart installs).
PLANNER_CLUSTER_ROLE = "dynamo-operator-planner"
EPP_CLUSTER_ROLE = "dynamo-operator-epp"
RBAC_API_GROUP = "rbac.authorization.k8s.io"
# Label value the operator gives the accounts, bindings and MPI key copies it makes per namespace.
OPERATOR_MANAGED_BY = "dynamo-operator"
# Component label of the operator's RBAC objects.
RBAC_COMPONENT = "rbac"


@dataclass(frozen=True)
class PlatformRole:
    """A service account graphs' pods run as: the ClusterRole it is bound to, with its rules."""

    cluster_role: str
    rules: list[dict[str, Any]]


# The service accounts graphs' pods run as, with their ClusterRoles.
PLATFORM_ROLES: Mapping[str, PlatformRole] = {
    PLANNER_SERVICE_ACCOUNT: PlatformRole(PLANNER_CLUSTER_ROLE, PLANNER_RULES),
    EPP_SERVICE_ACCOUNT: PlatformRole(EPP_CLUSTER_ROLE, EPP_RULES),
}
PLATFORM_ACCOUNTS = frozenset(PLATFORM_ROLES)
PLATFORM_CLUSTER_ROLES = frozenset(r.cluster_role for r in PLATFORM_ROLES.values())


def operator_rbac_labels(account: str) -> dict[str, str]:
    """Labels of the operator's per-namespace account and binding (RBACManager)."""
    return {
        "app.kubernetes.io/component": RBAC_COMPONENT,
        MANAGED_BY_LABEL: OPERATOR_MANAGED_BY,
        "app.kubernetes.io/name": account,
    }


def binding_name(account: str) -> str:
    return f"{account}-binding"


def mpi_secret_labels() -> dict[str, str]:
    """Labels of the operator's copy of the MPI SSH key secret."""
    return {MANAGED_BY_LABEL: OPERATOR_MANAGED_BY}
