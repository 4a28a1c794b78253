"""Least privilege of the graphs' providers (pure): every API call our dynamic providers make, as one
table, rendered as the namespace Role (and the small ClusterRole of what is cluster-scoped) a
restricted identity needs to deploy graphs into one namespace.

The platform layer (namespace, CRDs, the planner's and EPP's accounts, the agent) keeps admin
credentials; only the graphs' providers run with this Role (`dynamo-infra:graphKubeconfig`).
API discovery (`/api`, `/apis`) is granted to every authenticated user by Kubernetes' own
`system:discovery` ClusterRole and is not repeated here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.components.epp import POOL_GROUP
from dynamo_infra.render.features import checkpoint, dra, snapshot
from dynamo_infra.render.features.autoscaling import KEDA_API_VERSION
from dynamo_infra.render.features.discovery import DISCOVERY_RULES
from dynamo_infra.render.features.ingress import ISTIO_API_VERSION
from dynamo_infra.render.workloads import grove, lws

# Name of the graphs' ServiceAccount, Role, ClusterRole and their bindings.
GRAPHS_NAME = "dynamo-infra-graphs"
# Labels of the objects `rbac_objects` renders.
RBAC_LABELS = {"app.kubernetes.io/name": GRAPHS_NAME, "app.kubernetes.io/part-of": "dynamo-infra"}
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
# Namespace of the shipped `deploy/rbac/graphs.yaml` (the stacks' default namespace).
SHIPPED_NAMESPACE = "default"

_DYNAMO = "nvidia.com"
# An object our providers apply and own: server-side apply creates it (`create`) or updates it
# (`patch`); `get` reads it (ownership, readiness, deletion waits); `list` finds those an interrupted
# run left (inventory label); `watch` lets readiness and deletion waits answer at once (without it
# they poll); `delete` prunes it or destroys it.
APPLIED = ("create", "get", "list", "watch", "patch", "delete")
# Applied, but never looked for by label (records, adapters, claims).
APPLIED_UNLISTED = ("create", "get", "patch", "delete")


@dataclass(frozen=True)
class Need:
    """One permission: `verbs` on `resource` (plural, or plural/subresource) of API `group`, and why."""

    feature: str
    group: str
    resource: str
    verbs: tuple[str, ...]
    why: str
    # The kind our providers apply as this resource ("" for reads and subresources).
    kind: str = ""
    # Only these objects (cluster-scoped reads of fixed names).
    names: tuple[str, ...] = ()

    def rule(self) -> Manifest:
        rule: Manifest = {"apiGroups": [self.group], "resources": [self.resource]}
        if self.names:
            rule["resourceNames"] = list(self.names)
        rule["verbs"] = list(self.verbs)
        return rule


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _applied(feature: str, api_version: str, kind: str, plural: str, why: str) -> Need:
    return Need(feature, _group(api_version), plural, APPLIED, why, kind)


# The graphs' providers' calls in one namespace (reconcile.workload_calls, records_calls, pvc_calls,
# checkpoint_calls, takeover, ownership), by feature.
ROLE_NEEDS: tuple[Need, ...] = (
    # Component workloads and what comes with them (reconcile.workload_calls).
    _applied("workloads", "apps/v1", "Deployment", "deployments", "component workloads"),
    _applied("workloads", "v1", "Service", "services", "component and base-model Services"),
    _applied("workloads", "v1", "ConfigMap", "configmaps", "EPP and engine configuration"),
    _applied("discovery", "v1", "ServiceAccount", "serviceaccounts", "the pods' discovery account"),
    _applied("discovery", f"{RBAC_API_VERSION}", "Role", "roles", "the discovery Role"),
    _applied("discovery", f"{RBAC_API_VERSION}", "RoleBinding", "rolebindings", "the discovery RoleBinding"),
    _applied("multinode", lws.API_VERSION, "LeaderWorkerSet", "leaderworkersets", "LWS multinode workloads"),
    _applied("grove", grove.API_VERSION, grove.KIND, "podcliquesets", "the Grove pathway's one workload"),
    _applied("ingress", "networking.k8s.io/v1", "Ingress", "ingresses", "frontend Ingress"),
    _applied("istio", ISTIO_API_VERSION, "VirtualService", "virtualservices", "frontend route in the mesh"),
    _applied("istio", ISTIO_API_VERSION, "DestinationRule", "destinationrules", "EPP traffic policy"),
    _applied("epp", f"{POOL_GROUP}/v1", "InferencePool", "inferencepools", "the EPP's InferencePool"),
    _applied("dra", dra.API_VERSION, "ResourceClaimTemplate", "resourceclaimtemplates", "GPU claims"),
    _applied("autoscaling", "autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "HPA"),
    _applied("autoscaling", KEDA_API_VERSION, "ScaledObject", "scaledobjects", "KEDA autoscaler"),
    Need("workloads", "", "secrets", ("list",), "image-pull-secret discovery (dockerconfigjson secrets)"),
    # Grove creates the cliques; we read them for readiness and set their replicas (scale subresource).
    Need("grove", "grove.io", "podcliques", ("get",), "readiness of Grove's cliques"),
    Need("grove", "grove.io", "podcliquescalinggroups", ("get",), "readiness of Grove's scaling groups"),
    Need("grove", "grove.io", "podcliques/scale", ("get", "patch"), "a clique's replicas"),
    Need("grove", "grove.io", "podcliquescalinggroups/scale", ("get", "patch"), "a scaling group's replicas"),
    # The graph's DynamoGraphDeployment record and its scaling adapters (reconcile.records_calls).
    Need(
        "records",
        _DYNAMO,
        "dynamographdeployments",
        APPLIED_UNLISTED,
        "the DGD record (and the operator's DGD released on take-over)",
        "DynamoGraphDeployment",
    ),
    Need("records", _DYNAMO, "dynamographdeployments/status", ("patch",), "the DGD record's status"),
    Need(
        "records",
        _DYNAMO,
        "dynamographdeploymentscalingadapters",
        APPLIED_UNLISTED,
        "the DGDSAs (replicas the planner or an autoscaler sets)",
        "DynamoGraphDeploymentScalingAdapter",
    ),
    Need("records", _DYNAMO, "dynamographdeploymentscalingadapters/status", ("patch",), "the DGDSAs' status"),
    # Claims (reconcile.pvc_calls).
    Need(
        "pvcs",
        "",
        "persistentvolumeclaims",
        APPLIED_UNLISTED,
        "graph volumes (retained on destroy unless opted in)",
        "PersistentVolumeClaim",
    ),
    # Checkpoints and their capture Jobs (reconcile.checkpoint_calls).
    _applied(
        "checkpoints", checkpoint.API_VERSION, checkpoint.KIND, "dynamocheckpoints", "DynamoCheckpoints"
    ),
    Need("checkpoints", _DYNAMO, "dynamocheckpoints/status", ("patch",), "a checkpoint's status"),
    _applied("checkpoints", "batch/v1", "Job", "jobs", "capture Jobs"),
    Need("checkpoints", "", "pods", ("list",), "a capture Job's pods, named when it fails"),
    # Runtimes from 1.5.0 on: the snapshot API (reconcile.snapshot_calls).
    Need(
        "checkpoints",
        _group(snapshot.API_VERSION),
        "snapshotjobs",
        APPLIED_UNLISTED,
        "automatic captures (SnapshotJobs)",
        snapshot.SNAPSHOT_JOB,
    ),
    Need("checkpoints", _group(snapshot.API_VERSION), "podsnapshots", ("get", "delete"), "restore sources"),
    # Take-over from the Dynamo operator (reconcile.takeover): its DCDs' metadata and finalizers.
    Need(
        "takeover",
        _DYNAMO,
        "dynamocomponentdeployments",
        ("get", "list", "patch"),
        "the operator's DCDs: ownership of what it left, its finalizers removed",
    ),
)

# Held so that the discovery Role can be created and bound (Kubernetes lets an identity grant only
# what it holds, short of the broader `escalate` and `bind` verbs).
GRANTED_NEEDS: tuple[Need, ...] = tuple(
    Need("discovery", group, resource, tuple(rule["verbs"]), "granted by the discovery Role")
    for rule in DISCOVERY_RULES
    for group in rule["apiGroups"]
    for resource in rule["resources"]
)

# Cluster-scoped reads no namespace Role can grant: each of a fixed object or of a small read.
CLUSTER_NEEDS: tuple[Need, ...] = (
    Need(
        "records",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        ("get",),
        "whether the DGD record can be written (its CRDs' storage version)",
        names=("dynamographdeployments.nvidia.com", "dynamographdeploymentscalingadapters.nvidia.com"),
    ),
    Need(
        "pvcs",
        "storage.k8s.io",
        "storageclasses",
        ("get",),
        "whether a claim binds at first consumer (then it is not awaited Bound)",
    ),
)


def rules(needs: Iterable[Need]) -> list[Manifest]:
    return [n.rule() for n in needs]


def _meta(name: str, namespace: str | None = None) -> Manifest:
    meta: Manifest = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = dict(RBAC_LABELS)
    return meta


def service_account(namespace: str, name: str = GRAPHS_NAME) -> Manifest:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, namespace)}


def role(namespace: str, name: str = GRAPHS_NAME, needs: Iterable[Need] | None = None) -> Manifest:
    """The namespace Role: ROLE_NEEDS and GRANTED_NEEDS (or `needs`)."""
    chosen = [*ROLE_NEEDS, *GRANTED_NEEDS] if needs is None else list(needs)
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "Role",
        "metadata": _meta(name, namespace),
        "rules": rules(chosen),
    }


def cluster_role(name: str = GRAPHS_NAME) -> Manifest:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": _meta(name),
        "rules": rules(CLUSTER_NEEDS),
    }


def _subject(namespace: str, account: str) -> Manifest:
    return {"kind": "ServiceAccount", "name": account, "namespace": namespace}


def role_binding(namespace: str, account: str = GRAPHS_NAME, name: str = GRAPHS_NAME) -> Manifest:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "RoleBinding",
        "metadata": _meta(name, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [_subject(namespace, account)],
    }


def cluster_role_binding(
    namespace: str, account: str = GRAPHS_NAME, role_name: str = GRAPHS_NAME
) -> Manifest:
    """Binds the ClusterRole to one namespace's account (named `<role>-<namespace>`)."""
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": _meta(f"{role_name}-{namespace}"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
        "subjects": [_subject(namespace, account)],
    }


