"""Platform: the cluster layer the operator's Helm chart (and its dependencies) would install.

The namespace and the service accounts are created and deleted by the stack that created them
(annotation OWNER_ANNOTATION); one that already exists and belongs to a user or another stack is
used as it is, never modified nor deleted (see `owned_by`). The service accounts (with their RBAC) that planner and EPP pods run as; optionally
the third-party CRDs a stack declares (shipped in `stacks/crds/<set>/`) and the DRA DeviceClass.

CRDs are never deleted by `pulumi destroy` (`retain_on_delete`): deleting a CRD deletes every custom
resource of its kind in the whole cluster, other stacks' and other tools' included. The DeviceClass
holds no data and is deleted with the stack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from dynamo_infra.reconcile import connection
from dynamo_infra.reconcile.kube import PROGRAM_USER_AGENT, KubeClient, Obj
from dynamo_infra.render.epp import SERVICE_ACCOUNT as EPP_SERVICE_ACCOUNT
from dynamo_infra.render.planner import PLANNER_SERVICE_ACCOUNT

PLATFORM_TYPE = "dynamo-infra:index:Platform"
# Where the shipped CRD sets live, relative to the Pulumi project (the program's working directory).
DEFAULT_CRD_DIR = Path("stacks") / "crds"
# DRA driver whose devices the DeviceClass selects (the NVIDIA GPU DRA driver).
DRA_DRIVER = "gpu.nvidia.com"
DEVICE_CLASS_API_VERSION = "resource.k8s.io/v1"
# One server-side-apply field manager for cluster-wide objects, whichever stack applies them: two
# stacks on one cluster share CRDs and DeviceClass instead of conflicting over them.
CLUSTER_FIELD_MANAGER = "dynamo-infra-platform"
# pulumi-kubernetes reads the field manager from this annotation (instead of a per-resource random one).
FIELD_MANAGER_ANNOTATION = "pulumi.com/patchFieldManager"
# Labels on what the platform layer creates.
MANAGED_BY = {"app.kubernetes.io/managed-by": "dynamo-infra", "app.kubernetes.io/part-of": "dynamo-platform"}
# API groups whose CRD conversion webhooks only the Dynamo operator serves: installed without them.
OPERATOR_WEBHOOK_GROUPS = frozenset({"nvidia.com"})
# On the namespace and service accounts the platform created: `<project>/<stack>` of the one stack
# that manages (and may delete) them.
OWNER_ANNOTATION = "dynamo-infra.io/owner-stack"

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


# The service accounts graphs' pods run as, with their rules.
PLATFORM_RULES: Mapping[str, list[dict[str, Any]]] = {
    PLANNER_SERVICE_ACCOUNT: PLANNER_RULES,
    EPP_SERVICE_ACCOUNT: EPP_RULES,
}
PLATFORM_ACCOUNTS = frozenset(PLATFORM_RULES)


def without_descriptions(schema: Any) -> Any:
    """An OpenAPI schema without its `description`s (as controller-gen's `maxDescLen=0` writes it).

    Only schema keywords are touched: a property *named* `description`, and `default`/`example`
    values, are kept.
    """
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: without_descriptions(v) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [without_descriptions(v) for v in value]
        elif key in _SCHEMA_VALUES:
            out[key] = (
                [without_descriptions(v) for v in value]
                if isinstance(value, list)
                else without_descriptions(value)
            )
        else:
            out[key] = value
    return out


# JSONSchemaProps keywords holding schemas: by name, in lists, or directly (or a list / bool).
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "dependencies")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_SCHEMA_VALUES = ("items", "additionalProperties", "additionalItems", "not")


def without_operator_webhook(spec: dict[str, Any]) -> dict[str, Any]:
    """A CRD spec whose conversion webhook only the Dynamo operator serves, converting with strategy
    None instead (nothing serves the webhook without the operator: every read of another version fails)."""
    conversion = spec.get("conversion") or {}
    if spec.get("group") in OPERATOR_WEBHOOK_GROUPS and conversion.get("strategy") == "Webhook":
        return {**spec, "conversion": {"strategy": "None"}}
    return spec


def installable(crd: dict[str, Any]) -> dict[str, Any]:
    """The CRD as the platform installs it: schema descriptions dropped, server-written status left
    out, no conversion webhook of the Dynamo operator."""
    spec = dict(crd["spec"])
    spec["versions"] = [
        {
            **v,
            "schema": {
                **v["schema"],
                "openAPIV3Schema": without_descriptions(v["schema"]["openAPIV3Schema"]),
            },
        }
        if (v.get("schema") or {}).get("openAPIV3Schema")
        else v
        for v in spec.get("versions") or []
    ]
    return {
        "apiVersion": crd["apiVersion"],
        "kind": crd["kind"],
        "metadata": shared(crd["metadata"]),
        "spec": without_operator_webhook(spec),
    }


def shared(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata of a cluster-wide object: applied under CLUSTER_FIELD_MANAGER."""
    annotations = {**(metadata.get("annotations") or {}), FIELD_MANAGER_ANNOTATION: CLUSTER_FIELD_MANAGER}
    return {**metadata, "annotations": annotations}


def crd_documents(crd_dir: Path, crd_set: str) -> list[dict[str, Any]]:
    """The CustomResourceDefinitions of one shipped set (every YAML document of its folder)."""
    files = sorted((crd_dir / crd_set).glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"{crd_dir / crd_set} holds no CRD files")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = [d for f in files for d in yaml.load_all(f.read_text(), Loader=loader) if d]
    for d in docs:
        if d.get("kind") != "CustomResourceDefinition":
            raise ValueError(f"{crd_dir / crd_set}: {d.get('kind')} is not a CustomResourceDefinition")
    return docs


def owned_by(live: Obj | None, stack: str) -> bool:
    """Whether `stack` manages this namespace-level object: it does not exist yet (the stack creates
    it), the stack created it, or dynamo-infra created it before owners were recorded. Anyone else's
    (a user's, another stack's) is only used."""
    if live is None:
        return True
    meta = live.get("metadata") or {}
    owner = (meta.get("annotations") or {}).get(OWNER_ANNOTATION)
    if owner is not None:
        return bool(owner == stack)
    managed_by = (meta.get("labels") or {}).get("app.kubernetes.io/managed-by")
    return bool(managed_by == MANAGED_BY["app.kubernetes.io/managed-by"])


@dataclass(frozen=True)
class Ownership:
    """What of the platform's namespace-level objects one stack manages."""

    # `<project>/<stack>`.
    stack: str
    namespace: bool = True
    # Service accounts (each with its Role and RoleBinding) the stack manages.
    accounts: frozenset[str] = PLATFORM_ACCOUNTS


def read_ownership(kubeconfig: str, context: str | None, namespace: str, stack: str) -> Ownership:
    """Ownership from the cluster as it is when the program runs (a few GETs)."""
    with KubeClient(connection.load(kubeconfig, context), PROGRAM_USER_AGENT) as client:
        live_ns = client.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        accounts = frozenset(
            a
            for a in PLATFORM_ACCOUNTS
            if live_ns is None
            or owned_by(
                client.get(
                    {
                        "apiVersion": "v1",
                        "kind": "ServiceAccount",
                        "metadata": {"name": a, "namespace": namespace},
                    }
                ),
                stack,
            )
        )
    return Ownership(stack, owned_by(live_ns, stack), accounts)


def device_class_manifest(name: str) -> dict[str, Any]:
    """The DRA DeviceClass graphs' ResourceClaimTemplates request: every device of the GPU driver."""
    return {
        "metadata": shared({"name": name, "labels": MANAGED_BY}),
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]},
    }


