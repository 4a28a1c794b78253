"""plan_platform without Pulumi, and two platforms in one program: children are named
`<platform>-<object>`; the program's platform (`platform`) keeps their earlier names as aliases."""

from __future__ import annotations

from typing import Any

import pulumi

from components import Ownership, PlatformArgs, plan_platform
from components.platform_plan import Alias
from dynamo_infra.render.planner import PLANNER_SERVICE_ACCOUNT
from tests.conftest import REPO
from tests.unit.conftest import Mocks

CRD_DIR = REPO / "stacks" / "crds"
# The Dynamo runtime's discovery store, installed by every stack.
WORKER_METADATA_CRD = "dynamoworkermetadatas.nvidia.com"


def args(**extra: Any) -> PlatformArgs:
    return PlatformArgs("team", Ownership("p/s"), crd_dir=CRD_DIR, **extra)


def test_children_are_prefixed_and_the_programs_platform_keeps_its_earlier_names() -> None:
    plan = plan_platform("platform", args(crds=["keda"], device_class="gpu.example.com", keep_namespace=True))
    assert plan.namespace is not None and plan.namespace.name == "platform-namespace"
    assert plan.namespace.aliases == (Alias("namespace"), Alias("namespace", at_root=True))
    assert plan.namespace.metadata["annotations"] == {"dynamo-infra.io/owner-stack": "p/s"}
    assert plan.keep_namespace
    assert [(c.name, c.aliases) for c in plan.crds] == [
        (f"platform-{WORKER_METADATA_CRD}", (Alias(WORKER_METADATA_CRD),)),
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
    assert plan.outputs["crds"] == [WORKER_METADATA_CRD, "scaledobjects.keda.sh"]
    other = plan_platform("team-b", args())
    assert other.namespace is not None and other.namespace.name == "team-b-namespace"
    assert [c.aliases for c in (other.namespace, *other.crds)] == [(), ()]
    assert [a.aliases for a in other.accounts] == [(), ()]


def test_what_the_stack_does_not_own_is_not_planned() -> None:
    theirs = Ownership("p/b", namespace=False, accounts=frozenset({PLANNER_SERVICE_ACCOUNT}),
                       foreign_crds={WORKER_METADATA_CRD: "managed by Helm"})  # fmt: skip
    plan = plan_platform("platform", PlatformArgs("team", theirs, crd_dir=CRD_DIR))
    assert plan.namespace is None and plan.crds == () and plan.device_class is None
    assert [a.account for a in plan.accounts] == [PLANNER_SERVICE_ACCOUNT]
    assert plan.messages == (
        f"CRD {WORKER_METADATA_CRD} exists, managed by Helm: used as it is (never applied nor deleted by this stack)",
    )
    assert plan.outputs == {
        "namespace": "team",
        "namespaceOwned": False,
        "crds": [],
        "crdsUsedAsTheyAre": [WORKER_METADATA_CRD],
        "deviceClass": None,
    }


@pulumi.runtime.test
def test_two_platforms_coexist_in_one_program(mocks: Mocks) -> Any:
    import pulumi_kubernetes as k8s

    from components import Platform

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
