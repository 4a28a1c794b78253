"""Graphs whose components need what only the Dynamo operator serves are refused before anything
is deployed (a planner in its kubernetes environment), while they still render as the operator would."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pytest

from dynamo_infra.api import DynamoValidationError, load_yaml
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph
from dynamo_infra.render.planner import planner_environment
from dynamo_infra.render.preflight import unmet_needs
from tests.conftest import load_corpus
from tests.unit.conftest import Mocks

# The Dynamo runtime release images are tagged with (the parity pin's).
RUNTIME_VERSION = "1.4.0"
# What the refusal says, whatever the planner's environment.
NEEDS = (
    "reads DynamoGraphDeployment '{graph}' and its Ready status, and scales through "
    "DynamoGraphDeploymentScalingAdapters or a patch of the DGD; without the Dynamo operator nothing "
    "serves or carries them in this stack, so it would crash at start "
    "(DynamoGraphDeploymentNotFoundError) and never scale. Remove the planner component and scale with "
    "`dynamo-infra:autoscalers` (HPA or KEDA on a component with scalingAdapter), or run the planner in "
    """its virtual environment (--config '{{"environment": "virtual", "model_name": ...}}'), whose """
    "decisions a client of your own (VirtualConnectorClient) applies"
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


def test_corpus_planner_graphs_are_refused_where_the_user_wrote_them(corpus: Path) -> None:
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


def test_a_planner_config_file_is_refused_as_the_default(tmp_path: Path) -> None:
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


def test_refused_graphs_still_render(corpus: Path) -> None:
    (dgd,) = load_corpus(corpus / "graphs" / "v1alpha1" / "vllm__disagg_planner.yaml").graphs
    assert "Planner" in render_graph(dgd, ClusterOptions(), "ns").components


@pulumi.runtime.test
def test_the_component_refuses_a_kubernetes_planner(mocks: Mocks, corpus: Path, tmp_path: Path) -> None:
    from components import DynamoGraphDeployment

    # The corpus graph with its image version filled in, as a user deploys it (admission needs one).
    graph = tmp_path / "vllm__disagg_planner.yaml"
    text = (corpus / "graphs" / "v1alpha1" / "vllm__disagg_planner.yaml").read_text()
    graph.write_text(text.replace("${VERSION}", RUNTIME_VERSION))
    with pytest.raises(DynamoValidationError) as refused:
        DynamoGraphDeployment("p", graph, kubeconfig="kc", namespace="ns")
    assert str(refused.value).startswith("spec.services.Planner: the Dynamo Planner (environment kubernetes)")
