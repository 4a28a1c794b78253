"""plan_platform: the objects of the cluster layer (what the operator's Helm chart and its dependencies
would install), as pulumi-kubernetes resources with their inputs. Pure (no Pulumi).

The namespace, the service accounts and the MPI SSH key copy are created and deleted by the stack
that created them (annotation OWNER_ANNOTATION); one that already exists and belongs to a user or
another stack is used as it is, never modified nor deleted (see `owned_by`). The service accounts
planner and EPP pods run as, bound to their ClusterRoles, and the MPI key copy are the operator's own
per-namespace objects (`namespace_objects`); the Dynamo runtime's CRDs (`stacks/crds/dynamo/`,
always); the third-party CRDs a stack declares (shipped in `stacks/crds/<set>/`) and the DRA
DeviceClass. ClusterRoles, like CRDs, are shared by stacks and kept on destroy.

A Dynamo CRD that exists and was not installed by dynamo-infra (a Helm-installed operator's) is used
as it is, never applied nor deleted (see `crd_owner`). CRDs are never deleted by `pulumi destroy`
(`retain_on_delete`): deleting a CRD deletes every custom resource of its kind in the whole
cluster, other stacks' and other tools' included. The DeviceClass holds no data and is deleted with
the stack.

Children are named `<platform>-<object>`, so two platforms coexist in one program; the platform
named LEGACY_PLATFORM_NAME (the program's) keeps its children's earlier unprefixed names as aliases,
so existing stacks neither replace nor delete them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.agent_plan import AgentObjectPlan, plan_agent
from dynamo_infra.components.crd_files import crd_document, crd_names, crd_sources
from dynamo_infra.components.namespace_objects import (
    PLATFORM_ACCOUNTS,
    PLATFORM_ROLES,
    RBAC_API_GROUP,
    binding_name,
    mpi_secret_labels,
    operator_rbac_labels,
)
from dynamo_infra.config import DEFAULT_MPI_SSH_SECRET, AgentOptions
from dynamo_infra.platform_options import DYNAMO_CRD_SET
from dynamo_infra.render.components.epp import SERVICE_ACCOUNT as EPP_SERVICE_ACCOUNT
from dynamo_infra.render.components.planner import PLANNER_SERVICE_ACCOUNT

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
# Label naming the tool that manages an object.
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
# Labels on what the platform layer creates.
MANAGED_BY = {MANAGED_BY_LABEL: "dynamo-infra", "app.kubernetes.io/part-of": "dynamo-platform"}
# API groups whose CRD conversion webhooks only the Dynamo operator serves: installed without them.
OPERATOR_WEBHOOK_GROUPS = frozenset({"nvidia.com"})
# The Dynamo API version served and stored when the operator's conversion webhook is dropped: the hub
# of Dynamo's conversions, the version its planner (1.4.0) reads and JSON-patches DGDs in.
DYNAMO_HUB_VERSION = "v1beta1"
# API version of CustomResourceDefinitions.
CRD_API_VERSION = "apiextensions.k8s.io/v1"
# On the namespace and service accounts the platform created: `<project>/<stack>` of the one stack
# that manages (and may delete) them.
OWNER_ANNOTATION = "dynamo-infra.io/owner-stack"


def without_descriptions(schema: Any) -> Any:
    """An OpenAPI schema without its `description`s (as controller-gen's `maxDescLen=0` writes it).

    Only schema keywords are touched: a property *named* `description`, and `default`/`example`
    values, are kept. Empty `required` lists go too: the API server stores none (the DGD CRD at the
    pin has some), so keeping them would show as a change on every preview.
    """
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description" or (key == "required" and value == []):
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
    None instead (nothing serves the webhook without the operator: every read of another version fails).

    Strategy None converts by relabelling the apiVersion only, so an object written in one version and
    read in another loses the fields the versions name differently. The hub version (what Dynamo's
    runtime and planner read and patch) is then the only one served, and the one stored; a client of
    another version gets a clear 404 instead of a silently truncated object.
    """
    conversion = spec.get("conversion") or {}
    if spec.get("group") not in OPERATOR_WEBHOOK_GROUPS or conversion.get("strategy") != "Webhook":
        return spec
    versions = spec.get("versions") or []
    if not any(v.get("name") == DYNAMO_HUB_VERSION for v in versions):
        return {**spec, "conversion": {"strategy": "None"}}
    hub_only = [
        {**v, "served": v["name"] == DYNAMO_HUB_VERSION, "storage": v["name"] == DYNAMO_HUB_VERSION}
        for v in versions
    ]
    return {**spec, "versions": hub_only, "conversion": {"strategy": "None"}}


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


def dynamo_crd_names(crd_dir: Path = DEFAULT_CRD_DIR) -> list[str]:
    """Names of the Dynamo runtime's CRDs every stack installs."""
    return crd_names(crd_dir, DYNAMO_CRD_SET)


def crd_stub(name: str) -> Manifest:
    return {"apiVersion": CRD_API_VERSION, "kind": "CustomResourceDefinition", "metadata": {"name": name}}


def crd_owner(live: Manifest | None) -> str | None:
    """Who else manages this cluster-wide object (a CRD, a ClusterRole); None when the platform does:
    it is absent (the platform installs it), or applied by CLUSTER_FIELD_MANAGER and labelled as
    managed by no other tool."""
    if live is None:
        return None
    meta = live.get("metadata") or {}
    managed_by = (meta.get("labels") or {}).get(MANAGED_BY_LABEL)
    if managed_by is not None and managed_by != MANAGED_BY[MANAGED_BY_LABEL]:
        return f"managed by {managed_by}"
    # Writers of the object itself (the API server's status updates left out).
    managers = sorted(
        {str(m.get("manager")) for m in meta.get("managedFields") or [] if not m.get("subresource")}
    )
    if CLUSTER_FIELD_MANAGER in managers:
        return None
    return f"applied by {', '.join(managers)}" if managers else "installed by another tool"


def owned_by(live: Manifest | None, stack: str) -> bool:
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
    # Service accounts (each with its RoleBinding) the stack manages.
    accounts: frozenset[str] = PLATFORM_ACCOUNTS
    # Dynamo CRDs another tool installed (name: who manages it): used as they are, never applied.
    foreign_crds: Mapping[str, str] = field(default_factory=dict)
    # ClusterRoles of the accounts another tool installed (a Helm-installed operator's): used as they are.
    foreign_cluster_roles: Mapping[str, str] = field(default_factory=dict)
    # Whether the namespace's MPI SSH key secret is the stack's to create (absent, or its own).
    mpi_ssh_secret: bool = True
    # Why the stack cannot deploy the agent ("" when it can): its namespace is missing, or an agent
    # of someone else's runs there.
    agent_blocked: str = ""


def device_class_manifest(name: str) -> dict[str, Any]:
    """The DRA DeviceClass graphs' ResourceClaimTemplates request: every device of the GPU driver."""
    return {
        "metadata": shared({"name": name, "labels": MANAGED_BY}),
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]},
    }


