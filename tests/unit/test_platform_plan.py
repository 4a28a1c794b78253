"""plan_platform without Pulumi, and two platforms in one program: children are named
`<platform>-<object>`; the program's platform (`platform`) keeps their earlier names as aliases."""

from __future__ import annotations

from typing import Any

import pulumi

from dynamo_infra.components import Ownership, PlatformArgs, plan_platform
from dynamo_infra.components.namespace_objects import PLATFORM_ROLES
from dynamo_infra.components.platform_plan import Alias
from dynamo_infra.render.components.epp import SERVICE_ACCOUNT as EPP_SERVICE_ACCOUNT
from dynamo_infra.render.components.planner import PLANNER_SERVICE_ACCOUNT
from tests.conftest import REPO
from tests.unit.conftest import Mocks

CRD_DIR = REPO / "stacks" / "crds"
# The Dynamo runtime's discovery store, installed by every stack.
WORKER_METADATA_CRD = "dynamoworkermetadatas.nvidia.com"
# Every Dynamo CRD the platform installs (file order): the graph's records and the discovery store.
DYNAMO_CRDS = ["dynamographdeployments.nvidia.com", "dynamographdeploymentscalingadapters.nvidia.com",
               "dynamomodels.nvidia.com", WORKER_METADATA_CRD]  # fmt: skip
# All of them as a Helm-installed operator's.
HELM_CRDS = {name: "managed by Helm" for name in DYNAMO_CRDS}


def args(**extra: Any) -> PlatformArgs:
    return PlatformArgs("team", Ownership("p/s"), crd_dir=CRD_DIR, **extra)


def test_children_are_prefixed_and_the_programs_platform_keeps_its_earlier_names() -> None:
    plan = plan_platform(
        "platform", args(crds=["keda"], device_class="gpu.example.com", keep_namespace=True, epp=True)
    )
    assert plan.namespace is not None and plan.namespace.name == "platform-namespace"
    assert plan.namespace.aliases == (Alias("namespace"), Alias("namespace", at_root=True))
    assert plan.namespace.metadata["annotations"] == {"dynamo-infra.io/owner-stack": "p/s"}
    assert plan.keep_namespace
    assert [(c.name, c.aliases) for c in plan.crds] == [
        *((f"platform-{name}", (Alias(name),)) for name in DYNAMO_CRDS),
        ("platform-scaledobjects.keda.sh", (Alias("scaledobjects.keda.sh"),)),
    ]
    assert plan.device_class is not None
    assert (plan.device_class.name, plan.device_class.aliases) == (
        "platform-device-class",
        (Alias("device-class"),),
    )
    assert [(a.name, a.account) for a in plan.accounts] == [
        ("platform-planner-serviceaccount", "planner-serviceaccount"),
        ("platform-epp-serviceaccount", "epp-serviceaccount"),
    ]
    assert plan.outputs["crds"] == [*DYNAMO_CRDS, "scaledobjects.keda.sh"]
    other = plan_platform("team-b", args(epp=True))
    assert other.namespace is not None and other.namespace.name == "team-b-namespace"
    assert [c.aliases for c in (other.namespace, *other.crds)] == [()] * (1 + len(DYNAMO_CRDS))
    assert [a.aliases for a in other.accounts] == [(), ()]


def test_what_the_stack_does_not_own_is_not_planned() -> None:
    theirs = Ownership("p/b", namespace=False, accounts=frozenset({PLANNER_SERVICE_ACCOUNT}),
                       foreign_crds=HELM_CRDS)  # fmt: skip
    plan = plan_platform("platform", PlatformArgs("team", theirs, crd_dir=CRD_DIR))
    assert plan.namespace is None and plan.crds == () and plan.device_class is None
    assert [a.account for a in plan.accounts] == [PLANNER_SERVICE_ACCOUNT]
    assert plan.messages == tuple(
        f"CRD {name} exists, managed by Helm: used as it is (never applied nor deleted by this stack)"
        for name in DYNAMO_CRDS
    )
    assert plan.outputs == {
        "namespace": "team",
        "namespaceOwned": False,
        "crds": [],
        "crdsUsedAsTheyAre": DYNAMO_CRDS,
        "deviceClass": None,
    }


