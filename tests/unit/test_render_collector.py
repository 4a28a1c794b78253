"""The cyclic collector is held off while a graph renders and restored as it was after, also when the
render fails or renders nest or run on two threads."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from dynamo_infra.api import load_yaml
from dynamo_infra.render import graph
from dynamo_infra.render.collector import without_cycle_collection
from tests.conftest import REPO

GRAPH = REPO / "examples" / "agg.yaml"


@pytest.fixture(autouse=True)
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


@without_cycle_collection
def state(inner: bool = False) -> list[bool]:
    seen = [gc.isenabled()]
    if inner:
        seen += state()
        seen.append(gc.isenabled())
    return seen


def test_disabled_during_enabled_after() -> None:
    assert state() == [False]
    assert gc.isenabled()


def test_nested_renders_reenable_once_the_outermost_ends() -> None:
    assert state(inner=True) == [False, False, False]
    assert gc.isenabled()


def test_left_disabled_when_it_was() -> None:
    gc.disable()
    assert state() == [False]
    assert not gc.isenabled()


def test_a_failing_render_restores_it() -> None:
    @without_cycle_collection
    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        fail()
    assert gc.isenabled()


def test_two_threads_overlapping() -> None:
    inside, release = threading.Event(), threading.Event()

    @without_cycle_collection
    def slow() -> bool:
        inside.set()
        release.wait(5)
        return gc.isenabled()

    result: list[bool] = []
    t = threading.Thread(target=lambda: result.append(slow()))
    t.start()
    inside.wait(5)
    assert state() == [False]
    assert not gc.isenabled()  # the other render is still running
    release.set()
    t.join(5)
    assert result == [False] and gc.isenabled()


def test_render_graph_holds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    context = graph.graph_context

    def observed(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return context(*args, **kwargs)

    monkeypatch.setattr(graph, "graph_context", observed)
    dgd = load_yaml(GRAPH).graphs[0]
    assert graph.render_graph(dgd, None, "ns").components
    assert seen == [False] and gc.isenabled()
