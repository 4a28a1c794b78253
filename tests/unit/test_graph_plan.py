"""plan_graph without Pulumi: which child resources a DynamoGraphDeployment declares, with which inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dynamo_infra.api import DynamoValidationError
from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.components import plan_graph
from dynamo_infra.config import ClusterOptions
from tests.unit.test_render_multinode import GROVE, graph, worker

CHECKPOINTS = {"checkpoint": {"enabled": True, "timeoutSeconds": 120}}


def checkpointed(policy: str = "WaitForCheckpoint") -> dict[str, Any]:
    return worker(nodes=1, experimental={"checkpoint": {"enabled": True, "startupPolicy": policy}})


def test_a_graph_plans_its_claims_shared_objects_and_one_resource_per_component(repo: Path) -> None:
    plan = plan_graph("g", repo / "examples" / "mocker-agg.yaml", namespace="ns", delete_pvcs_on_destroy=True)
    (claim,) = plan.claims
    assert claim.name == f"g-pvc-{claim.claim_name}" and claim.manifest is not None
    assert claim.delete_on_destroy and claim.await_policy == {"mode": "wait", "timeoutSeconds": 600}
    assert plan.shared is not None and plan.shared.name == "g-shared"
    assert plan.shared.await_policy["mode"] == "skip"
    assert sorted(o["kind"] for o in plan.shared.objects) == ["Role", "RoleBinding", "ServiceAccount"]
    assert [c.name for c in plan.components] == ["g-frontend", "g-mockerworker"]
    assert all(not c.checkpoints and not c.rerender_objects for c in plan.components)
    assert plan.checkpoints == () and plan.podcliqueset is None and plan.scaling == ()
    assert plan.rendered.namespace == "ns"


def test_a_checkpointed_component_is_planned_after_its_checkpoint() -> None:
    options = ClusterOptions.parse({**CHECKPOINTS, "await": {"mode": "wait"}})
    plan = plan_graph("g", graph(checkpointed()), options, "ns")
    (ckpt,) = plan.checkpoints
    assert (ckpt.name, ckpt.component, ckpt.wait, ckpt.timeout_seconds) == ("g-checkpoint-w", "w", True, 120)
    (component,) = plan.components
    assert component.checkpoints == ("w",) and component.rerender_objects
    # Immediate components start at once; nothing waits where no pods run.
    assert not plan_graph("g", graph(checkpointed("Immediate")), options, "ns").checkpoints[0].wait
    skip = ClusterOptions.parse({**CHECKPOINTS, "await": {"mode": "skip"}})
    assert not plan_graph("g", graph(checkpointed()), skip, "ns").checkpoints[0].wait
    ready = plan.rendered_with({"w": True})
    assert plan.rendered.components["w"].waiting_for_checkpoint
    assert not ready.components["w"].waiting_for_checkpoint


def test_grove_plans_one_podcliqueset_rendered_with_every_checkpoint() -> None:
    options = ClusterOptions.parse({**CHECKPOINTS, **GROVE})
    plan = plan_graph("g", graph(checkpointed(), worker("x")), options, "ns")
    assert plan.podcliqueset is not None and plan.podcliqueset.name == "g-podcliqueset"
    assert plan.podcliqueset.checkpoints == ("w",) and plan.podcliqueset.pull_secret_discovery
    by_name = {c.rendered.name: c for c in plan.components}
    # The PodCliqueSet holds the pods: the component's Services are not rendered again.
    assert by_name["w"].checkpoints == ("w",) and not by_name["w"].rerender_objects
    assert by_name["x"].checkpoints == ()


def test_autoscalers_are_planned_for_adapted_components_only() -> None:
    hpa = Autoscaler.parse({"maxReplicas": 4})
    plan = plan_graph("g", graph(worker("W", nodes=1, scalingAdapter={})), autoscalers={"W": hpa})
    (scaling,) = plan.scaling
    assert (scaling.name, scaling.component, scaling.autoscaler) == ("g-w-scaling", "W", hpa)
    with pytest.raises(DynamoValidationError) as e:
        plan_graph("g", graph(worker("W", nodes=1)), autoscalers={"W": hpa, "X": hpa})
    assert str(e.value) == (
        "2 problems:\n"
        "  autoscalers.W: the component must set scalingAdapter so the autoscaler owns its replicas\n"
        "  autoscalers.X: graph g has no component 'X'"
    )


def opted_out(name: str) -> dict[str, Any]:
    """A Grove worker whose pods opt out of image pull secret discovery."""
    c = worker(name, nodes=1)
    c["podTemplate"]["metadata"] = {"annotations": {"nvidia.com/disable-image-pull-secret-discovery": "true"}}
    return c


@pytest.mark.parametrize(
    ("discovery", "components", "expected"),
    [
        (True, ("a", "b"), True),
        (False, ("a", "b"), False),  # the cluster option off: no discovery for the PodCliqueSet either
        (True, ("a", "-b"), True),  # one clique opts out (its annotation), the other's pods get secrets
        (True, ("-a", "-b"), False),  # every clique opts out: nothing to discover
    ],
)
def test_the_podcliqueset_discovers_pull_secrets_as_its_components_do(
    discovery: bool, components: tuple[str, ...], expected: bool
) -> None:
    options = ClusterOptions.parse({**GROVE, "imagePullSecretDiscovery": discovery})
    members = [opted_out(c[1:]) if c.startswith("-") else worker(c, nodes=1) for c in components]
    plan = plan_graph("g", graph(*members), options, "ns")
    assert plan.podcliqueset is not None
    assert plan.podcliqueset.pull_secret_discovery is expected
    assert [c.rendered.pull_secret_discovery for c in plan.components] == [
        discovery and not c.startswith("-") for c in components
    ]
