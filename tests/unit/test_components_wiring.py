"""Component wiring under Pulumi mocks: which dynamic resources a graph creates, with which inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest

from tests.unit.conftest import Mocks


@pulumi.runtime.test
def test_graph_creates_one_workload_per_component_and_shared_objects(mocks: Mocks, repo: Path) -> Any:
    from dynamo_infra.components import DynamoGraphDeployment

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
    from dynamo_infra.components import DynamoGraphDeployment, DynamoGraphDeploymentArgs

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


@pulumi.runtime.test
def test_every_resource_takes_its_args_or_keywords_not_both(mocks: Mocks, repo: Path) -> Any:
    from dynamo_infra.api import load_yaml
    from dynamo_infra.api.autoscaling import Autoscaler
    from dynamo_infra.components import (
        Checkpoint,
        CheckpointArgs,
        DynamoComponentDeployment,
        DynamoComponentDeploymentArgs,
        PersistentVolumeClaim,
        PersistentVolumeClaimArgs,
        ScalingAdapter,
        ScalingAdapterArgs,
    )
    from dynamo_infra.config import ClusterOptions
    from dynamo_infra.render import render_graph
    from tests.unit.test_checkpoint import rendered_checkpoint

    options = ClusterOptions(namespace="ns")
    rendered = render_graph(load_yaml(repo / "examples" / "agg.yaml").graphs[0], options, "ns")
    worker = rendered.components["VllmWorker"]
    checkpoint = rendered_checkpoint()
    autoscaler = Autoscaler.parse({"kind": "hpa", "maxReplicas": 3})
    made = [
        DynamoComponentDeployment(
            "dcd", DynamoComponentDeploymentArgs(worker, rendered, kubeconfig="kc", options=options)
        ),
        PersistentVolumeClaim(
            "pvc",
            PersistentVolumeClaimArgs(
                kubeconfig="kc", namespace="ns", claim_name="c", delete_on_destroy=True
            ),
        ),
        Checkpoint("ck", CheckpointArgs(checkpoint, kubeconfig="kc", wait=False)),
        ScalingAdapter("sa", ScalingAdapterArgs(rendered, worker, autoscaler, kubeconfig="kc")),
    ]
    with pytest.raises(TypeError, match="DynamoComponentDeploymentArgs or keyword arguments, not both"):
        DynamoComponentDeployment(
            "x", DynamoComponentDeploymentArgs(worker, rendered, "kc", options), context="c"
        )
    with pytest.raises(TypeError, match=r"PersistentVolumeClaim: .*claim_name"):
        PersistentVolumeClaim("y", kubeconfig="kc", namespace="ns")
    # Keywords build the same inputs as the Args.
    pvc2 = PersistentVolumeClaim(
        "pvc2", kubeconfig="kc", namespace="ns", claim_name="c", delete_on_destroy=True
    )

    def check(_: Any) -> None:
        by_name = {r.name: r.inputs for r in mocks.resources}
        assert by_name["pvc"]["deleteOnDestroy"] is True and by_name["pvc"]["name"] == "c"
        assert {k: v for k, v in by_name["pvc"].items() if k != "kubeconfig"} == {
            k: v for k, v in by_name["pvc2"].items() if k != "kubeconfig"
        }
        assert by_name["ck"]["wait"] is False
        assert by_name["ck"]["job"]["metadata"]["namespace"] == checkpoint["metadata"]["namespace"]
        assert sorted(o["kind"] for o in by_name["dcd-workload"]["objects"].values()) == [
            "Deployment",
            "Service",
        ]
        assert [o["kind"] for o in by_name["sa-autoscaler"]["objects"].values()] == [
            "HorizontalPodAutoscaler"
        ]

    # The component resources' children (their dynamic workloads) are registered by then too.
    # pvc2 is awaited too: the mocks record a resource only once its registration has run.
    children = [made[0].workload.urn, made[3].workload.urn]  # type: ignore[attr-defined]
    return pulumi.Output.all(*(r.urn for r in [*made, pvc2]), *children).apply(check)


def test_a_graphs_depends_on_goes_to_its_writing_children(mocks: Mocks) -> None:
    from dynamo_infra.components.graph import split_depends_on

    first, second = pulumi.CustomResource("t:i:R", "a"), pulumi.CustomResource("t:i:R", "b")
    own, required = split_depends_on(pulumi.ResourceOptions(depends_on=[first, second], protect=True))
    assert required == [first, second]
    assert own is not None and own.depends_on is None and own.protect is True
    assert split_depends_on(pulumi.ResourceOptions(depends_on=first))[1] == [first]
    assert split_depends_on(None) == (None, [])
    # Given as an Output, it stays on the graph.
    kept = pulumi.ResourceOptions(depends_on=pulumi.Output.from_input([first]))
    assert split_depends_on(kept) == (kept, [])


@pulumi.runtime.test
def test_a_component_is_its_own_dynamic_resource_aliased_to_its_former_place(mocks: Mocks, repo: Path) -> Any:
    from dynamo_infra.components import DynamoGraphDeployment

    graph = DynamoGraphDeployment("g", repo / "examples" / "agg.yaml", kubeconfig="kc", namespace="ns")
    worker = graph.components["VllmWorker"]
    assert isinstance(worker, pulumi.CustomResource) and worker.workload is worker
    stack = f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::"

    def check(urns: list[str]) -> None:
        urn, alias, graph_urn = urns
        assert (
            urn
            == f"{stack}dynamo-infra:index:DynamoGraphDeployment$pulumi-python:dynamic:Resource::g-vllmworker-workload"
        )
        # The former URN, built on the graph's own (whatever the engine made of the graph's parents).
        chain = graph_urn.rsplit("::", 1)[0]
        assert alias == (
            f"{chain}$dynamo-infra:index:DynamoComponentDeployment$pulumi-python:dynamic:Resource::g-vllmworker-workload"
        )
        types = {r.name: r.typ for r in mocks.resources}
        assert "dynamo-infra:index:DynamoComponentDeployment" not in types.values()
        assert types["g-vllmworker-workload"] == "pulumi-python:dynamic:Resource"

    aliases = worker._aliases  # the SDK's collapsed aliases
    assert len(aliases) == 1
    return pulumi.Output.all(worker.urn, aliases[0], graph.urn, graph.state).apply(lambda v: check(v[:3]))