@pulumi.runtime.test
def test_two_platforms_coexist_in_one_program(mocks: Mocks) -> Any:
    import pulumi_kubernetes as k8s

    from dynamo_infra.components import Platform

    provider = k8s.Provider("p", kubeconfig="kc")
    a = Platform("platform", args(), provider=provider)
    b = Platform("team-b", PlatformArgs("team-b", Ownership("p/s"), crd_dir=CRD_DIR), provider=provider)

    def check(urns: list[str]) -> None:
        assert len(set(urns)) == len(urns)
        namespaces = [r for r in mocks.resources if r.typ == "kubernetes:core/v1:Namespace"]
        assert sorted((r.name, r.inputs["metadata"]["name"]) for r in namespaces) == [
            ("platform-namespace", "team"),
            ("team-b-namespace", "team-b"),
        ]

    children = [r for p in (a, b) for r in (p.namespace, *p.crds, *p.service_accounts) if r is not None]
    return pulumi.Output.all(*[r.urn for r in children]).apply(check)


def test_accounts_are_the_operators_per_namespace_objects() -> None:
    """As the operator's RBAC manager makes them: the account and `<account>-binding` to the
    ClusterRole, labelled as the operator labels them; the stack's ownership in its annotation."""
    plan = plan_platform("platform", args())
    (planner,) = plan.accounts
    labels = {
        "app.kubernetes.io/component": "rbac",
        "app.kubernetes.io/managed-by": "dynamo-operator",
        "app.kubernetes.io/name": PLANNER_SERVICE_ACCOUNT,
    }
    sa, binding = planner.manifests()
    assert sa["metadata"] == {
        "name": PLANNER_SERVICE_ACCOUNT,
        "namespace": "team",
        "labels": labels,
        "annotations": {"dynamo-infra.io/owner-stack": "p/s"},
    }
    assert binding["metadata"]["name"] == "planner-serviceaccount-binding"
    assert binding["metadata"]["labels"] == labels
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "dynamo-operator-planner",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": PLANNER_SERVICE_ACCOUNT, "namespace": "team"}
    ]
    assert [(r.name, r.metadata["name"], r.aliases) for r in plan.cluster_roles] == [
        ("platform-dynamo-operator-planner", "dynamo-operator-planner", (Alias("dynamo-operator-planner"),))
    ]
    assert plan.cluster_roles[0].inputs["rules"] == PLATFORM_ROLES[PLANNER_SERVICE_ACCOUNT].rules
    with_epp = plan_platform("platform", args(epp=True))
    assert [a.account for a in with_epp.accounts] == [PLANNER_SERVICE_ACCOUNT, EPP_SERVICE_ACCOUNT]
    assert [r.metadata["name"] for r in with_epp.cluster_roles] == [
        "dynamo-operator-epp",
        "dynamo-operator-planner",
    ]


def test_cluster_roles_another_tool_installed_are_used_as_they_are() -> None:
    ownership = Ownership("p/s", foreign_cluster_roles={"dynamo-operator-planner": "managed by Helm"})
    plan = plan_platform("platform", PlatformArgs("team", ownership, crd_dir=CRD_DIR))
    assert plan.cluster_roles == ()
    assert [a.role_ref["name"] for a in plan.accounts] == ["dynamo-operator-planner"]
    assert plan.messages == (
        "ClusterRole dynamo-operator-planner exists, managed by Helm: used as it is (never applied nor deleted by this stack)",
    )


def test_mpi_ssh_secret_is_copied_as_the_operator_copies_it() -> None:
    source = {"type": "Opaque", "data": {"private.key": "cHJpdg==", "private.key.pub": "cHVi"}}
    plan = plan_platform("platform", args(mpi_ssh_secret=source, mpi_ssh_secret_name="keys"))
    assert plan.mpi_ssh_secret is not None
    assert plan.mpi_ssh_secret.metadata == {
        "name": "keys",
        "namespace": "team",
        "labels": {"app.kubernetes.io/managed-by": "dynamo-operator"},
        "annotations": {"dynamo-infra.io/owner-stack": "p/s"},
    }
    assert plan.mpi_ssh_secret.inputs == source
    assert plan_platform("platform", args()).mpi_ssh_secret is None
    theirs = Ownership("p/s", mpi_ssh_secret=False)
    assert (
        plan_platform("platform", PlatformArgs("team", theirs, mpi_ssh_secret=source)).mpi_ssh_secret is None
    )
