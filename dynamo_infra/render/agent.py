"""The dynamo-infra agent's objects: its ServiceAccount and Deployment, and per graph namespace the Role
and RoleBinding that let it read the workloads and write the records (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from dynamo_infra.api.manifest import Manifest

# Name of the agent's ServiceAccount, Deployment, Roles and RoleBindings.
AGENT_NAME = "dynamo-infra-agent"
# Labels of the agent's pods (and the selector of its Deployment).
AGENT_LABELS = {"app.kubernetes.io/name": AGENT_NAME}
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
# What the agent reads and writes in a graph namespace.
AGENT_RULES: list[Manifest] = [
    {
        "apiGroups": ["nvidia.com"],
        "resources": ["dynamographdeployments", "dynamographdeploymentscalingadapters", "dynamomodels"],
        "verbs": ["get", "list", "watch", "patch"],
    },
    {
        "apiGroups": ["nvidia.com"],
        "resources": [
            "dynamographdeployments/status",
            "dynamographdeploymentscalingadapters/status",
            "dynamomodels/status",
        ],
        "verbs": ["patch"],
    },
    {
        "apiGroups": ["apps", "leaderworkerset.x-k8s.io", "grove.io"],
        "resources": ["deployments", "leaderworkersets", "podcliques", "podcliquescalinggroups"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["apps", "leaderworkerset.x-k8s.io", "grove.io"],
        "resources": [
            "deployments/scale",
            "leaderworkersets/scale",
            "podcliques/scale",
            "podcliquescalinggroups/scale",
        ],
        "verbs": ["get", "patch"],
    },
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
]


def agent_objects(
    namespace: str,
    watched: Sequence[str],
    image: str,
    *,
    replicas: int = 1,
    resources: Manifest | None = None,
) -> list[Manifest]:
    """The agent running in `namespace` for the graphs of the `watched` namespaces."""
    meta = {"name": AGENT_NAME, "namespace": namespace, "labels": dict(AGENT_LABELS)}
    command = ["dynamo-infra", "agent", *(w for ns in watched for w in ("--namespace", ns))]
    container: Manifest = {"name": "main", "image": image, "command": command}
    if resources:
        container["resources"] = dict(resources)
    out: list[Manifest] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(meta)},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": dict(meta),
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": dict(AGENT_LABELS)},
                "template": {
                    "metadata": {"labels": dict(AGENT_LABELS)},
                    "spec": {"serviceAccountName": AGENT_NAME, "containers": [container]},
                },
            },
        },
    ]
    for ns in watched:
        in_ns = {"name": AGENT_NAME, "namespace": ns, "labels": dict(AGENT_LABELS)}
        out.append({"apiVersion": RBAC_API_VERSION, "kind": "Role", "metadata": in_ns, "rules": AGENT_RULES})
        out.append(
            {
                "apiVersion": RBAC_API_VERSION,
                "kind": "RoleBinding",
                "metadata": dict(in_ns),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": AGENT_NAME},
                "subjects": [{"kind": "ServiceAccount", "name": AGENT_NAME, "namespace": namespace}],
            }
        )
    return out