def rbac_objects(namespace: str, account: str = GRAPHS_NAME) -> list[Manifest]:
    """What an admin applies once per graph namespace: the account, Role, RoleBinding, ClusterRole
    and its binding."""
    return [
        service_account(namespace, account),
        role(namespace),
        role_binding(namespace, account),
        cluster_role(),
        cluster_role_binding(namespace, account),
    ]


def covers(group: str, resource: str, verb: str, needs: Iterable[Need] | None = None) -> bool:
    """Whether the needs (the Role's and ClusterRole's by default) grant `verb` on `resource`."""
    chosen = [*ROLE_NEEDS, *GRANTED_NEEDS, *CLUSTER_NEEDS] if needs is None else needs
    return any(n.group == group and n.resource == resource and verb in n.verbs for n in chosen)


def _flow(value: object) -> str:
    """A YAML flow value (JSON is YAML)."""
    return json.dumps(value)


def _rule_lines(needs: Iterable[Need]) -> list[str]:
    lines: list[str] = []
    for n in needs:
        lines.append(f"  # {n.feature}: {n.why}")
        lines.append(f"  - apiGroups: {_flow([n.group])}")
        lines.append(f"    resources: {_flow([n.resource])}")
        if n.names:
            lines.append(f"    resourceNames: {_flow(list(n.names))}")
        lines.append(f"    verbs: {_flow(list(n.verbs))}")
    return lines


