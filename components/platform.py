"""Platform: the per-namespace cluster layer the operator's Helm chart would install.

The namespace, and the service accounts (with their RBAC) that planner and EPP pods run as.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from dynamo_infra.render.epp import SERVICE_ACCOUNT as EPP_SERVICE_ACCOUNT
from dynamo_infra.render.planner import PLANNER_SERVICE_ACCOUNT

PLATFORM_TYPE = "dynamo-infra:index:Platform"
# Labels on what the platform layer creates.
MANAGED_BY = {"app.kubernetes.io/managed-by": "dynamo-infra", "app.kubernetes.io/part-of": "dynamo-platform"}

# What the planner reads and scales: pods and metrics endpoints, Dynamo graphs and their adapters.
PLANNER_RULES = [
    {"apiGroups": [""], "resources": ["pods", "services", "endpoints"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["apps"],
        "resources": ["deployments", "deployments/scale"],
        "verbs": ["get", "list", "watch", "patch", "update"],
    },
    {
        "apiGroups": ["nvidia.com"],
        "resources": [
            "dynamographdeployments",
            "dynamographdeploymentscalingadapters",
            "dynamocomponentdeployments",
        ],
        "verbs": ["get", "list", "watch", "patch", "update"],
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


class Platform(pulumi.ComponentResource):
    """Namespace plus planner/EPP service accounts. `keep_namespace` retains the namespace on
    destroy (it holds claims whose data is kept)."""

    def __init__(
        self,
        name: str,
        *,
        namespace: str,
        provider: k8s.Provider,
        keep_namespace: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(PLATFORM_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = k8s.core.v1.Namespace(
            "namespace",
            metadata={"name": namespace, "labels": MANAGED_BY},
            opts=pulumi.ResourceOptions.merge(
                child,
                # Stacks from before the platform layer had the namespace at the top level.
                pulumi.ResourceOptions(
                    retain_on_delete=keep_namespace,
                    aliases=[pulumi.Alias(name="namespace", parent=pulumi.ROOT_STACK_RESOURCE)],
                ),
            ),
        )
        in_ns = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.namespace]))
        self.service_accounts = [
            self._account(account, rules, namespace, in_ns)
            for account, rules in ((PLANNER_SERVICE_ACCOUNT, PLANNER_RULES), (EPP_SERVICE_ACCOUNT, EPP_RULES))
        ]
        self.register_outputs({"namespace": namespace})

    @staticmethod
    def _account(
        account: str, rules: list[dict[str, object]], namespace: str, opts: pulumi.ResourceOptions
    ) -> pulumi.Resource:
        meta = {"namespace": namespace, "labels": MANAGED_BY}
        sa = k8s.core.v1.ServiceAccount(account, metadata={"name": account, **meta}, opts=opts)
        role = k8s.rbac.v1.Role(account, metadata={"name": account, **meta}, rules=rules, opts=opts)
        k8s.rbac.v1.RoleBinding(
            account,
            metadata={"name": account, **meta},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            subjects=[{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[sa, role])),
        )
        return sa
