"""Component wiring under Pulumi mocks: which dynamic resources a graph creates, with which inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest

from tests.unit.conftest import Mocks


@pulumi.runtime.test
def test_graph_creates_one_workload_per_component_and_shared_objects(mocks: Mocks, repo: Path) -> Any:
    from components import DynamoGraphDeployment

    graph = DynamoGraphDeployment("g", repo / "examples" / "agg.yaml", kubeconfig="kc", namespace="ns")

    def check(state: str) -> None:
        workloads = {r.name: r for r in mocks.resources if "objects" in r.inputs}
        assert sorted(workloads) == ["g-frontend-workload", "g-shared", "g-vllmworker-workload"]
        worker = workloads["g-vllmworker-workload"].inputs
        kinds = sorted(o["kind"] for o in worker["objects"].values())
        assert kinds == ["Deployment", "Service"]
        assert all(k.split("/")[-2] == "ns" for k in worker["objects"])
        assert worker["replicasExternal"] is False
        shared_kinds = sorted(o["kind"] for o in workloads["g-shared"].inputs["objects"].values())
        assert shared_kinds == ["Role", "RoleBinding", "ServiceAccount"]
        assert state == "successful"

    return graph.state.apply(check)


@pulumi.runtime.test
def test_graph_inputs_as_args_or_keywords_not_both(mocks: Mocks, repo: Path) -> Any:
    from components import DynamoGraphDeployment, DynamoGraphDeploymentArgs

    args = DynamoGraphDeploymentArgs(repo / "examples" / "agg.yaml", kubeconfig="kc", namespace="ns")
    graph = DynamoGraphDeployment("g", args)
    with pytest.raises(TypeError, match="not both"):
        DynamoGraphDeployment("h", args, namespace="other")
    with pytest.raises(TypeError, match="kubeconfig is required"):
        DynamoGraphDeployment("i", repo / "examples" / "agg.yaml")

    def check(state: str) -> None:
        assert {"g-frontend-workload", "g-shared"} <= {r.name for r in mocks.resources}
        assert state == "successful"

    return graph.state.apply(check)
