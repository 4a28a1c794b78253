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
from dynamo_infra.render.graph import graph_context, graph_worker_hash
from dynamo_infra.render.legacy import LegacyComponent
from dynamo_infra.render.worker_hash import hash_input, normalised_spec, worker_hash
from dynamo_infra.render.workloads.dcd import DCD_KIND, as_stored, generate_dcd
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


# --- the 1.6 operator's hash (hash_test.go at michaelfeil/dynamo 80b177f2, ported on generated DCDs) ---

IMAGE_1_5 = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0"
VLLM_CACHE = "/root/.cache/vllm"


def _worker_dcd(image: str | None = IMAGE_1_5, override: str = "", **spec: Any) -> Manifest:
    """A generated worker DCD (placeholder hash) as the v1beta1 wire form holds it."""
    body: dict[str, Any] = {"name": "worker", "type": "worker", **spec}
    if image is not None:
        body["podTemplate"] = {"spec": {"containers": [{"name": "main", "image": image}]}}
    if override:
        body["runtimeVersionOverride"] = override
    labels = {names.LABEL_COMPONENT: "worker", names.LABEL_WORKER_HASH: names.WORKER_HASH_PLACEHOLDER}
    return {"metadata": {"name": "test-worker", "labels": labels}, "spec": body}


def _hash(dcd: Manifest, **kwargs: Any) -> str:
    return worker_hash({"worker": (dcd, LegacyComponent())}, **kwargs)


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        # omits resolved versions before 1.5
        (("registry.example/runtime:custom", ""), ("registry.example/runtime:custom", "1.4.9"), True),
        # canonicalizes equivalent implicit and explicit versions
        (
            ("nvcr.io/nvidia/ai-dynamo/runtime:v1.5.0-cuda13", ""),
            ("nvcr.io/nvidia/ai-dynamo/runtime:v1.5.0-cuda13", "1.5.0"),
            True,
        ),
        # changes at the 1.5 boundary
        (("registry.example/runtime:custom", "1.4.9"), ("registry.example/runtime:custom", "1.5.0"), False),
        # tracks override changes after 1.5
        (("registry.example/runtime:custom", "1.5.0"), ("registry.example/runtime:custom", "1.5.1"), False),
    ],
)
def test_the_hash_uses_the_resolved_runtime_version(
    left: tuple[str, str], right: tuple[str, str], equal: bool
) -> None:
    assert (_hash(_worker_dcd(*left)) == _hash(_worker_dcd(*right))) is equal


def test_below_1_5_the_hash_input_is_the_pins() -> None:
    """No version field and no normalisation for a 1.4 worker: its generation does not move."""
    dcd = _worker_dcd("runtime:1.4.0", experimental={})
    assert _hash(dcd) == _hash(dcd, runtime_version_gates=False)
    assert '"runtimeVersion"' not in hash_input({"worker": (dcd, LegacyComponent())})
    assert _hash(dcd) != _hash(_worker_dcd("runtime:1.4.0"))


@pytest.mark.parametrize(
    "experimental",
    [{}, {"grove": {}}, {"grove": {"forceScalingGroup": False}}],
    ids=["empty_experimental", "empty_grove", "explicit_false"],
)
def test_force_scaling_group_false_is_omission(experimental: Manifest) -> None:
    omitted = _hash(_worker_dcd())
    candidate = _worker_dcd(experimental=experimental)
    original = copy.deepcopy(candidate)
    assert _hash(candidate) == omitted
    assert candidate == original
    assert _hash(_worker_dcd(experimental={"grove": {"forceScalingGroup": True}})) != omitted


@pytest.mark.parametrize(
    "other",
    [{"gpuMemoryService": {}}, {"failover": {}}, {"checkpoint": {"enabled": True}}],
    ids=["gms", "failover", "enabled_checkpoint"],
)
def test_normalisation_keeps_other_experimental_features(other: Manifest) -> None:
    spec = {"experimental": {**other, "grove": {"forceScalingGroup": False}}}
    assert normalised_spec(spec)["experimental"] == other


def _multinode(
    nodes: int, roles: list[Manifest] | None = None, image: str | None = IMAGE_1_5, **spec: Any
) -> Manifest:
    extra = {"multinode": {"nodeCount": nodes}, **spec}
    if roles is not None:
        extra["roles"] = roles
    return _worker_dcd(image, **extra)


