"""Platform: the cluster layer (namespace, service accounts, CRDs, DeviceClass) as pulumi-kubernetes
resources (`KubernetesObject`), created as `plan_platform` plans them; `read_ownership` reads what the
cluster holds already."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.args import Kubeconfig
from dynamo_infra.components.definitions import CustomResourceDefinitions
from dynamo_infra.components.kubernetes_object import KubernetesObject
from dynamo_infra.components.namespace_objects import (
    PLATFORM_ACCOUNTS,
    PLATFORM_CLUSTER_ROLES,
    RBAC_API_GROUP,
)
from dynamo_infra.components.platform_plan import (
    CLUSTER_FIELD_MANAGER,
    CRD_API_VERSION,
    DEFAULT_CRD_DIR,
    DEVICE_CLASS_API_VERSION,
    OWNER_ANNOTATION,
    Alias,
    Ownership,
    PlatformArgs,
    PlatformPlan,
    crd_owner,
    crd_stub,
    dynamo_crd_names,
    owned_by,
    plan_platform,
)
from dynamo_infra.config import DEFAULT_MPI_SSH_SECRET, AgentOptions
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import PROGRAM_USER_AGENT, KubeClient
from dynamo_infra.render.runtime.agent import AGENT_NAME

PLATFORM_TYPE = "dynamo-infra:index:Platform"


def _in_namespace(kind: str, name: str, namespace: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": namespace}}


def read_ownership(
    kubeconfig: str,
    context: str | None,
    namespace: str,
    stack: str,
    crd_dir: Path = DEFAULT_CRD_DIR,
    mpi_ssh_secret_name: str = DEFAULT_MPI_SSH_SECRET,
    agent_namespace: str | None = None,
) -> Ownership:
    """Ownership from the cluster as it is when the program runs (a few GETs; CRDs' and ClusterRoles'
    metadata only). With `agent_namespace`, whether the agent can run there."""
    with KubeClient(connection.load(kubeconfig, context), PROGRAM_USER_AGENT) as client:
        live_ns = client.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})

        def ours(kind: str, name: str) -> bool:
            return live_ns is None or owned_by(client.get(_in_namespace(kind, name, namespace)), stack)

        accounts = frozenset(a for a in PLATFORM_ACCOUNTS if ours("ServiceAccount", a))
        owners = {name: crd_owner(client.get_metadata(crd_stub(name))) for name in dynamo_crd_names(crd_dir)}
        role_owners = {
            role: crd_owner(
                client.get_metadata(
                    {"apiVersion": f"{RBAC_API_GROUP}/v1", "kind": "ClusterRole", "metadata": {"name": role}}
                )
            )
            for role in sorted(PLATFORM_CLUSTER_ROLES)
        }
        mpi = ours("Secret", mpi_ssh_secret_name)
        blocked = agent_blocked(client, agent_namespace, namespace, stack) if agent_namespace else ""
    foreign = {name: owner for name, owner in owners.items() if owner is not None}
    foreign_roles = {name: owner for name, owner in role_owners.items() if owner is not None}
    return Ownership(stack, owned_by(live_ns, stack), accounts, foreign, foreign_roles, mpi, blocked)


def agent_blocked(client: KubeClient, agent_namespace: str, namespace: str, stack: str) -> str:
    """Why the stack cannot run its agent in `agent_namespace` ("" when it can): that namespace (not
    the graphs', which the platform creates) does not exist, or another's agent Deployment is there."""
    if (
        agent_namespace != namespace
        and client.get_metadata(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": agent_namespace}}
        )
        is None
    ):
        return f"namespace {agent_namespace} does not exist (create it, or leave the agent's namespace out)"
    live = client.get_metadata(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": AGENT_NAME, "namespace": agent_namespace},
        }
    )
    if live is not None and not owned_by(live, stack):
        owner = ((live.get("metadata") or {}).get("annotations") or {}).get(OWNER_ANNOTATION, "another tool")
        return f"Deployment {agent_namespace}/{AGENT_NAME} exists and belongs to {owner}"
    return ""


def read_mpi_ssh_secret(kubeconfig: str, context: str | None, namespace: str, name: str) -> Manifest | None:
    """The MPI SSH key secret the operator copies into graph namespaces (its `mpi.sshSecretNamespace`
    and `sshSecretName`): its `type` and `data`, or None when absent."""
    with KubeClient(connection.load(kubeconfig, context), PROGRAM_USER_AGENT) as client:
        live = client.get(_in_namespace("Secret", name, namespace))
    return None if live is None else {"type": live.get("type"), "data": live.get("data") or {}}


def aliases_of(aliases: tuple[Alias, ...]) -> list[pulumi.Alias]:
    return [
        pulumi.Alias(name=a.name, parent=pulumi.ROOT_STACK_RESOURCE)
        if a.at_root
        else pulumi.Alias(name=a.name)
        for a in aliases
    ]


class Platform(pulumi.ComponentResource):
    """Namespace, planner/EPP service accounts bound to their ClusterRoles, the MPI SSH key copy, the
    Dynamo CRDs, and optionally third-party CRDs, the DRA DeviceClass and the dynamo-infra agent,
    through `provider`; inputs as PlatformArgs or its keyword arguments (see there). Given `kubeconfig`
    (and `context`), the CRDs are one CustomResourceDefinitions resource applied with it (a digest per
    CRD in the state); else one pulumi-kubernetes resource each (their whole schemas in the state).

    Children are named `<name>-<object>`: two platforms coexist in one program.
    """

    def __init__(
        self,
        name: str,
        args: PlatformArgs | None = None,
        *,
        provider: k8s.Provider,
        namespace: str | None = None,
        ownership: Ownership | None = None,
        keep_namespace: bool = False,
        crds: Sequence[str] = (),
        crd_dir: Path = DEFAULT_CRD_DIR,
        device_class: str | None = None,
        epp: bool = False,
        mpi_ssh_secret: Manifest | None = None,
        mpi_ssh_secret_name: str = DEFAULT_MPI_SSH_SECRET,
        agent: AgentOptions | None = None,
        agent_await: bool = True,
        kubeconfig: Kubeconfig | None = None,
        context: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if args is None:
            if namespace is None or ownership is None:
                raise TypeError("Platform: namespace and ownership are required (or PlatformArgs)")
            args = PlatformArgs(
                namespace,
                ownership,
                keep_namespace,
                crds,
                crd_dir,
                device_class,
                epp,
                mpi_ssh_secret,
                mpi_ssh_secret_name,
                agent,
                agent_await,
            )
        super().__init__(PLATFORM_TYPE, name, None, opts)
        self.plan: PlatformPlan = plan_platform(name, args)
        plan = self.plan
        child = pulumi.ResourceOptions(parent=self, provider=provider)

        def with_aliases(
            aliases: tuple[Alias, ...],
            retain_on_delete: bool | None = None,
            depends_on: list[pulumi.Resource] | None = None,
        ) -> pulumi.ResourceOptions:
            more = pulumi.ResourceOptions(
                aliases=aliases_of(aliases), retain_on_delete=retain_on_delete, depends_on=depends_on
            )
            return pulumi.ResourceOptions.merge(child, more)

        self.namespace = (
            KubernetesObject(
                plan.namespace.name,
                "v1",
                "Namespace",
                {"metadata": plan.namespace.metadata},
                opts=with_aliases(plan.namespace.aliases, retain_on_delete=plan.keep_namespace),
            )
            if plan.namespace
            else None
        )
        for message in plan.messages:
            pulumi.log.info(message, resource=self)
        self.crd_names = [str(c.metadata["name"]) for c in plan.crds]
        crd_manifests: list[Manifest] = [
            {"apiVersion": CRD_API_VERSION, "kind": "CustomResourceDefinition", "metadata": c.metadata}
            | c.inputs
            for c in plan.crds
        ]
        self.crds: list[pulumi.Resource]
        if kubeconfig is not None and crd_manifests:
            # One resource whose state keeps a digest per CRD (see CustomResourceDefinitions).
            self.crds = [
                CustomResourceDefinitions(
                    f"{name}-crds",
                    crd_manifests,
                    kubeconfig=kubeconfig,
                    context=context,
                    field_manager=CLUSTER_FIELD_MANAGER,
                    opts=pulumi.ResourceOptions(parent=self),
                )
            ]
        else:
            self.crds = [
                KubernetesObject(
                    c.name,
                    CRD_API_VERSION,
                    "CustomResourceDefinition",
                    {"metadata": c.metadata, "spec": c.inputs["spec"]},
                    opts=with_aliases(c.aliases, retain_on_delete=True),
                )
                for c in plan.crds
            ]
        self.device_class = (
            KubernetesObject(
                plan.device_class.name,
                DEVICE_CLASS_API_VERSION,
                "DeviceClass",
                {"metadata": plan.device_class.metadata, "spec": plan.device_class.inputs["spec"]},
                opts=with_aliases(plan.device_class.aliases),
            )
            if plan.device_class
            else None
        )
        rbac = f"{RBAC_API_GROUP}/v1"
        self.cluster_roles = [
            KubernetesObject(
                r.name,
                rbac,
                "ClusterRole",
                {"metadata": r.metadata, "rules": r.inputs["rules"]},
                opts=with_aliases(r.aliases, retain_on_delete=True),
            )
            for r in plan.cluster_roles
        ]
        in_ns: list[pulumi.Resource] = [self.namespace] if self.namespace else []
        self.service_accounts: list[pulumi.Resource] = []
        self.role_bindings: list[pulumi.Resource] = []
        for a in plan.accounts:
            sa = KubernetesObject(
                a.name,
                "v1",
                "ServiceAccount",
                {"metadata": a.metadata},
                opts=with_aliases(a.aliases, depends_on=in_ns),
            )
            binding = KubernetesObject(
                a.name,
                rbac,
                "RoleBinding",
                {"metadata": a.binding_metadata, "roleRef": a.role_ref, "subjects": a.subjects},
                # Not on the account: a binding's subject need not exist (one check less per run).
                opts=with_aliases(a.aliases, depends_on=[*in_ns, *self.cluster_roles]),
            )
            self.service_accounts.append(sa)
            self.role_bindings.append(binding)
        self.mpi_ssh_secret = (
            KubernetesObject(
                plan.mpi_ssh_secret.name,
                "v1",
                "Secret",
                {
                    "metadata": plan.mpi_ssh_secret.metadata,
                    "type": plan.mpi_ssh_secret.inputs["type"],
                    "data": pulumi.Output.secret(plan.mpi_ssh_secret.inputs["data"]),
                },
                opts=with_aliases(plan.mpi_ssh_secret.aliases, depends_on=in_ns),
            )
            if plan.mpi_ssh_secret
            else None
        )
        # The agent: account and Role(s) first, then the Deployment that runs as that account.
        self.agent: list[pulumi.Resource] = []
        for kind in ("ServiceAccount", "Role", "RoleBinding", "Deployment"):
            for o in (o for o in plan.agent if o.kind == kind):
                self.agent.append(
                    KubernetesObject(
                        o.name,
                        o.api_version,
                        o.kind,
                        {"metadata": o.metadata, **o.inputs},
                        opts=with_aliases((), depends_on=[*in_ns, *self.agent]),
                    )
                )
        self.register_outputs(plan.outputs)
