"""Upgrading this package restarts no running graph: a generation rendered without the runtime-version
gates (by an earlier dynamo-infra) keeps rendering so until its workers change."""

from __future__ import annotations

from typing import Any

from dynamo_infra.api import load_yaml
from dynamo_infra.components import plan_graph
from dynamo_infra.components.neighbours import running_worker_hashes
from dynamo_infra.config import ClusterOptions
from dynamo_infra.reconcile.ownership import INVENTORY_ANNOTATION, STACK_ANNOTATION
from dynamo_infra.render import render_graph
from dynamo_infra.render.graph import keep_running_generation
from dynamo_infra.render.names import ANNOTATION_CURRENT_WORKER_HASH
from tests.conftest import CORPUS

GRAPH = CORPUS / "graphs-1.6" / "wheel" / "vllm__disagg.yaml"
GATED = ClusterOptions(namespace="n")
PIN = GATED.model_copy(update={"runtime_version_gates": False})


def dgd(text: str | None = None) -> Any:
    return load_yaml(text if text is not None else GRAPH.read_text()).graphs[0]


def test_a_new_graph_follows_its_release() -> None:
    assert keep_running_generation(dgd(), GATED, "n", None) is GATED


def test_a_generation_rendered_without_gates_keeps_running() -> None:
    pin_hash = render_graph(dgd(), PIN).worker_hash
    gated_hash = render_graph(dgd(), GATED).worker_hash
    assert pin_hash != gated_hash
    held = keep_running_generation(dgd(), GATED, "n", pin_hash)
    assert held.runtime_version_gates is False
    assert render_graph(dgd(), held).worker_hash == pin_hash
    plan = plan_graph("g", dgd(), GATED, running_worker_hash=pin_hash)
    assert plan.rendered.worker_hash == pin_hash
    assert plan_graph("g", dgd(), GATED).rendered.worker_hash == gated_hash


def test_a_gated_generation_stays_gated() -> None:
    gated_hash = render_graph(dgd(), GATED).worker_hash
    assert keep_running_generation(dgd(), GATED, "n", gated_hash) is GATED


def test_a_changed_worker_starts_a_generation_of_its_release() -> None:
    pin_hash = render_graph(dgd(), PIN).worker_hash
    changed = dgd(GRAPH.read_text().replace("Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B"))
    assert keep_running_generation(changed, GATED, "n", pin_hash) is GATED


def test_the_running_hash_is_read_from_the_stacks_own_records() -> None:
    def meta(name: str, stack: str | None, hash_: str) -> dict[str, Any]:
        annotations = {ANNOTATION_CURRENT_WORKER_HASH: hash_, INVENTORY_ANNOTATION: f"n/{name}/records"}
        if stack:
            annotations[STACK_ANNOTATION] = stack
        return {"name": name, "annotations": annotations}

    operators = {"name": "op", "annotations": {ANNOTATION_CURRENT_WORKER_HASH: "ffffffff"}}
    found = [meta("a", "p/s", "aaaaaaaa"), meta("b", "p/other", "bbbbbbbb"), meta("c", None, "cccccccc")]
    assert running_worker_hashes([*found, operators], "p/s") == {"a": "aaaaaaaa", "c": "cccccccc"}
