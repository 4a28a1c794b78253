"""Graphs whose components need what the Dynamo operator served (a planner in its kubernetes
environment) are deployed with a warning saying what will not work, unless the stack runs the
dynamo-infra agent; they render as the operator would either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest

from dynamo_infra.api import load_yaml
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph
from dynamo_infra.render.checks.preflight import unmet_needs
from dynamo_infra.render.components.planner import planner_environment
from tests.conftest import load_corpus
from tests.unit.conftest import Mocks

# The Dynamo runtime release images are tagged with (the parity pin's).
RUNTIME_VERSION = "1.4.0"
# What the warning says, whatever the planner's environment.
NEEDS = (
    "reads DynamoGraphDeployment '{graph}' and its Ready status, and scales through "
    "DynamoGraphDeploymentScalingAdapters or a patch of the DGD. Without the dynamo-infra agent, the "
    "stack writes that DGD and its status only on `pulumi up` and `pulumi refresh` (where the graph's "
    "records cannot be written, output `recorded` says why, and the planner crashes at start: "
    "DynamoGraphDeploymentNotFoundError), and nothing carries the planner's replica changes to the "
    "workloads: it never scales. Set `dynamo-infra:agent` ({{image: <the agent image, built from this "
    "repository's Dockerfile>}}) to run the agent, which does; or run the planner in its virtual "
    """environment (--config '{{"environment": "virtual", "model_name": ...}}')"""
)
VIRTUAL_PLANNER = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: virt
spec:
  components:
    - name: Planner
      type: planner
      podTemplate:
        spec:
          containers:
            - name: main
              image: nvcr.io/nvidia/ai-dynamo/dynamo-planner:1.4.0
              command: [python3, -m, dynamo.planner]
              args: [--config, '{"environment": "virtual", "model_name": "Qwen/Qwen3-0.6B"}']
"""


@pytest.mark.parametrize(
    ("command", "environment"),
    [
        (["python3", "-m", "planner_sla", "--environment=kubernetes", "--backend=vllm"], "kubernetes"),
        (["python3", "-m", "planner_sla", "--environment", "virtual"], "virtual"),
        (["python3", "-m", "dynamo.planner", "--config", '{"environment": "virtual"}'], "virtual"),
        (["python3", "-m", "dynamo.planner", '--config={"environment": "global-planner"}'], "global-planner"),
        (["python3", "-m", "dynamo.planner", "--config", '{"backend": "vllm"}'], "kubernetes"),
        (["python3", "-m", "dynamo.planner", "--config", "/etc/planner/config.yaml"], None),
        (["python3", "-m", "dynamo.planner"], "kubernetes"),
        (["/bin/sh", "-c", """python3 -m dynamo.planner --config '{"environment": "virtual"}'"""], "virtual"),
        (["bash", "-ec", "cd /w && exec python3 -m planner_sla --environment=virtual"], "virtual"),
        (["bash", "--norc", "-c", "python3 -m planner_sla --environment=virtual"], "virtual"),
        (["/bin/sh", "-c"], "kubernetes"),
    ],
)
def test_planner_environment_from_its_command_line(command: list[str], environment: str | None) -> None:
    assert planner_environment(command) == environment


def test_corpus_planner_graphs_are_named_where_the_user_wrote_them(corpus: Path) -> None:
    found: dict[str, list[str]] = {}
    for path in sorted((corpus / "graphs").glob("v1*/*.yaml")):
        for dgd in load_corpus(path).graphs:
            found |= {f"{path.parent.name}/{path.name}:{dgd.name}": [str(p) for p in unmet_needs(dgd)]}
    refused = {k: v for k, v in found.items() if v}
    expected = {
        "v1alpha1/trtllm__disagg_planner.yaml:trtllm-disagg-planner": "spec.services.Planner",
        "v1alpha1/vllm__disagg_planner.yaml:vllm-disagg-planner": "spec.services.Planner",
        "v1beta1/vllm__disagg_planner.yaml:vllm-disagg-planner": "spec.components[Planner]",
        "v1alpha1/vllm__hplanner-gpu-budget.yaml:gp-prefill": "spec.services.Planner",
        "v1alpha1/vllm__hplanner-gpu-budget.yaml:gp-decode": "spec.services.Planner",
    }
    assert {k: [p.split(":")[0] for p in v] for k, v in refused.items()} == {
        k: [v] for k, v in expected.items()
    }
    (v1beta1,) = refused["v1beta1/vllm__disagg_planner.yaml:vllm-disagg-planner"]
    assert v1beta1 == "spec.components[Planner]: the Dynamo Planner (environment kubernetes) " + NEEDS.format(
        graph="vllm-disagg-planner"
    )
    (global_planner,) = refused["v1alpha1/vllm__hplanner-gpu-budget.yaml:gp-prefill"]
    assert "(environment global-planner) reads DynamoGraphDeployment 'gp-prefill'" in global_planner


def test_a_planner_config_file_is_taken_as_the_default(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        VIRTUAL_PLANNER.replace(
            """'{"environment": "virtual", "model_name": "Qwen/Qwen3-0.6B"}'""", "/etc/p.yaml"
        )
    )
    (problem,) = unmet_needs(load_yaml(path).graphs[0])
    assert str(problem).startswith(
        "spec.components[Planner]: the Dynamo Planner (its --config file is not visible here: environment "
        "kubernetes by default) reads DynamoGraphDeployment 'virt'"
    )


def test_a_virtual_planner_is_deployable(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(VIRTUAL_PLANNER)
    assert unmet_needs(load_yaml(path).graphs[0]) == []


def test_planner_graphs_render(corpus: Path) -> None:
    (dgd,) = load_corpus(corpus / "graphs" / "v1alpha1" / "vllm__disagg_planner.yaml").graphs
    assert "Planner" in render_graph(dgd, ClusterOptions(), "ns").components


@pulumi.runtime.test
def test_the_component_warns_about_a_kubernetes_planner_without_the_agent(
    mocks: Mocks, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:
    from dynamo_infra.components import DynamoGraphDeployment

    # The corpus graph with its image version filled in, as a user deploys it (admission needs one).
    graph = tmp_path / "vllm__disagg_planner.yaml"
    text = (corpus / "graphs" / "v1alpha1" / "vllm__disagg_planner.yaml").read_text()
    graph.write_text(text.replace("${VERSION}", RUNTIME_VERSION))
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: warned.append(message))
    alone = DynamoGraphDeployment("p", graph, kubeconfig="kc", namespace="ns")
    assert warned == [
        "graph p: spec.services.Planner: the Dynamo Planner (environment kubernetes) "
        + NEEDS.format(graph="vllm-disagg-planner")
    ]
    assert alone.plan.unserved and "Planner" in alone.components
    warned.clear()
    served = DynamoGraphDeployment("q", graph, kubeconfig="kc", namespace="ns", agent=True)
    assert warned == [] and served.plan.unserved == ()

    def created(_: Any) -> None:
        names = {r.name for r in mocks.resources}
        assert {"p-planner-workload", "q-planner-workload"} <= names, names

    # Each graph's state follows its workloads' registrations: wait for both graphs, not one.
    return pulumi.Output.all(alone.state, served.state).apply(created)