class Platform(pulumi.ComponentResource):
    """Namespace, planner/EPP service accounts, and optionally third-party CRDs and the DRA DeviceClass.

    `ownership` says which of the namespace and service accounts this stack creates and owns; the
    others exist already and belong to a user or another stack: untouched and never deleted.
    `keep_namespace` retains an owned namespace on destroy (it holds claims whose data is kept);
    `crds` names shipped CRD sets (folders of `crd_dir`), retained on destroy; `device_class` names
    the DeviceClass to create (None: none).
    """

    def __init__(
        self,
        name: str,
        *,
        namespace: str,
        provider: k8s.Provider,
        ownership: Ownership,
        keep_namespace: bool = False,
        crds: Sequence[str] = (),
        crd_dir: Path = DEFAULT_CRD_DIR,
        device_class: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(PLATFORM_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = (
            k8s.core.v1.Namespace(
                "namespace",
                metadata={
                    "name": namespace,
                    "labels": MANAGED_BY,
                    "annotations": {OWNER_ANNOTATION: ownership.stack},
                },
                opts=pulumi.ResourceOptions.merge(
                    child,
                    # Stacks from before the platform layer had the namespace at the top level.
                    pulumi.ResourceOptions(
                        retain_on_delete=keep_namespace,
                        aliases=[pulumi.Alias(name="namespace", parent=pulumi.ROOT_STACK_RESOURCE)],
                    ),
                ),
            )
            if ownership.namespace
            else None
        )
        retained = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(retain_on_delete=True))
        docs = [doc for crd_set in crds for doc in crd_documents(crd_dir, crd_set)]
        self.crd_names = [str(doc["metadata"]["name"]) for doc in docs]
        self.crds = [
            k8s.apiextensions.v1.CustomResourceDefinition(
                crd["metadata"]["name"], metadata=crd["metadata"], spec=crd["spec"], opts=retained
            )
            for crd in (installable(doc) for doc in docs)
        ]
        self.device_class = (
            k8s.apiextensions.CustomResource(
                "device-class",
                api_version=DEVICE_CLASS_API_VERSION,
                kind="DeviceClass",
                **device_class_manifest(device_class),
                opts=child,
            )
            if device_class
            else None
        )
        in_ns = pulumi.ResourceOptions.merge(
            child, pulumi.ResourceOptions(depends_on=[self.namespace] if self.namespace else [])
        )
        self.service_accounts = [
            self._account(account, rules, namespace, ownership.stack, in_ns)
            for account, rules in PLATFORM_RULES.items()
            if account in ownership.accounts
        ]
        self.register_outputs(
            {
                "namespace": namespace,
                "namespaceOwned": self.namespace is not None,
                "crds": self.crd_names,
                "deviceClass": device_class,
            }
        )

    @staticmethod
    def _account(
        account: str,
        rules: Sequence[Mapping[str, object]],
        namespace: str,
        stack: str,
        opts: pulumi.ResourceOptions,
    ) -> pulumi.Resource:
        meta = {"namespace": namespace, "labels": MANAGED_BY, "annotations": {OWNER_ANNOTATION: stack}}
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