# The name the program's platform has always had; its children were named without a prefix.
LEGACY_PLATFORM_NAME = "platform"


@dataclass(frozen=True)
class PlatformArgs:
    """The inputs of a Platform (besides its Kubernetes provider).

    `ownership` says which of the namespace and service accounts this stack creates and owns; the
    others exist already and belong to a user or another stack: untouched and never deleted.
    `keep_namespace` retains an owned namespace on destroy (it holds claims whose data is kept);
    `crds` names shipped CRD sets (folders of `crd_dir`), retained on destroy; `device_class` names
    the DeviceClass to create (None: none). As the operator does per graph namespace: the planner
    account always, the EPP account when `epp` (a graph has an EPP component), and when
    `mpi_ssh_secret` (the source Secret's `type` and `data`, for graphs with multinode components) a
    copy of it named `mpi_ssh_secret_name`. With `agent`, the dynamo-infra agent (`agent_await`: its
    Deployment is awaited).
    """

    namespace: str
    ownership: Ownership
    keep_namespace: bool = False
    crds: Sequence[str] = ()
    crd_dir: Path = DEFAULT_CRD_DIR
    device_class: str | None = None
    epp: bool = False
    mpi_ssh_secret: Manifest | None = None
    mpi_ssh_secret_name: str = DEFAULT_MPI_SSH_SECRET
    agent: AgentOptions | None = None
    agent_await: bool = True


@dataclass(frozen=True)
class Alias:
    """An earlier name of a child: under the platform, or (`at_root`) at the stack's top level."""

    name: str
    at_root: bool = False


@dataclass(frozen=True)
class ChildPlan:
    """One pulumi-kubernetes resource: its name, earlier names, and its metadata and other inputs."""

    name: str
    aliases: tuple[Alias, ...]
    metadata: Manifest
    inputs: Manifest = field(default_factory=dict)


@dataclass(frozen=True)
class AccountPlan:
    """A service account and its RoleBinding to a ClusterRole (two resources of one name), as the
    operator's RBAC manager makes them."""

    name: str
    aliases: tuple[Alias, ...]
    account: str
    metadata: Manifest
    binding_metadata: Manifest
    role_ref: Manifest
    subjects: list[dict[str, Any]]

    def manifests(self) -> list[Manifest]:
        """The ServiceAccount and RoleBinding as applied."""
        return [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": self.metadata},
            {
                "apiVersion": f"{RBAC_API_GROUP}/v1",
                "kind": "RoleBinding",
                "metadata": self.binding_metadata,
                "roleRef": self.role_ref,
                "subjects": self.subjects,
            },
        ]


@dataclass(frozen=True)
class PlatformPlan:
    # The namespace, when the stack owns it (retained on destroy when `keep_namespace`).
    namespace: ChildPlan | None
    keep_namespace: bool
    crds: tuple[ChildPlan, ...]
    device_class: ChildPlan | None
    # ClusterRoles the accounts are bound to (cluster-wide, shared by stacks, retained on destroy).
    cluster_roles: tuple[ChildPlan, ...]
    accounts: tuple[AccountPlan, ...]
    # The namespace's copy of the MPI SSH key secret.
    mpi_ssh_secret: ChildPlan | None
    # What the `up` says about Dynamo CRDs another tool installed.
    messages: tuple[str, ...]
    outputs: Manifest
    # The dynamo-infra agent's objects (none without the agent).
    agent: tuple[AgentObjectPlan, ...] = ()


