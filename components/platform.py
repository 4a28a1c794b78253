"""Platform: the cluster layer (namespace, service accounts, CRDs, DeviceClass) as pulumi-kubernetes
resources, created as `plan_platform` plans them; `read_ownership` reads what the cluster holds already."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from components.platform_plan import (
    DEFAULT_CRD_DIR,
    DEVICE_CLASS_API_VERSION,
    PLATFORM_ACCOUNTS,
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
from dynamo_infra.reconcile import connection
from dynamo_infra.reconcile.kube import PROGRAM_USER_AGENT, KubeClient

PLATFORM_TYPE = "dynamo-infra:index:Platform"


def read_ownership(
    kubeconfig: str, context: str | None, namespace: str, stack: str, crd_dir: Path = DEFAULT_CRD_DIR
) -> Ownership:
    """Ownership from the cluster as it is when the program runs (a few GETs; CRDs' metadata only)."""
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
        owners = {name: crd_owner(client.get_metadata(crd_stub(name))) for name in dynamo_crd_names(crd_dir)}
    foreign = {name: owner for name, owner in owners.items() if owner is not None}
    return Ownership(stack, owned_by(live_ns, stack), accounts, foreign)


def aliases_of(aliases: tuple[Alias, ...]) -> list[pulumi.Alias]:
    return [
        pulumi.Alias(name=a.name, parent=pulumi.ROOT_STACK_RESOURCE)
        if a.at_root
        else pulumi.Alias(name=a.name)
        for a in aliases
    ]


class Platform(pulumi.ComponentResource):
    """Namespace, planner/EPP service accounts, the Dynamo CRDs, and optionally third-party CRDs and the
    DRA DeviceClass, through `provider`; inputs as PlatformArgs or its keyword arguments (see there).

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
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if args is None:
            if namespace is None or ownership is None:
                raise TypeError("Platform: namespace and ownership are required (or PlatformArgs)")
            args = PlatformArgs(namespace, ownership, keep_namespace, crds, crd_dir, device_class)
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
            k8s.core.v1.Namespace(
                plan.namespace.name,
                metadata=plan.namespace.metadata,
                opts=with_aliases(plan.namespace.aliases, retain_on_delete=plan.keep_namespace),
            )
            if plan.namespace
            else None
        )
        for message in plan.messages:
            pulumi.log.info(message, resource=self)
        self.crd_names = [str(c.metadata["name"]) for c in plan.crds]
        self.crds = [
            k8s.apiextensions.v1.CustomResourceDefinition(
                c.name,
                metadata=c.metadata,
                spec=c.inputs["spec"],
                opts=with_aliases(c.aliases, retain_on_delete=True),
            )
            for c in plan.crds
        ]
        self.device_class = (
            k8s.apiextensions.CustomResource(
                plan.device_class.name,
                api_version=DEVICE_CLASS_API_VERSION,
                kind="DeviceClass",
                metadata=plan.device_class.metadata,
                spec=plan.device_class.inputs["spec"],
                opts=with_aliases(plan.device_class.aliases),
            )
            if plan.device_class
            else None
        )
        in_ns: list[pulumi.Resource] = [self.namespace] if self.namespace else []
        self.service_accounts: list[pulumi.Resource] = []
        for a in plan.accounts:
            opts_a = with_aliases(a.aliases, depends_on=in_ns)
            sa = k8s.core.v1.ServiceAccount(a.name, metadata=a.metadata, opts=opts_a)
            role = k8s.rbac.v1.Role(a.name, metadata=a.metadata, rules=a.rules, opts=opts_a)
            k8s.rbac.v1.RoleBinding(
                a.name,
                metadata=a.metadata,
                role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": a.account},
                subjects=a.subjects,
                opts=with_aliases(a.aliases, depends_on=[*in_ns, sa, role]),
            )
            self.service_accounts.append(sa)
        self.register_outputs(plan.outputs)
