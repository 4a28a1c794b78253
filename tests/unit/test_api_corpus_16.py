"""Public DGDs of the 1.5/1.6 era (corpus/graphs-1.6: recipes, examples, the 1.6.1 wheel's templates,
an operator test input) and the multinode guide's role example load, and convert v1beta1 → v1alpha1 →
v1beta1 (and v1alpha1 → v1beta1 → v1alpha1) without loss."""

from __future__ import annotations

import pytest

from dynamo_infra.api import DynamoValidationError, load_yaml, to_other_version, v1alpha1, v1beta1
from dynamo_infra.api.admission import AdmissionDenied
from dynamo_infra.api.common import LPX_REFUSED
from tests.conftest import CORPUS, REPO

GRAPHS_16 = CORPUS / "graphs-1.6"
ROLE_EXAMPLE = REPO / "tests" / "data" / "graphs" / "role_specific_multinode.yaml"
LPX_GRAPHS = {"operator/lpx__dgd.yaml"}
# Upstream examples whose images carry placeholder tags (`my-tag`, `<IMAGE_TAG>`): the webhook asks
# for runtimeVersionOverride on each such component, as the operator's does.
PLACEHOLDER_TAGS = {
    "examples/trtllm__snapshot-restore.yaml": 2,
    "examples/vllm__sidecar_agg.yaml": 2,
    "recipes/kimi-k2.5__trtllm__disagg-eagle-kv-router__deploy.yaml": 3,
}
FILES = sorted(str(p.relative_to(GRAPHS_16)) for p in GRAPHS_16.rglob("*.yaml"))
GRAPHS = [f for f in FILES if f not in LPX_GRAPHS]


def test_the_corpus_has_every_kind_of_source() -> None:
    assert {f.split("/")[0] for f in FILES} == {"examples", "operator", "recipes", "sidecar", "wheel"}
    assert len([f for f in FILES if f.startswith("wheel/")]) == 7


@pytest.mark.parametrize("name", GRAPHS)
def test_loads_and_round_trips(name: str) -> None:
    path = GRAPHS_16 / name
    if name in PLACEHOLDER_TAGS:
        with pytest.raises(AdmissionDenied) as denied:
            load_yaml(path)
        assert len(denied.value.problems) == PLACEHOLDER_TAGS[name]
        assert all(p.path.endswith("runtimeVersionOverride") for p in denied.value.problems)
        loaded = load_yaml(path, admission=False)
    else:
        loaded = load_yaml(path)
    assert loaded.graphs
    for graph in loaded.graphs:
        _round_trips(graph)


def _round_trips(graph: v1alpha1.DynamoGraphDeployment | v1beta1.DynamoGraphDeployment) -> None:
    other = to_other_version(graph)
    assert type(other) is not type(graph)
    assert to_other_version(other) == graph
    hub = graph if isinstance(graph, v1beta1.DynamoGraphDeployment) else other
    assert to_other_version(to_other_version(hub)) == hub


def test_the_lpx_operator_input_is_refused() -> None:
    with pytest.raises(DynamoValidationError) as e:
        load_yaml(GRAPHS_16 / "operator" / "lpx__dgd.yaml")
    [problem] = e.value.problems
    assert problem.path == "spec.components[0].type" and LPX_REFUSED in problem.message


def test_null_containers_of_a_recipe_are_pruned() -> None:
    """The kimi-k2.5 recipe writes `extraPodSpec.containers: null` (the API server prunes it)."""
    graph = load_yaml(
        GRAPHS_16 / "recipes" / "kimi-k2.5__trtllm__disagg-eagle-kv-router__deploy.yaml", admission=False
    ).graphs[0]
    assert isinstance(graph, v1alpha1.DynamoGraphDeployment)
    for service in (graph.spec.services or {}).values():
        assert "containers" not in (service.extra_pod_spec or {})


def test_the_role_example_loads_with_its_roles() -> None:
    graph = load_yaml(ROLE_EXAMPLE, admission=False).graphs[0]
    assert isinstance(graph, v1beta1.DynamoGraphDeployment)
    decode = graph.component("decode")
    assert decode.pod_template is None
    assert [(r.name, r.replicas) for r in decode.roles or []] == [("leader", 1), ("worker", 1)]
    _round_trips(graph)


def test_the_role_example_passes_admission() -> None:
    load_yaml(ROLE_EXAMPLE)