def _meta_lines(name: str, namespace: str | None) -> list[str]:
    lines = ["metadata:", f"  name: {name}"]
    if namespace:
        lines.append(f"  namespace: {namespace}")
    lines.append("  labels:")
    lines += [f"    {k}: {v}" for k, v in RBAC_LABELS.items()]
    return lines


def rbac_yaml(namespace: str, account: str = GRAPHS_NAME) -> str:
    """`rbac_objects` as commented YAML (each rule says what it is for)."""
    docs: list[list[str]] = []
    for obj in rbac_objects(namespace, account):
        meta = obj["metadata"]
        lines = [
            f"apiVersion: {obj['apiVersion']}",
            f"kind: {obj['kind']}",
            *_meta_lines(meta["name"], meta.get("namespace")),
        ]
        if obj["kind"] == "Role":
            lines += ["rules:", *_rule_lines([*ROLE_NEEDS, *GRANTED_NEEDS])]
        elif obj["kind"] == "ClusterRole":
            lines += ["rules:", *_rule_lines(CLUSTER_NEEDS)]
        elif "roleRef" in obj:
            lines.append(f"roleRef: {_flow(obj['roleRef'])}")
            lines.append(f"subjects: {_flow(obj['subjects'])}")
        docs.append(lines)
    header = [
        "# dynamo-infra: what the graphs' providers need in one namespace (generated from",
        "# dynamo_infra/render/runtime/rbac.py; `dynamo-infra rbac --namespace NS` prints it for another namespace).",
    ]
    return "\n".join([*header, *("\n".join(["---", *d]) for d in docs)]) + "\n"
