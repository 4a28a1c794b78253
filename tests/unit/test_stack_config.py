"""StackConfig.from_config: every `dynamo-infra:*` key read in one place; each bad value fails with
the message the program has always failed with, naming its key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.stack_config import StackConfig, StackConfigError
from tests.conftest import REPO

AGG = str(REPO / "examples" / "agg.yaml")
MOCKER = str(REPO / "examples" / "mocker-agg.yaml")


class Config:
    """A `pulumi.Config("dynamo-infra")` of values already parsed from the stack file."""

    def __init__(self, **values: Any) -> None:
        self.values = values

    def get(self, key: str) -> str | None:
        value = self.values.get(key)
        return None if value is None else str(value)

    def get_bool(self, key: str) -> bool | None:
        value = self.values.get(key)
        return None if value is None else bool(value)

    def get_object(self, key: str) -> Any:
        return self.values.get(key)


def read(**values: Any) -> StackConfig:
    return StackConfig.from_config(Config(**{"kubeconfig": "apiVersion: v1", **values}))


def failure(**values: Any) -> str:
    with pytest.raises(StackConfigError) as e:
        StackConfig.from_config(Config(**values))
    return str(e.value)


def test_defaults_and_every_key(tmp_path: Path) -> None:
    plain = read()
    assert (plain.kubeconfig_key, plain.kubeconfig, plain.context) == (
        "dynamo-infra:kubeconfig",
        "apiVersion: v1",
        None,
    )
    assert plain.cluster.namespace == "default" and plain.platform.install_crds == []
    assert plain.graphs == () and plain.autoscalers == {} and not plain.delete_pvcs_on_destroy
    assert "apiVersion: v1" not in repr(plain)
    path = tmp_path / "kubeconfig"
    path.write_text("from a file")
    full = StackConfig.from_config(
        Config(
            kubeconfigPath=str(path),
            context="kind",
            cluster={"namespace": "team", "dra": {"enabled": True}},
            platform={"installCrds": ["keda"]},
            graphs=[AGG, MOCKER],
            autoscalers={"vllm-agg": {"VllmWorker": {"maxReplicas": 3}}},
            deletePvcsOnDestroy=True,
        )
    )
    assert (full.kubeconfig_key, full.kubeconfig, full.context) == (
        "dynamo-infra:kubeconfigPath",
        "from a file",
        "kind",
    )
    assert full.cluster.namespace == "team" and full.platform.install_crds == ["keda"]
    assert full.platform.creates_device_class(full.cluster)
    assert [g.name for g in full.graphs] == ["vllm-agg", "mocker-agg"]
    assert full.autoscalers == {"vllm-agg": {"VllmWorker": Autoscaler.parse({"maxReplicas": 3})}}
    assert full.delete_pvcs_on_destroy
    # The model claim of mocker-agg keeps the namespace on destroy.
    assert full.keeps_namespace() and not read(graphs=[AGG]).keeps_namespace()
    # What the graphs' namespace needs from the platform: the EPP account, the MPI key copy.
    assert not full.has_epp() and not full.has_multinode()
    examples = REPO / "examples"
    assert read(graphs=[str(examples / "agg-epp.yaml")]).has_epp()
    lws = {"lws": {"enabled": True}}
    assert read(graphs=[str(examples / "disagg-multinode.yaml")], cluster=lws).has_multinode()
    # The secret content wins over the path.
    assert read(kubeconfigPath=str(path)).kubeconfig == "apiVersion: v1"


def test_kubeconfig_errors(tmp_path: Path) -> None:
    assert failure() == "set dynamo-infra:kubeconfig (secret content) or dynamo-infra:kubeconfigPath"
    missing = tmp_path / "gone"
    assert (
        failure(kubeconfigPath=str(missing))
        == f"dynamo-infra:kubeconfigPath: {missing} does not exist (is the cluster up?)"
    )


def test_cluster_errors_name_their_key() -> None:
    assert failure(cluster={"namespace": "Bad_NS"}) == (
        "dynamo-infra:cluster.namespace: must match ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ (got 'Bad_NS')"
    )
    assert failure(cluster={"await": {"mode": "later"}, "dra": 1}) == (
        "2 problems:\n"
        "  dynamo-infra:cluster.await.mode: must be one of 'wait' or 'skip' (got 'later')\n"
        "  dynamo-infra:cluster.dra: must be a mapping (got integer)"
    )


def test_platform_errors_name_their_key() -> None:
    assert failure(platform={"installCrds": ["grove", "gateway"]}) == (
        "dynamo-infra:platform.installCrds[1]: must be one of 'grove', 'lws', 'keda', 'istio' or 'inference' "
        "(got 'gateway')"
    )
    assert failure(platform={"deviceClass": True}) == (
        "dynamo-infra:platform.deviceClass: is true but dynamo-infra:cluster dra.enabled is false"
    )


def test_graph_errors_name_their_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    assert (
        failure(kubeconfig="k", graphs=[str(missing)])
        == f"{missing}: cannot read file: No such file or directory"
    )
    two = tmp_path / "two.yaml"
    two.write_text(Path(AGG).read_text() + "---\n" + Path(MOCKER).read_text())
    assert (
        failure(kubeconfig="k", graphs=[AGG, str(two)])
        == f"{two}: expected one DynamoGraphDeployment, found 2"
    )


def test_autoscaler_errors_name_their_key() -> None:
    assert failure(kubeconfig="k", graphs=[AGG], autoscalers={"vllm-agg": {"W": {"minReplicas": 0}}}) == (
        "dynamo-infra:autoscalers.vllm-agg.W.maxReplicas: required field is missing"
    )
    assert failure(kubeconfig="k", graphs=[AGG], autoscalers={"b": {"W": {"maxReplicas": 2}}, "a": {}}) == (
        "dynamo-infra:autoscalers: no graph named b in dynamo-infra:graphs"
    )
    assert failure(
        kubeconfig="k", autoscalers={"b": {"W": {"maxReplicas": 2}}, "a": {"W": {"maxReplicas": 2}}}
    ) == ("dynamo-infra:autoscalers: no graph named a, b in dynamo-infra:graphs")