def plan_platform(name: str, args: PlatformArgs) -> PlatformPlan:
    """The children of platform `name`."""
    ownership = args.ownership
    legacy = name == LEGACY_PLATFORM_NAME

    def aliases(old: str, *more: Alias) -> tuple[Alias, ...]:
        return (Alias(old), *more) if legacy else ()

    owned = {"labels": MANAGED_BY, "annotations": {OWNER_ANNOTATION: ownership.stack}}
    namespace = (
        ChildPlan(
            f"{name}-namespace",
            # Stacks from before the platform layer had the namespace at the top level.
            aliases("namespace", Alias("namespace", at_root=True)),
            {"name": args.namespace, **owned},
        )
        if ownership.namespace
        else None
    )
    sets = [DYNAMO_CRD_SET, *(s for s in args.crds if s != DYNAMO_CRD_SET)]
    # Only the CRDs the stack installs are parsed (a foreign one is used as it is).
    docs = [
        crd_document(source)
        for crd_set in sets
        for source in crd_sources(args.crd_dir, crd_set)
        if source.name not in ownership.foreign_crds
    ]
    crds = tuple(
        ChildPlan(
            f"{name}-{crd['metadata']['name']}",
            aliases(crd["metadata"]["name"]),
            crd["metadata"],
            {"spec": crd["spec"]},
        )
        for crd in (installable(doc) for doc in docs)
    )
    device_class = None
    if args.device_class:
        manifest = device_class_manifest(args.device_class)
        device_class = ChildPlan(
            f"{name}-device-class", aliases("device-class"), manifest["metadata"], {"spec": manifest["spec"]}
        )
    wanted = [PLANNER_SERVICE_ACCOUNT, *([EPP_SERVICE_ACCOUNT] if args.epp else [])]
    owner = {"annotations": {OWNER_ANNOTATION: ownership.stack}}
    accounts = tuple(
        AccountPlan(
            f"{name}-{account}",
            aliases(account),
            account,
            {"name": account, "namespace": args.namespace, "labels": operator_rbac_labels(account), **owner},
            {
                "name": binding_name(account),
                "namespace": args.namespace,
                "labels": operator_rbac_labels(account),
                **owner,
            },
            {"apiGroup": RBAC_API_GROUP, "kind": "ClusterRole", "name": PLATFORM_ROLES[account].cluster_role},
            [{"kind": "ServiceAccount", "name": account, "namespace": args.namespace}],
        )
        for account in wanted
        if account in ownership.accounts
    )
    roles = sorted({PLATFORM_ROLES[a].cluster_role: PLATFORM_ROLES[a] for a in wanted}.items())
    cluster_roles = tuple(
        ChildPlan(
            f"{name}-{role}",
            aliases(role),
            shared({"name": role, "labels": MANAGED_BY}),
            {"rules": spec.rules},
        )
        for role, spec in roles
        if role not in ownership.foreign_cluster_roles
    )
    mpi_ssh_secret = (
        ChildPlan(
            f"{name}-{args.mpi_ssh_secret_name}",
            aliases(args.mpi_ssh_secret_name),
            {
                "name": args.mpi_ssh_secret_name,
                "namespace": args.namespace,
                "labels": mpi_secret_labels(),
                **owner,
            },
            {"type": args.mpi_ssh_secret.get("type"), "data": args.mpi_ssh_secret.get("data") or {}},
        )
        if args.mpi_ssh_secret is not None and ownership.mpi_ssh_secret
        else None
    )
    messages = tuple(
        f"CRD {crd_name} exists, {owner}: used as it is (never applied nor deleted by this stack)"
        for crd_name, owner in sorted(ownership.foreign_crds.items())
    ) + tuple(
        f"ClusterRole {role} exists, {who}: used as it is (never applied nor deleted by this stack)"
        for role, who in sorted(ownership.foreign_cluster_roles.items())
    )
    agent = (
        plan_agent(
            name, args.namespace, args.agent, MANAGED_BY, owner["annotations"], await_ready=args.agent_await
        )
        if args.agent
        else ()
    )
    outputs = {
        "namespace": args.namespace,
        "namespaceOwned": namespace is not None,
        "crds": [str(c.metadata["name"]) for c in crds],
        "crdsUsedAsTheyAre": sorted(ownership.foreign_crds),
        "deviceClass": args.device_class,
    }
    if args.agent:
        outputs["agent"] = {"image": args.agent.image, "namespace": args.agent.namespace or args.namespace}
    return PlatformPlan(
        namespace,
        args.keep_namespace,
        crds,
        device_class,
        cluster_roles,
        accounts,
        mpi_ssh_secret,
        messages,
        outputs,
        agent,
    )
