"""render.partial: what the operator creates for a graph it fails on, step by step."""

from __future__ import annotations

from pathlib import Path

from dynamo_infra.config import ClusterOptions
from tests.conftest import load_corpus
from tests.partial import operator_partial

DRA = {"dra": {"enabled": True}}
GROVE = {**DRA, "multinode": {"orchestrator": "grove"}}


def kinds(corpus: Path, graph: str, options: dict[str, object]) -> tuple[list[str], dict[str, str]]:
    (dgd,) = load_corpus(corpus / "graphs" / graph).graphs
    partial = operator_partial(dgd, ClusterOptions.parse(options), "ns")
    failures = {name: str(e) for name, e in partial.failures.items()}
    return [f"{o['kind']}/{o['metadata']['name']}" for o in partial.objects], failures


def test_a_multinode_graph_without_orchestrator_stops_after_the_graph_objects(corpus: Path) -> None:
    objects, failures = kinds(corpus, "v1alpha1/vllm__disagg-multinode.yaml", DRA)
    assert objects == [
        "ServiceAccount/vllm-disagg-k8s-service-discovery",
        "Role/vllm-disagg-k8s-service-discovery-role",
        "RoleBinding/vllm-disagg-k8s-service-discovery-binding",
        "ConfigMap/vllm-disagg-wait-leader-script",
    ]
    assert failures == {}


def test_a_failing_component_leaves_the_others_and_its_dcd(corpus: Path) -> None:
    objects, failures = kinds(corpus, "v1alpha1/trtllm__agg_failover_eagle.yaml", DRA)
    assert [o.split("/")[0] for o in objects] == [
        "ServiceAccount", "Role", "RoleBinding", "ResourceClaimTemplate",
        "DynamoComponentDeployment", "Deployment", "Service", "DynamoComponentDeployment",
    ]  # fmt: skip
    assert list(failures) == ["TRTLLMWorker"]
    assert "failover is currently supported only for vLLM (detected: trtllm)" in failures["TRTLLMWorker"]


def test_grove_is_all_or_nothing(corpus: Path) -> None:
    objects, failures = kinds(corpus, "v1alpha1/trtllm__agg_failover_eagle.yaml", GROVE)
    assert [o.split("/")[0] for o in objects] == [
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ResourceClaimTemplate",
    ]
    assert list(failures) == ["trtllm-agg-failover-eagle"]
    objects, failures = kinds(corpus, "v1alpha1/vllm__agg.yaml", GROVE)
    assert "PodCliqueSet/vllm-agg" in objects and failures == {}


def test_checkpointing_off_stops_before_the_components(corpus: Path) -> None:
    objects, _ = kinds(corpus, "v1beta1/vllm__agg_snapshot_tp8.yaml", DRA)
    assert [o.split("/")[0] for o in objects] == ["ServiceAccount", "Role", "RoleBinding"]
