"""Where admission runs: the loader applies the webhook's rules that need no cluster, `plan_graph` all of
them with the stack's cluster options (before anything is written), warnings are kept and logged, and
`admission=False` loads and plans what the webhook would deny (tooling, parity tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from dynamo_infra.api import DynamoValidationError, load_yaml
from dynamo_infra.api.admission import AdmissionDenied, OperatorFeatures
from dynamo_infra.components import plan_graph
from dynamo_infra.config import ClusterOptions
from dynamo_infra.reconcile.admission_provider import features_props
from dynamo_infra.render.checks.admission import review_graph
from dynamo_infra.stack_config import StackConfig, StackConfigError
from tests.conftest import REPO
from tests.unit.conftest import Mocks
from tests.unit.test_render_multinode import GROVE, IMAGE, graph, worker
from tests.unit.test_stack_config import Config

RUNTIME_VERSION = "Required value: is required when the specified main container image has no parseable semantic-version tag"


def alpha_graph(name: str, image: str, **service: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": name},
        "spec": {
            "services": {
                "Frontend": {
                    "componentType": "frontend",
                    "extraPodSpec": {"mainContainer": {"image": image}},
                },
                **service,
            }
        },
    }


def write(tmp_path: Path, *docs: dict[str, Any]) -> Path:
    path = tmp_path / "graphs.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


@pytest.mark.parametrize("stack", sorted((REPO / "stacks").glob("Pulumi.*.yaml")), ids=lambda p: p.name)
def test_every_example_stack_graph_is_admitted_on_its_cluster(stack: Path) -> None:
    config = yaml.safe_load(stack.read_text())["config"]
    options = ClusterOptions.from_config(config.get("dynamo-infra:cluster") or {})
    for source in config["dynamo-infra:graphs"]:
        loaded = load_yaml(REPO / source)
        assert loaded.warnings == [], source
        for dgd in loaded.graphs:
            review = review_graph(dgd, options)
            assert review.allowed and not review.warnings, (source, review)


def test_the_loader_denies_what_the_webhook_denies(tmp_path: Path) -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    path = write(
        tmp_path, alpha_graph("ok", IMAGE), alpha_graph("placeholder", "registry/vllm:my-tag"), config_map
    )
    with pytest.raises(AdmissionDenied) as denied:
        load_yaml(path)
    assert isinstance(denied.value, DynamoValidationError)
    assert (
        str(denied.value)
        == f"{path}: documents[1].spec.services.Frontend.runtimeVersionOverride: {RUNTIME_VERSION}"
    )
    # Deliberately without admission: everything loads (the other documents are kept as they are).
    loaded = load_yaml(path, admission=False)
    assert [g.name for g in loaded.graphs] == ["ok", "placeholder"] and loaded.others == [config_map]


def test_a_schema_problem_is_reported_with_the_denials(tmp_path: Path) -> None:
    bad = alpha_graph("bad", IMAGE)
    bad["spec"]["services"]["Frontend"]["replicas"] = -1
    path = write(tmp_path, bad, alpha_graph("placeholder", "registry/vllm:my-tag"))
    with pytest.raises(DynamoValidationError) as e:
        load_yaml(path)
    assert not isinstance(e.value, AdmissionDenied)
    assert [p.path for p in e.value.problems] == [
        "documents[0].spec.services.Frontend.replicas",
        "documents[1].spec.services.Frontend.runtimeVersionOverride",
    ]


def test_warnings_are_kept_with_what_was_loaded(tmp_path: Path) -> None:
    legacy = {
        "componentType": "worker",
        "dynamoNamespace": "old",
        "extraPodSpec": {"mainContainer": {"image": IMAGE}},
    }
    loaded = load_yaml(write(tmp_path, alpha_graph("g", IMAGE, W=legacy)))
    assert loaded.warnings == [
        'spec.services.W.dynamoNamespace is deprecated and ignored. Value "old" will be replaced with "-g". '
        "Remove this field from your configuration"
    ]


def test_plans_apply_the_rules_of_the_cluster() -> None:
    checkpointed = graph(worker(nodes=1, experimental={"checkpoint": {"enabled": True}}))
    with pytest.raises(AdmissionDenied) as denied:
        plan_graph("g", checkpointed, ClusterOptions(), "ns")
    assert [str(p) for p in denied.value.problems] == [
        "spec.components[w].experimental.checkpoint: Forbidden: checkpoint functionality is disabled in "
        "the operator configuration"
    ]
    enabled = ClusterOptions.parse({"checkpoint": {"enabled": True}})
    assert plan_graph("g", checkpointed, enabled, "ns").checkpoints
    # Admission off: the operator's graph controller stops at the checkpoint step all the same.
    with pytest.raises(DynamoValidationError) as stopped:
        plan_graph("g", checkpointed, ClusterOptions(), "ns", admission=False)
    assert not isinstance(stopped.value, AdmissionDenied)
    assert "checkpoint functionality is disabled" in str(stopped.value)


def test_plans_check_the_grove_pod_name_budget() -> None:
    long = graph(worker("averyveryverylongworkername"))
    assert plan_graph("a-graph-name-that-is-long", long, ClusterOptions.parse(GROVE), "ns", admission=False)
    with pytest.raises(AdmissionDenied) as denied:
        plan_graph("a-graph-name-that-is-long", long, ClusterOptions.parse(GROVE), "ns")
    (problem,) = denied.value.problems
    assert problem.path == "spec.components[averyveryverylongworkername].name"
    assert "exceeds the 45-character pod-name limit" in problem.message


def test_epp_components_need_the_inference_pool_api(repo: Path) -> None:
    epp = repo / "examples" / "agg-epp.yaml"
    assert plan_graph("g", epp, ClusterOptions(), "ns").components
    with pytest.raises(AdmissionDenied) as denied:
        plan_graph("g", epp, ClusterOptions.parse({"inferencePool": {"enabled": False}}), "ns")
    (problem,) = denied.value.problems
    assert problem.path == "spec.components[epp].type"
    assert problem.message.startswith("Forbidden: cannot deploy EPP component: InferencePool API group")


def test_a_cluster_without_the_webhook(tmp_path: Path) -> None:
    """`admission.enabled: false` (the operator's chart with its webhook off): graphs load, plan and
    deploy as its controllers render them, with no admission resource."""
    placeholder = worker(nodes=1)
    placeholder["podTemplate"]["spec"]["containers"][0]["image"] = "registry/vllm:my-tag"
    denied = graph(placeholder)
    with pytest.raises(AdmissionDenied):
        plan_graph("g", denied, ClusterOptions(), "ns")
    off = ClusterOptions.parse({"admission": {"enabled": False}})
    plan = plan_graph("g", denied, off, "ns")
    assert not plan.admitted and plan.components
    assert plan_graph("g", graph(worker(nodes=1)), ClusterOptions(), "ns").admitted
    path = write(tmp_path, alpha_graph("placeholder", "registry/vllm:my-tag"))
    config = Config(kubeconfig="apiVersion: v1", graphs=[str(path)])
    with pytest.raises(StackConfigError, match="runtimeVersionOverride: Required value"):
        StackConfig.from_config(config)
    config.values["cluster"] = {"admission": {"enabled": False}}
    assert [g.name for g in StackConfig.from_config(config).graphs] == ["placeholder"]


@pulumi.runtime.test
def test_the_component_keeps_its_graph_for_the_next_update_check(mocks: Mocks, repo: Path) -> None:
    from dynamo_infra.components import DynamoGraphDeployment

    agg = repo / "examples" / "agg.yaml"
    on = DynamoGraphDeployment("on", agg, kubeconfig="kc", namespace="ns")
    off_options = ClusterOptions.parse({"admission": {"enabled": False}})
    off = DynamoGraphDeployment("off", agg, kubeconfig="kc", namespace="ns", options=off_options)
    # Discovery through etcd: the graph has no shared objects, so its admission is a resource of its own.
    etcd_options = ClusterOptions.parse({"discovery": {"backend": "etcd"}})
    etcd = DynamoGraphDeployment("etcd", agg, kubeconfig="kc", namespace="ns", options=etcd_options)
    assert on.admission is on.shared and on.shared is not None
    assert off.admission is None and off.shared is not None
    assert etcd.shared is None and etcd.admission is not None

    def check(_: Any) -> None:
        inputs = {r.name: r.inputs for r in mocks.resources}
        assert [n for n in inputs if n.endswith("-admission")] == ["etcd-admission"]
        assert inputs["etcd-admission"]["graph"]["metadata"]["name"] == "vllm-agg"
        assert inputs["etcd-admission"]["namespace"] == "ns"
        kept = inputs["on-shared"]["admission"]
        assert kept["graph"]["metadata"]["name"] == "vllm-agg"
        assert kept["features"] == features_props(ClusterOptions().operator_features)
        assert "admission" not in inputs["off-shared"]
        assert not [n for n, i in inputs.items() if "admission" in i and n != "on-shared"]

    return pulumi.Output.all(on.state, off.state, etcd.state).apply(check)


def test_operator_features_follow_the_cluster_options() -> None:
    assert ClusterOptions().operator_features == OperatorFeatures()
    options = ClusterOptions.parse(
        {**GROVE, "checkpoint": {"enabled": True}, "inferencePool": {"enabled": False}}
    )
    assert options.operator_features == OperatorFeatures(grove=True, checkpoint=True, inference_pool=False)
    assert (
        ClusterOptions.parse(
            {"grove": {"enabled": False}, "multinode": {"orchestrator": "lws"}}
        ).operator_features
        == OperatorFeatures()
    )


def test_plan_warnings_name_the_namespace_the_graph_goes_to(tmp_path: Path) -> None:
    legacy = {
        "componentType": "worker",
        "dynamoNamespace": "old",
        "extraPodSpec": {"mainContainer": {"image": IMAGE}},
    }
    plan = plan_graph("g", write(tmp_path, alpha_graph("g", IMAGE, W=legacy)), ClusterOptions(), "team")
    assert plan.warnings == (
        'spec.services.W.dynamoNamespace is deprecated and ignored. Value "old" will be replaced with "team-g". '
        "Remove this field from your configuration",
    )


@pulumi.runtime.test
def test_the_component_logs_the_warnings(
    mocks: Mocks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dynamo_infra.components import DynamoGraphDeployment

    logged: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, resource=None, **_: logged.append(message))
    legacy = {
        "componentType": "worker",
        "autoscaling": {"enabled": True},
        "extraPodSpec": {"mainContainer": {"image": IMAGE}},
    }
    DynamoGraphDeployment(
        "g", write(tmp_path, alpha_graph("g", IMAGE, W=legacy)), kubeconfig="kc", namespace="ns"
    )
    assert logged == [
        "admission: spec.services.W.autoscaling is deprecated and ignored. Use DynamoGraphDeploymentScalingAdapter "
        "with HPA, KEDA, or Planner for autoscaling instead. See docs/kubernetes/autoscaling.md"
    ]


@pytest.mark.parametrize(
    ("component", "cluster", "refusal"),
    [
        # The operator's graph controller: a multinode component and neither Grove nor LWS.
        (worker(nodes=2), {}, "spec.components[w].multinode: no multinode orchestrator available"),
        # The webhook with the cluster's options: checkpointing off in the operator's configuration.
        (
            worker(nodes=1, experimental={"checkpoint": {"enabled": True}}),
            {},
            "spec.components[w].experimental.checkpoint: Forbidden: checkpoint functionality is disabled",
        ),
        # The webhook with Grove on: its pod-name budget.
        (worker("averyveryverylongworkername"), GROVE, "exceeds the 45-character pod-name limit"),
    ],
    ids=["controller", "webhook", "grove-budget"],
)
def test_the_stack_refuses_at_load_what_its_cluster_would_refuse(
    tmp_path: Path, component: dict[str, Any], cluster: dict[str, Any], refusal: str
) -> None:
    """Before the program declares the Platform (which would write the namespace and CRDs), not when the
    graph is planned after it."""
    dgd = graph(component).to_manifest()
    dgd["metadata"]["name"] = "a-graph-name-that-is-long"
    path = write(tmp_path, dgd)
    config = Config(kubeconfig="apiVersion: v1", graphs=[str(path)], cluster=cluster)
    with pytest.raises(StackConfigError) as refused:
        StackConfig.from_config(config)
    assert refusal in str(refused.value) and str(path) in str(refused.value)
    # What the cluster can run loads.
    config.values["cluster"] = {"lws": {"enabled": True}, "checkpoint": {"enabled": True}}
    assert [g.name for g in StackConfig.from_config(config).graphs] == ["a-graph-name-that-is-long"]
