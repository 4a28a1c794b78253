"""The program side of the dynamo-infra agent: the `dynamo-infra:agent` option, the platform's agent
objects, who owns each component's replicas, and the records' `dynamo-infra.io/components`
annotation the agent reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pulumi
import pytest

from dynamo_infra.api import v1beta1
from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components import Ownership, PlatformArgs, plan_graph, plan_platform
from dynamo_infra.components.records import records_props
from dynamo_infra.config import AgentOptions, ClusterOptions
from dynamo_infra.kube.client import object_key, stub
from dynamo_infra.render.runtime.records import COMPONENTS_ANNOTATION, components_annotation, graph_record
from tests.conftest import REPO
from tests.unit.conftest import Mocks
from tests.unit.test_stack_config import failure, read

CRD_DIR = REPO / "stacks" / "crds"
IMAGE = "ghcr.io/example/dynamo-infra:0.1.0"
RUNTIME_IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"
# A planner in its default (kubernetes) environment, and one in its virtual environment.
KUBERNETES_PLANNER = ["python3", "-m", "dynamo.planner"]
VIRTUAL_PLANNER = ["python3", "-m", "dynamo.planner", "--config", '{"environment": "virtual"}']


def component(name: str, type_: str, command: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    main = {"name": "main", "image": RUNTIME_IMAGE, "command": command or ["python3", "-m", "dynamo.vllm"]}
    return {"name": name, "type": type_, "podTemplate": {"spec": {"containers": [main]}}, **extra}


def planner_graph(
    planner: list[str] | None = KUBERNETES_PLANNER, **decode: Any
) -> v1beta1.DynamoGraphDeployment:
    components = [
        component("Frontend", "frontend", ["python3", "-m", "dynamo.frontend"]),
        component("prefill", "prefill"),
        component("decode", "decode", **decode),
    ]
    if planner is not None:
        components.append(component("Planner", "planner", planner))
    return v1beta1.DynamoGraphDeployment.parse(
        {
            "apiVersion": v1beta1.API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": "g"},
            "spec": {"backendFramework": "vllm", "components": components},
        }
    )


def owners(dgd: v1beta1.DynamoGraphDeployment, **kw: Any) -> dict[str, str]:
    return {c.rendered.name: c.replicas for c in plan_graph("g", dgd, namespace="ns", **kw).components}


# --- the option -------------------------------------------------------------------------------------


def test_the_agent_option_is_absent_by_default_and_read_with_its_namespace() -> None:
    assert read().agent is None
    agent = read(agent={"image": IMAGE}).agent
    assert agent == AgentOptions(image=IMAGE) and agent.namespace_in(ClusterOptions()) == "default"
    elsewhere = read(agent={"image": IMAGE, "namespace": "ops"}, cluster={"namespace": "team"}).agent
    assert elsewhere is not None and elsewhere.namespace_in(ClusterOptions(namespace="team")) == "ops"
    digest = f"registry.local:5000/dynamo-infra@sha256:{'a' * 64}"
    assert read(agent={"image": digest}).agent == AgentOptions(image=digest)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({}, "dynamo-infra:agent.image: required field is missing"),
        ("img:1", "dynamo-infra:agent: must be a mapping (got string)"),
        (
            {"image": "ghcr.io/example/dynamo-infra"},
            "dynamo-infra:agent.image: 'ghcr.io/example/dynamo-infra' is not an image reference with a tag "
            "or digest",
        ),
        (
            {"image": IMAGE, "namespace": "Ops"},
            "dynamo-infra:agent.namespace: 'Ops' is not a valid namespace name",
        ),
        ({"image": IMAGE, "replicas": 2}, "dynamo-infra:agent.replicas: unknown field"),
    ],
)
def test_agent_errors_name_their_key(value: Any, expected: str) -> None:
    assert failure(kubeconfig="k", agent=value) == expected


# --- the platform's agent objects ---------------------------------------------------------------------


def test_the_platform_plans_the_agent_as_the_stacks_own() -> None:
    plain = plan_platform("platform", PlatformArgs("team", Ownership("p/s"), crd_dir=CRD_DIR))
    assert plain.agent == () and "agent" not in plain.outputs
    plan = plan_platform(
        "platform", PlatformArgs("team", Ownership("p/s"), crd_dir=CRD_DIR, agent=AgentOptions(image=IMAGE))
    )
    assert [(o.kind, o.name, o.metadata["namespace"]) for o in plan.agent] == [
        ("ServiceAccount", "platform-agent", "team"),
        ("Deployment", "platform-agent", "team"),
        ("Role", "platform-agent", "team"),
        ("RoleBinding", "platform-agent", "team"),
    ]
    for o in plan.agent:
        assert o.metadata["name"] == "dynamo-infra-agent"
        assert o.metadata["annotations"] == {"dynamo-infra.io/owner-stack": "p/s"}
        assert o.metadata["labels"]["app.kubernetes.io/managed-by"] == "dynamo-infra"
        assert o.metadata["labels"]["app.kubernetes.io/name"] == "dynamo-infra-agent"
    deployment = plan.agent[1].inputs["spec"]
    (main,) = deployment["template"]["spec"]["containers"]
    assert main["image"] == IMAGE and main["command"][-2:] == ["--namespace", "team"]
    assert deployment["template"]["spec"]["serviceAccountName"] == "dynamo-infra-agent"
    assert set(plan.agent[3].inputs) == {"roleRef", "subjects"}
    assert plan.outputs["agent"] == {"image": IMAGE, "namespace": "team"}
    # Elsewhere: the account and Deployment there, the Role and binding in the graphs' namespace.
    ops = plan_platform(
        "platform",
        PlatformArgs(
            "team",
            Ownership("p/s"),
            crd_dir=CRD_DIR,
            agent=AgentOptions(image=IMAGE, namespace="ops"),
            agent_await=False,
        ),
    )
    assert [(o.name, o.metadata["namespace"]) for o in ops.agent] == [
        ("platform-agent", "ops"),
        ("platform-agent", "ops"),
        ("platform-agent-team", "team"),
        ("platform-agent-team", "team"),
    ]
    assert ops.agent[3].inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": "dynamo-infra-agent", "namespace": "ops"}
    ]
    # Not awaited where workloads are not (no kubelets).
    assert ops.agent[1].metadata["annotations"]["pulumi.com/skipAwait"] == "true"
    assert "pulumi.com/skipAwait" not in ops.agent[0].metadata["annotations"]


@pulumi.runtime.test
def test_the_platform_creates_the_agent_objects(mocks: Mocks) -> Any:
    import pulumi_kubernetes as k8s

    from dynamo_infra.components import Platform

    provider = k8s.Provider("p", kubeconfig="kc")
    platform = Platform(
        "platform",
        PlatformArgs("team", Ownership("p/s"), crd_dir=CRD_DIR, agent=AgentOptions(image=IMAGE)),
        provider=provider,
    )

    def check(_: object) -> None:
        made = {r.typ: r.inputs for r in mocks.resources if r.name == "platform-agent"}
        assert sorted(made) == [
            "kubernetes:apps/v1:Deployment",
            "kubernetes:core/v1:ServiceAccount",
            "kubernetes:rbac.authorization.k8s.io/v1:Role",
            "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        ]
        deployment = made["kubernetes:apps/v1:Deployment"]
        assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == IMAGE
        assert (
            made["kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"]["roleRef"]["name"]
            == "dynamo-infra-agent"
        )

    assert len(platform.agent) == 4
    return pulumi.Output.all(*[r.urn for r in platform.agent]).apply(check)


# --- who owns the replicas ----------------------------------------------------------------------------


def test_with_the_agent_the_planner_scaled_types_are_the_agents() -> None:
    dgd = planner_graph()
    assert owners(dgd, agent=True) == {
        "Frontend": "graph",
        "prefill": "agent",
        "decode": "agent",
        "Planner": "graph",
    }
    # Without the agent, Pulumi keeps them (and the plan says what will not work).
    assert set(owners(dgd).values()) == {"graph"}
    assert plan_graph("g", dgd, namespace="ns").unserved
    assert plan_graph("g", dgd, namespace="ns", agent=True).unserved == ()
    # A planner in its virtual environment scales nothing of the stack's; a graph without a planner neither.
    assert set(owners(planner_graph(VIRTUAL_PLANNER), agent=True).values()) == {"graph"}
    assert set(owners(planner_graph(None), agent=True).values()) == {"graph"}


def test_an_adapter_hands_its_replicas_to_the_agent_unless_an_autoscaler_owns_them() -> None:
    adapted = planner_graph(None, scalingAdapter={})
    assert owners(adapted, agent=True)["decode"] == "agent"
    assert owners(adapted)["decode"] == "graph"
    hpa = {"decode": Autoscaler.parse({"maxReplicas": 4})}
    assert owners(adapted, agent=True, autoscalers=hpa)["decode"] == "autoscaler"
    assert owners(planner_graph(scalingAdapter={}), agent=True, autoscalers=hpa)["decode"] == "autoscaler"
    assert owners(adapted, autoscalers=hpa)["decode"] == "autoscaler"


@pulumi.runtime.test
def test_agent_owned_workloads_take_their_replicas_at_creation_only(mocks: Mocks) -> Any:
    from dynamo_infra.components import DynamoGraphDeployment

    g = DynamoGraphDeployment("g", planner_graph(), kubeconfig="kc", namespace="ns", agent=True)

    def check(_: object) -> None:
        external = {
            r.name: r.inputs["replicasExternal"] for r in mocks.resources if r.name.endswith("-workload")
        }
        assert external == {
            "g-frontend-workload": False,
            "g-prefill-workload": True,
            "g-decode-workload": True,
            "g-planner-workload": False,
        }
        (records,) = [r for r in mocks.resources if r.name == "g-records"]
        assert {n: c["replicas"] for n, c in records.inputs["components"].items()} == {
            "Frontend": "graph",
            "prefill": "agent",
            "decode": "agent",
            "Planner": "graph",
        }

    return pulumi.Output.all(g.state, g.records.recorded).apply(check)


# --- the records' annotation ----------------------------------------------------------------------------


def test_the_components_annotation_names_scale_targets_and_replica_owners() -> None:
    dgd = planner_graph()
    plan = plan_graph("g", dgd, namespace="ns", agent=True)
    props = records_props(dgd, plan.rendered, {c.rendered.name: c.replicas for c in plan.components})
    decode = props["components"]["decode"]
    name = decode["workload"].rsplit("/", 1)[-1]
    assert decode["workload"] == f"apps/v1/Deployment/ns/{name}"
    assert decode["scaleTarget"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    assert decode["replicas"] == "agent" and props["components"]["Frontend"]["replicas"] == "graph"
    text = components_annotation(props["components"])
    assert json.loads(text) == props["components"]
    assert ", " not in text and ": " not in text
    assert text == json.dumps(props["components"], sort_keys=True, separators=(",", ":"))
    # Grove: the PodClique carries the replicas.
    grove = plan_graph(
        "g", dgd, ClusterOptions.parse({"multinode": {"orchestrator": "grove"}}), "ns", agent=True
    )
    target = records_props(dgd, grove.rendered)["components"]["decode"]["scaleTarget"]
    assert (target["kind"], target["name"]) == ("PodClique", "g-0-decode")
    assert COMPONENTS_ANNOTATION == "dynamo-infra.io/components"


def test_the_record_keeps_the_live_replicas_of_agent_owned_components(repo: Path) -> None:
    hub = planner_graph(None, scalingAdapter={}).to_manifest()
    record = graph_record(hub, "ns", {}, {"decode": 5}, {"prefill": 3, "decode": 9})
    by_name = {c["name"]: c.get("replicas") for c in record["spec"]["components"]}
    # The adapter wins for the adapted component; the live record's value for the other.
    assert by_name == {"Frontend": None, "prefill": 3, "decode": 5}


class Cluster:
    """A client holding live objects by key; applies are recorded (field manager included)."""

    def __init__(self, *live: Manifest) -> None:
        self.live = {object_key(o): o for o in live}
        self.applied: list[tuple[str | None, Manifest]] = []

    def get(self, obj: Manifest) -> Manifest | None:
        return self.live.get(object_key(obj))

    def apply(self, obj: Manifest, manager: str | None = None, **_: Any) -> Manifest:
        self.applied.append((manager, obj))
        return obj


def test_a_new_agent_owned_workload_starts_from_the_records_replicas() -> None:
    from dynamo_infra.reconcile.inputs import WorkloadInputs
    from dynamo_infra.reconcile.workload import Ownership, apply_objects
    from dynamo_infra.reconcile.workload_calls import live_replicas

    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w-2", "namespace": "ns"},
           "spec": {"replicas": 1}}  # fmt: skip
    live_record = {**stub("nvidia.com/v1beta1", "DynamoGraphDeployment", "ns", "g"),
                   "spec": {"components": [{"name": "decode", "replicas": 3}, {"name": "Frontend"}]}}  # fmt: skip
    cluster = Cluster(live_record)
    source = {"record": stub("nvidia.com/v1beta1", "DynamoGraphDeployment", "ns", "g"), "component": "decode"}
    ins = WorkloadInputs(replicas_external=True, replicas_from=source)
    assert live_replicas(cast(Any, cluster), ins) == 3
    assert (
        live_replicas(cast(Any, cluster), WorkloadInputs(replicas_external=False, replicas_from=source))
        is None
    )
    other = {**source, "component": "Frontend"}
    assert (
        live_replicas(cast(Any, cluster), WorkloadInputs(replicas_external=True, replicas_from=other)) is None
    )
    apply_objects(
        cast(Any, cluster), {object_key(dep): dep}, Ownership(True, initial_replicas=3), lambda _: None
    )
    # Created with the record's replicas, handed off at that count; the graph's manifest is not modified.
    assert [(m, o["spec"]["replicas"]) for m, o in cluster.applied] == [
        (None, 3),
        ("dynamo-infra-replicas-handoff", 3),
    ]
    assert dep["spec"]["replicas"] == 1
    # An existing workload keeps its live replicas: they are left out of the apply.
    cluster = Cluster({**dep, "spec": {"replicas": 5}})
    apply_objects(
        cast(Any, cluster), {object_key(dep): dep}, Ownership(True, initial_replicas=3), lambda _: None
    )
    assert [o["spec"] for _, o in cluster.applied] == [{}]


def test_the_agent_reads_the_annotation_the_records_write() -> None:
    from dynamo_infra.agent.status import components_of, recorded

    dgd = planner_graph()
    plan = plan_graph("g", dgd, namespace="ns", agent=True)
    props = records_props(dgd, plan.rendered, {c.rendered.name: c.replicas for c in plan.components})
    annotations = {COMPONENTS_ANNOTATION: components_annotation(props["components"])}
    record = {"metadata": {"name": "g", "namespace": "ns", "annotations": annotations}}
    assert recorded(record)
    read = components_of(record)
    assert {n: c.replicas for n, c in read.items()} == {
        "Frontend": "graph",
        "prefill": "agent",
        "decode": "agent",
        "Planner": "graph",
    }
    decode = read["decode"]
    assert decode.scale_target is not None and decode.workload.endswith(
        decode.scale_target["metadata"]["name"]
    )
    assert decode.scale_target["metadata"]["namespace"] == "ns" and decode.runtime_namespace
