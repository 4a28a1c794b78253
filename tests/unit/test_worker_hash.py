"""The worker hash and the DCDs against what the real operator created (corpus/operator-rendered):
every worker name, worker-hash label and DYN_NAMESPACE_WORKER_SUFFIX in every file is ours, and
every DynamoComponentDeployment is ours, object for object, as the API server returned it.

Graphs our admission rejects (the operator ran without its validating webhook) are rendered here
below admission: the hash and the DCDs are computed before it.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.api import AnyDGD, v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import names
from dynamo_infra.render.context import GraphContext
from dynamo_infra.render.dcd import DCD_KIND, as_stored, generate_dcd
from dynamo_infra.render.graph import graph_context, graph_worker_hash
from dynamo_infra.render.worker_hash import worker_hash
from tests.conftest import CORPUS, load_corpus

RENDERED = CORPUS / "operator-rendered"
# ClusterOptions of each pass beyond the namespace (operator-rendered/README.md); the operator at our
# pin had no runtime-version gates.
PIN = {"runtimeVersionGates": False}
PASSES: dict[str, dict[str, Any]] = {
    "single": {**PIN, "dra": {"enabled": True}},
    "lws": {**PIN, "dra": {"enabled": True}, "multinode": {"orchestrator": "lws"}},
    "grove": {**PIN, "dra": {"enabled": True}, "multinode": {"orchestrator": "grove"}},
}
# Normalised away before comparing (operator-rendered/README.md).
DROPPED_METADATA = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink")
DROPPED_ANNOTATIONS = (
    "nvidia.com/last-applied-hash",
    "nvidia.com/last-applied-generation",
    "nvidia.com/dcd-spec",
)
ENV_WORKER_SUFFIX = "DYN_NAMESPACE_WORKER_SUFFIX"


def files() -> list[Path]:
    return sorted(p for p in RENDERED.glob("*/*.yaml"))


@functools.cache
def _objects(path: Path) -> tuple[Manifest, ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader) if d)


@functools.cache
def _graph(path: Path) -> list[GraphContext]:
    """Each graph of the file's source, as the operator read it in that pass and namespace."""
    ver, source = path.name.split("__", 1)
    objects = _objects(path)
    namespace = objects[0]["metadata"]["namespace"] if objects else "default"
    options = ClusterOptions.parse({"namespace": namespace, **PASSES[path.parent.name]})
    graphs: list[AnyDGD] = load_corpus(CORPUS / "graphs" / ver / source).graphs
    return [graph_context(dgd, options, namespace) for dgd in graphs]


def _hash_occurrences(obj: Any) -> list[str]:
    """Every worker-hash label value and DYN_NAMESPACE_WORKER_SUFFIX value inside an object."""
    out: list[str] = []
    if isinstance(obj, dict):
        labels = obj.get("labels")
        if isinstance(labels, dict) and names.LABEL_WORKER_HASH in labels:
            out.append(labels[names.LABEL_WORKER_HASH])
        if obj.get("name") == ENV_WORKER_SUFFIX and "value" in obj:
            out.append(obj["value"])
        for v in obj.values():
            out.extend(_hash_occurrences(v))
    elif isinstance(obj, list):
        for v in obj:
            out.extend(_hash_occurrences(v))
    return out


def _workers(g: GraphContext) -> list[v1beta1.Component]:
    return [c for c in g.dgd.spec.components or [] if c.is_worker]


@pytest.mark.parametrize("path", files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_worker_name_and_hash_is_ours(path: Path) -> None:
    objects = _objects(path)
    checked = 0
    for g in _graph(path):
        whash = graph_worker_hash(g)
        mine = [o for o in objects if (o["metadata"].get("labels") or {}).get(names.LABEL_GRAPH) == g.name]
        for o in mine:
            for found in _hash_occurrences(o):
                assert found == whash, f"{o['kind']}/{o['metadata']['name']}: operator {found}, ours {whash}"
                checked += 1
        for c in _workers(g):
            base = names.component_base_name(g.name, c.name)
            for o in objects:
                name = o["metadata"]["name"]
                if name.startswith(f"{base}-") and len(name) == len(base) + 1 + len(whash):
                    assert name == names.dcd_name(g.name, c.name, whash)
                    checked += 1
    carries_hash = any(_hash_occurrences(o) for o in objects)
    assert checked > 0 or not carries_hash


def test_hashes_are_checked_in_every_pass_that_names_workers() -> None:
    """single/ and lws/ name worker generations; Grove's PodCliqueSet carries no worker hash."""
    with_hash = {p.parent.name for p in files() if any(_hash_occurrences(o) for o in _objects(p))}
    assert with_hash == {"single", "lws"}


def _normalised(obj: Manifest) -> Manifest:
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    for key in (*DROPPED_METADATA, "ownerReferences"):
        meta.pop(key, None)
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in DROPPED_ANNOTATIONS}
    meta.pop("annotations", None)
    if annotations:
        meta["annotations"] = annotations
    out.pop("status", None)
    return out


def _dcd_cases() -> list[tuple[Path, str]]:
    return [(p, o["metadata"]["name"]) for p in files() for o in _objects(p) if o["kind"] == DCD_KIND]


@pytest.mark.parametrize(("path", "name"), _dcd_cases(), ids=lambda x: x if isinstance(x, str) else x.name)
def test_every_dcd_is_ours(path: Path, name: str) -> None:
    expected = next(o for o in _objects(path) if o["kind"] == DCD_KIND and o["metadata"]["name"] == name)
    graph = expected["metadata"]["labels"][names.LABEL_GRAPH]
    g = next(g for g in _graph(path) if g.name == graph)
    component = next(c for c in g.dgd.spec.components or [] if c.name == expected["spec"]["name"])
    ours = as_stored(generate_dcd(g, component, graph_worker_hash(g)))
    assert _normalised(ours) == _normalised(expected)


def test_dcds_are_compared_in_every_pass_that_has_them() -> None:
    cases = _dcd_cases()
    assert {p.parent.name for p, _ in cases} == {"single", "lws"}
    assert len(cases) >= 70


def test_a_graph_without_workers_hashes_the_empty_map() -> None:
    """The operator hashes `{}` then (first 8 hex of SHA-256 of those two bytes)."""
    assert worker_hash({}) == "44136fa3"
