"""The run-time agent's objects (pure): its ServiceAccount and Deployment, and in each namespace it
watches a Role holding exactly the rules its code uses, bound to that ServiceAccount."""

from __future__ import annotations

from collections.abc import Sequence

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.runtime.lora import RULES as LORA_RULES

# Name of the agent's ServiceAccount, Deployment, Roles and RoleBindings, and its field manager.
AGENT_NAME = "dynamo-infra-agent"
# The agent's pod labels (the Deployment's selector).
AGENT_LABELS = {"app.kubernetes.io/name": AGENT_NAME, "app.kubernetes.io/part-of": "dynamo-infra"}
# The agent's container (named as every main container we render).
AGENT_CONTAINER = "main"
# The console script and subcommand the image runs.
AGENT_COMMAND = ("dynamo-infra", "agent")
# Requests and limits when the stack gives none (measured RSS of one agent: docs/how-to/agent.md).
DEFAULT_RESOURCES: Manifest = {
    "requests": {"cpu": "50m", "memory": "128Mi"},
    "limits": {"memory": "256Mi"},
}
# A non-root user (the image's own; see Dockerfile).
AGENT_UID = 65532
# Seconds the agent has to finish its in-flight writes on SIGTERM.
TERMINATION_GRACE_S = 30
# Writable scratch space under a read-only root filesystem.
TMP_VOLUME = "tmp"

_DYNAMO = "nvidia.com"
_VERBS_READ = ["get", "list", "watch"]

# Least privilege: each rule is used by the agent's code as its comment says; nothing else is granted.
AGENT_RULES: list[Manifest] = [
    # Watch the graphs' DGD records and read one before acting on it.
    {"apiGroups": [_DYNAMO], "resources": ["dynamographdeployments"], "verbs": _VERBS_READ},
    # JSON-patch a component's replicas in the DGD record (a DGDSA's spec.replicas carried over).
    {"apiGroups": [_DYNAMO], "resources": ["dynamographdeployments"], "verbs": ["patch"]},
    # Server-side apply of the DGD record's status.
    {"apiGroups": [_DYNAMO], "resources": ["dynamographdeployments/status"], "verbs": ["patch"]},
    # Watch and list the graphs' DGDSAs (the planner's replica requests).
    {
        "apiGroups": [_DYNAMO],
        "resources": ["dynamographdeploymentscalingadapters"],
        "verbs": ["list", "watch"],
    },
    # Server-side apply of each DGDSA's status (replicas, selector).
    {
        "apiGroups": [_DYNAMO],
        "resources": ["dynamographdeploymentscalingadapters/status"],
        "verbs": ["patch"],
    },
    # Watch the components' workloads and read them for the status.
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": _VERBS_READ},
    {"apiGroups": ["leaderworkerset.x-k8s.io"], "resources": ["leaderworkersets"], "verbs": _VERBS_READ},
    {"apiGroups": ["grove.io"], "resources": ["podcliques", "podcliquescalinggroups"], "verbs": _VERBS_READ},
    # Read and set a component's replicas through its scale target's scale subresource.
    {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get", "patch"]},
    {
        "apiGroups": ["leaderworkerset.x-k8s.io"],
        "resources": ["leaderworkersets/scale"],
        "verbs": ["get", "patch"],
    },
    {
        "apiGroups": ["grove.io"],
        "resources": ["podcliques/scale", "podcliquescalinggroups/scale"],
        "verbs": ["get", "patch"],
    },
    # LoRA adapters: watch DynamoModels and their base models' EndpointSlices, read each endpoint's pod,
    # keep the finalizer, write the status (render/runtime/lora.py says which call needs which).
    *LORA_RULES,
]


def agent_command(watched: Sequence[str]) -> list[str]:
    """The container's command: the agent, once per watched namespace."""
    return [*AGENT_COMMAND, *[arg for ns in watched for arg in ("--namespace", ns)]]


def _meta(name: str, namespace: str) -> Manifest:
    return {"name": name, "namespace": namespace, "labels": dict(AGENT_LABELS)}


def service_account(namespace: str) -> Manifest:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(AGENT_NAME, namespace)}


def role(namespace: str) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(AGENT_NAME, namespace),
        "rules": [{k: list(v) for k, v in rule.items()} for rule in AGENT_RULES],
    }


def role_binding(namespace: str, agent_namespace: str) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(AGENT_NAME, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": AGENT_NAME},
        "subjects": [{"kind": "ServiceAccount", "name": AGENT_NAME, "namespace": agent_namespace}],
    }


def deployment(
    namespace: str, watched: Sequence[str], image: str, replicas: int, resources: Manifest
) -> Manifest:
    container: Manifest = {
        "name": AGENT_CONTAINER,
        "image": image,
        "command": agent_command(watched),
        "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
        "resources": resources,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": AGENT_UID,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": TMP_VOLUME, "mountPath": "/tmp"}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(AGENT_NAME, namespace),
        "spec": {
            "replicas": replicas,
            # Never two agents at once during a rollout (each would act on every event).
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": dict(AGENT_LABELS)},
            "template": {
                "metadata": {"labels": dict(AGENT_LABELS)},
                "spec": {
                    "serviceAccountName": AGENT_NAME,
                    "terminationGracePeriodSeconds": TERMINATION_GRACE_S,
                    "containers": [container],
                    "volumes": [{"name": TMP_VOLUME, "emptyDir": {}}],
                },
            },
        },
    }


def agent_objects(
    namespace: str,
    watched: Sequence[str],
    image: str,
    *,
    replicas: int = 1,
    resources: Manifest | None = None,
) -> list[Manifest]:
    """The agent in `namespace` acting on the graphs of `watched` namespaces: ServiceAccount, Deployment,
    and a Role + RoleBinding per watched namespace (sorted, each once)."""
    spaces = sorted(set(watched))
    objects = [
        service_account(namespace),
        deployment(namespace, spaces, image, replicas, dict(resources or DEFAULT_RESOURCES)),
    ]
    for ns in spaces:
        objects += [role(ns), role_binding(ns, namespace)]
    return objects
