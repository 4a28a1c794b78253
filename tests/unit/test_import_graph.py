"""The package's import graph: no circle, and every module in a layer of the main import contract.

The graph counts every import statement: at module level, under `if TYPE_CHECKING:` and inside
functions. An import inside a function is no way around a circle; the providers' light Check and Diff
need none (a provider names its calls module and `reconcile.base` imports it by name, checked below).
No import is exempted.
"""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from pathlib import Path
from typing import Any

import grimp
import pytest

import dynamo_infra
from dynamo_infra.reconcile import base

ROOT = "dynamo_infra"
# Modules the main layers contract need not cover: the package root, which exports lazily.
UNLAYERED = {ROOT}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(ROOT, cache_dir=None)


def internal_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    modules = set(graph.modules)
    return {m: graph.find_modules_directly_imported_by(m) & modules for m in sorted(modules)}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_cycles_finds_a_circle_and_only_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_no_import_circle_in_the_package(graph: grimp.ImportGraph) -> None:
    found = cycles(internal_edges(graph))
    chains = [
        [
            *(graph.find_shortest_chain(importer=c[0], imported=c[1]) or ()),
            *(graph.find_shortest_chain(importer=c[1], imported=c[0]) or ())[1:],
        ]
        for c in found
    ]
    assert found == [], "import circles:\n" + "\n".join(
        f"{c}\n  e.g. {' -> '.join(chain)}" for c, chain in zip(found, chains, strict=True)
    )


def provider_classes() -> list[type[base.Provider[Any]]]:
    import dynamo_infra.reconcile as reconcile

    found = []
    for info in pkgutil.iter_modules(reconcile.__path__, "dynamo_infra.reconcile."):
        module = importlib.import_module(info.name)
        found += [
            v
            for v in vars(module).values()
            if isinstance(v, type) and issubclass(v, base.Provider) and v.__module__ == module.__name__
        ]
    return found


def test_every_provider_is_found() -> None:
    names = {c.__name__ for c in provider_classes()}
    assert {"ComponentWorkloadProvider", "PersistentVolumeClaimProvider", "CheckpointProvider"} <= names
    assert {"GraphRecordsProvider", "GraphAdmissionProvider"} <= names


def test_a_providers_calls_module_never_imports_the_provider(graph: grimp.ImportGraph) -> None:
    """The calls module `Provider.calls` imports by name (an edge the graph cannot see) closes no circle."""
    from dynamo_infra.reconcile.checkpoint_provider import SNAPSHOT_CALLS

    for cls in provider_classes():
        named = [getattr(cls, "calls_module", "")] + (
            [SNAPSHOT_CALLS] if cls.__name__ == "CheckpointProvider" else []
        )
        for calls in filter(None, named):
            assert calls in graph.modules, f"{cls.__name__} names {calls}, which does not exist"
            assert not graph.chain_exists(importer=calls, imported=cls.__module__), (
                f"{calls} imports {cls.__module__}: "
                + " -> ".join(graph.find_shortest_chain(importer=calls, imported=cls.__module__) or ())
            )


def main_layers() -> list[str]:
    """The module names of the main layers contract (the one without containers)."""
    pyproject = Path(dynamo_infra.__file__).parents[1] / "pyproject.toml"
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    (main,) = [c for c in contracts if c["type"] == "layers" and not c.get("containers")]
    return [
        name.strip().strip("()") for layer in main["layers"] for name in layer.replace(":", "|").split("|")
    ]


def test_every_module_is_in_a_layer_of_the_main_contract(graph: grimp.ImportGraph) -> None:
    layers = main_layers()
    outside = sorted(
        m
        for m in graph.modules
        if m not in UNLAYERED and not any(m == layer or m.startswith(layer + ".") for layer in layers)
    )
    assert outside == [], f"modules under no layer of the main import contract (pyproject.toml): {outside}"