def test_explicit_roles_equal_to_the_implicit_layout_do_not_roll() -> None:
    explicit = _multinode(4, [{"name": "worker"}, {"name": "leader"}])
    assert _hash(explicit) == _hash(_multinode(4))


def test_explicit_role_order_and_cardinality_do_not_roll() -> None:
    override: Manifest = {
        "apiVersion": "grove.io/v1alpha1",
        "target": "PodCliqueTemplateSpec",
        "value": {"topologyConstraint": {"topologyName": "cluster", "pack": {"required": "rack"}}},
    }
    roles: list[Manifest] = [{"name": "leader"}, {"name": "worker", "providerOverride": override}]
    base = _hash(_multinode(4, roles))
    assert base != _hash(_multinode(4))
    assert _hash(_multinode(4, roles[::-1])) == base
    with_replicas = [{**roles[0], "replicas": 1}, {**roles[1], "replicas": 3}]
    assert _hash(_multinode(4, with_replicas)) == base


def _role(name: str, image: str) -> Manifest:
    return {"name": name, "podTemplate": {"spec": {"containers": [{"name": "main", "image": image}]}}}


def test_role_pod_templates_create_a_rollout() -> None:
    global_template = _multinode(2, image="global:1.5.0")
    role_templates = _multinode(
        2, [_role("leader", "leader:1.5.0"), _role("worker", "worker:1.5.0")], image=None
    )
    assert _hash(global_template) != _hash(role_templates)


def test_role_pod_templates_are_order_independent() -> None:
    roles = [_role("leader", "leader:1.5.0"), _role("worker", "worker:1.5.0")]
    assert _hash(_multinode(2, roles, image=None)) == _hash(_multinode(2, roles[::-1], image=None))


def test_a_role_runtime_version_override_creates_a_rollout() -> None:
    roles = [_role("leader", "leader:latest"), _role("worker", "worker:latest")]
    dcd = _multinode(2, roles, image=None, runtimeVersionOverride="1.5.0")
    updated = _multinode(2, roles, image=None, runtimeVersionOverride="1.6.0")
    assert _hash(dcd) != _hash(updated)


@pytest.mark.parametrize(
    ("checkpoint", "grove"),
    [
        ({"enabled": False}, None),
        (
            {
                "enabled": False,
                "checkpointRef": "existing-snapshot",
                "startupPolicy": "WaitForCheckpoint",
                "deletionPolicy": "Retain",
            },
            None,
        ),
        ({"enabled": False}, {"forceScalingGroup": True}),
    ],
    ids=["disabled", "disabled_with_options", "disabled_with_grove"],
)
def test_a_disabled_checkpoint_is_omission(checkpoint: Manifest, grove: Manifest | None) -> None:
    omitted = _worker_dcd() if grove is None else _worker_dcd(experimental={"grove": grove})
    disabled = _worker_dcd(experimental={**({"grove": grove} if grove else {}), "checkpoint": checkpoint})
    original = copy.deepcopy(disabled)
    assert _hash(omitted) == _hash(disabled)
    assert disabled == original
    assert _hash(_worker_dcd(experimental={"checkpoint": {"enabled": True}})) != _hash(_worker_dcd())


def test_the_default_compilation_cache_path_is_omission() -> None:
    omitted = _worker_dcd(backendFramework="vllm", compilationCache={"pvcName": "compilation-cache"})
    explicit = _worker_dcd(
        backendFramework="vllm", compilationCache={"pvcName": "compilation-cache", "mountPath": VLLM_CACHE}
    )
    assert _hash(omitted) == _hash(explicit)
    for cache in ({"pvcName": "compilation-cache", "mountPath": "/custom/cache"}, {"pvcName": "other-cache"}):
        assert _hash(_worker_dcd(backendFramework="vllm", compilationCache=cache)) != _hash(omitted)
    sglang = {"backendFramework": "sglang", "compilationCache": {"pvcName": "c", "mountPath": VLLM_CACHE}}
    assert normalised_spec(sglang)["compilationCache"]["mountPath"] == VLLM_CACHE


def test_non_rollout_fields_do_not_roll_from_1_5() -> None:
    base = _hash(_worker_dcd())
    assert _hash(_worker_dcd(replicas=99)) == base
    assert _hash(_worker_dcd(replicas=0, minAvailable=1)) == base
    assert _hash(_worker_dcd(scalingAdapter={})) == base
