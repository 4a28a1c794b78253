"""The render cache: a graph is admitted and rendered once per program, a changed input is rendered
anew, and no caller can change what another gets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from dynamo_infra.api import load_yaml
from dynamo_infra.components import plan_graph
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import cache, render_graph
from dynamo_infra.render.checks.admission import review_graph
from dynamo_infra.render.graph import keep_running_generation
from dynamo_infra.stack_config import StackConfig
from tests.conftest import CORPUS, REPO
from tests.unit.test_stack_config import Config

AGG = REPO / "examples" / "agg.yaml"
DISAGG = CORPUS / "graphs-1.6" / "wheel" / "vllm__disagg.yaml"
OPTIONS = ClusterOptions(namespace="n")


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the cache renders and reviews."""
    counts = {"render": 0, "review": 0}

    def counting(kind: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            counts[kind] += 1
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(cache, "render_graph", counting("render", render_graph))
    monkeypatch.setattr(cache, "review_graph", counting("review", review_graph))
    return counts


def dgd(path: Any = AGG) -> Any:
    return load_yaml(path.read_text()).graphs[0]


def test_a_hit_is_the_same_rendering(calls: dict[str, int]) -> None:
    first = cache.rendered(dgd(), OPTIONS, "n")
    again = cache.rendered(dgd(), OPTIONS, "n")
    assert calls["render"] == 1
    assert again == first == render_graph(dgd(), OPTIONS, "n")
    # Byte for byte, keys in the same order.
    assert json.dumps([o for c in again.components.values() for o in (c.dcd, *c.objects)]) == json.dumps(
        [o for c in first.components.values() for o in (c.dcd, *c.objects)]
    )
    assert cache.reviewed(dgd(), OPTIONS, "n") == cache.reviewed(dgd(), OPTIONS, "n")
    assert calls["review"] == 1


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda g, o, n: (g, o, "m"), id="namespace"),
        pytest.param(
            lambda g, o, n: (g, o.model_copy(update={"runtime_version_gates": False}), n), id="options"
        ),
        pytest.param(lambda g, o, n: (dgd(DISAGG), o, n), id="graph"),
    ],
)
def test_a_changed_input_misses(calls: dict[str, int], change: Any) -> None:
    graph = dgd()
    cache.rendered(graph, OPTIONS, "n")
    changed_graph, changed_options, namespace = change(graph, OPTIONS, "n")
    assert cache.rendered(changed_graph, changed_options, namespace) == render_graph(
        changed_graph, changed_options, namespace
    )
    assert calls["render"] == 2


def test_a_changed_field_misses(calls: dict[str, int]) -> None:
    text = AGG.read_text()
    cache.rendered(dgd(), OPTIONS)
    replicas = load_yaml(text.replace("replicas: 1", "replicas: 3", 1)).graphs[0]
    assert cache.rendered(replicas, OPTIONS) != cache.rendered(dgd(), OPTIONS)
    assert calls["render"] == 2


def test_readiness_is_part_of_the_key(calls: dict[str, int]) -> None:
    graph = dgd()
    cache.rendered(graph, OPTIONS, "n")
    cache.rendered(graph, OPTIONS, "n", checkpoint_ready={"x": True})
    cache.rendered(graph, OPTIONS, "n", checkpoint_ready={})
    assert calls["render"] == 2


def test_no_caller_can_change_the_cached_rendering() -> None:
    first = cache.rendered(dgd(), OPTIONS, "n")
    component = next(iter(first.components.values()))
    component.objects[0]["metadata"]["name"] = "poisoned"
    first.components.clear()
    again = cache.rendered(dgd(), OPTIONS, "n")
    assert again == render_graph(dgd(), OPTIONS, "n")
    next(iter(again.components.values())).objects[0]["spec"] = {}
    assert cache.rendered(dgd(), OPTIONS, "n") == render_graph(dgd(), OPTIONS, "n")


def test_the_held_generation_is_the_uncached_one() -> None:
    graph = dgd(DISAGG)
    pin = OPTIONS.model_copy(update={"runtime_version_gates": False})
    pin_hash = render_graph(graph, pin, "n").worker_hash
    for running in (None, pin_hash, render_graph(graph, OPTIONS, "n").worker_hash, "unknown"):
        assert cache.effective_options(graph, OPTIONS, "n", running) == keep_running_generation(
            graph, OPTIONS, "n", running
        )


def test_a_graph_is_admitted_and_rendered_once_per_program(calls: dict[str, int]) -> None:
    """As `__main__` does: the stack read (each graph admitted and rendered to fail early), then each
    graph's plan."""
    stack = StackConfig.from_config(
        Config(kubeconfig="apiVersion: v1", cluster={"namespace": "n"}, graphs=[str(AGG), str(DISAGG)])
    )
    assert calls == {"render": 2, "review": 2}
    for graph in stack.graphs:
        plan = plan_graph(graph.name, graph, stack.cluster, stack.cluster.namespace)
        assert plan.rendered == render_graph(graph, stack.cluster, stack.cluster.namespace)
    assert calls == {"render": 2, "review": 2}
