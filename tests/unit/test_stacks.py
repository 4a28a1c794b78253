"""Every stacks/Pulumi.*.yaml is a valid stack: its cluster and platform options parse, its graphs
render for that cluster, the CRDs it installs are shipped, and the platform options reject bad input
with the config key path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.api import DynamoValidationError
from dynamo_infra.components import load_graph
from dynamo_infra.components.crd_files import crd_documents
from dynamo_infra.components.platform_plan import installable, without_descriptions
from dynamo_infra.config import ClusterOptions
from dynamo_infra.platform_options import CRD_SETS, DYNAMO_CRD_SET, PlatformOptions
from dynamo_infra.render import render_graph
from tests.conftest import REPO

STACKS = sorted((REPO / "stacks").glob("Pulumi.*.yaml"))
CRD_DIR = REPO / "stacks" / "crds"
# Every shipped CRD set: the Dynamo one (always installed) and those a stack may list.
SHIPPED_SETS = (DYNAMO_CRD_SET, *CRD_SETS)
# Size limit of each shipped CRD file: the 1.6 DynamoGraphDeployment CRD is ~3 MB of YAML (its role pod
# templates repeat the PodTemplateSpec schema in both versions; descriptions are ~75% of the bytes).
MAX_CRD_FILE_BYTES = 4 * 1024 * 1024
# What the API server stores of one installed CRD (etcd's default request limit, 1.5 MiB), as JSON.
MAX_INSTALLED_CRD_BYTES = 3 * 512 * 1024
# API groups served by a shipped CRD set (objects of other non-core groups come with the cluster).
SET_OF_GROUP = {
    "grove.io": "grove",
    "leaderworkerset.x-k8s.io": "lws",
    "networking.istio.io": "istio",
    "inference.networking.k8s.io": "inference",
}
# Groups the example stacks use whose CRDs come with another product (none: every set is shipped).
EXTERNAL_GROUPS: set[str] = set()
# Built-in API groups of the API server.
BUILTIN_GROUPS = {
    "",
    "apps",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "networking.k8s.io",
    "autoscaling",
}


def stack_config(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text())["config"])


def test_every_cluster_kind_has_a_stack() -> None:
    names = {p.name.split(".")[1] for p in STACKS}
    assert {"local", "grove", "lws", "dra", "istio"} <= names


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.name)
def test_stack_parses_and_renders(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    assert str(doc.get("encryptionsalt", "")).startswith("v1:"), "stack file needs its encryptionsalt"
    config = stack_config(path)
    cluster = ClusterOptions.from_config(config.get("dynamo-infra:cluster") or {})
    platform = PlatformOptions.from_config(config.get("dynamo-infra:platform"), cluster)
    graphs = config.get("dynamo-infra:graphs") or []
    assert graphs, "an example stack deploys at least one graph"
    groups: set[str] = set()
    for source in graphs:
        rendered = render_graph(load_graph(REPO / source), cluster, cluster.namespace)
        groups |= {o["apiVersion"].rpartition("/")[0] for o in rendered.all_objects()}
    needed = {SET_OF_GROUP[g] for g in groups if g in SET_OF_GROUP}
    assert needed <= set(platform.install_crds), f"{path.name}: the local control plane needs {needed}"
    assert groups <= BUILTIN_GROUPS | set(SET_OF_GROUP) | EXTERNAL_GROUPS
    if cluster.grove_enabled:
        # No Grove controller runs locally (LWS does, and the fake nodes' GPUs are DRA devices):
        # waiting would time out.
        assert cluster.await_policy.mode == "skip", path.name
    if cluster.dra.enabled:
        assert platform.creates_device_class(cluster)


@pytest.mark.parametrize("crd_set", SHIPPED_SETS)
def test_shipped_crd_sets_install_without_descriptions(crd_set: str) -> None:
    files = sorted((CRD_DIR / crd_set).glob("*.yaml"))
    assert files and all(f.stat().st_size < MAX_CRD_FILE_BYTES for f in files)
    for doc in crd_documents(CRD_DIR, crd_set):
        crd = installable(doc)
        assert len(json.dumps(crd, separators=(",", ":"))) < MAX_INSTALLED_CRD_BYTES
        assert crd["metadata"]["annotations"]["pulumi.com/patchFieldManager"] == "dynamo-infra-platform"
        for version, original in zip(crd["spec"]["versions"], doc["spec"]["versions"], strict=True):
            schema = version["schema"]["openAPIV3Schema"]
            assert property_paths(schema) == property_paths(original["schema"]["openAPIV3Schema"])
            assert "description" not in keywords(schema)
            assert empty_required(schema) == [], "the API server stores no empty `required`"


def empty_required(schema: Any) -> list[Any]:
    """Every empty `required` list anywhere in `schema`."""
    if isinstance(schema, dict):
        own = [schema["required"]] if schema.get("required") == [] else []
        return own + [e for v in schema.values() for e in empty_required(v)]
    if isinstance(schema, list):
        return [e for v in schema for e in empty_required(v)]
    return []


def keywords(schema: Any) -> set[str]:
    """Every schema keyword used anywhere in `schema` (property names excluded)."""
    if not isinstance(schema, dict):
        return set()
    out = set(schema)
    for key, value in schema.items():
        if key in ("properties", "patternProperties") and isinstance(value, dict):
            out |= set().union(*(keywords(v) for v in value.values())) if value else set()
        elif key in ("items", "additionalProperties", "not"):
            out |= keywords(value)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out |= set().union(*(keywords(v) for v in value)) if value else set()
    return out


def property_paths(schema: Any, at: str = "") -> set[str]:
    if not isinstance(schema, dict):
        return set()
    out = set()
    for name, sub in (schema.get("properties") or {}).items():
        out |= {f"{at}.{name}"} | property_paths(sub, f"{at}.{name}")
    if isinstance(schema.get("items"), dict):
        out |= property_paths(schema["items"], f"{at}[]")
    return out


def test_descriptions_are_dropped_only_where_they_are_keywords() -> None:
    schema = {
        "description": "the object",
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "a field named description"},
            "items": {"type": "array", "items": {"type": "string", "description": "x"}},
        },
        "default": {"description": "a default value keeps its keys"},
    }
    assert without_descriptions(schema) == {
        "type": "object",
        "properties": {
            "description": {"type": "string"},
            "items": {"type": "array", "items": {"type": "string"}},
        },
        "default": {"description": "a default value keeps its keys"},
    }


def platform_problems(data: object, cluster: dict[str, Any] | None = None) -> list[str]:
    with pytest.raises(DynamoValidationError) as e:
        PlatformOptions.from_config(data, ClusterOptions.from_config(cluster or {}))
    return [str(p) for p in e.value.problems]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"installCrds": ["grove", "gateway"]},
            "dynamo-infra:platform.installCrds[1]: must be one of 'grove', 'lws', 'keda', 'istio' or 'inference' (got 'gateway')",
        ),
        ({"installCrds": ["lws", "lws"]}, "dynamo-infra:platform.installCrds[1]: 'lws' is listed twice"),
        ({"installCrds": "grove"}, "dynamo-infra:platform.installCrds: must be a list (got string)"),
        (
            {"deviceClass": True},
            "dynamo-infra:platform.deviceClass: is true but dynamo-infra:cluster dra.enabled is false",
        ),
        ({"installCRDs": ["grove"]}, "dynamo-infra:platform.installCRDs: unknown field"),
        (["grove"], "dynamo-infra:platform: must be a mapping (got list)"),
    ],
)
def test_platform_options_errors_name_the_key(data: object, expected: str) -> None:
    assert platform_problems(data) == [expected]


def test_device_class_follows_dra_unless_set() -> None:
    dra = ClusterOptions.from_config({"dra": {"enabled": True}})
    assert PlatformOptions.from_config(None, dra).creates_device_class(dra)
    assert not PlatformOptions.from_config({"deviceClass": False}, dra).creates_device_class(dra)
    plain = ClusterOptions()
    assert not PlatformOptions.from_config({}, plain).creates_device_class(plain)


def test_shipped_crds_claim_distinct_names() -> None:
    """The API server establishes only the first CRD claiming a kind, plural or short name in a group."""
    claimed: dict[tuple[str, str], str] = {}
    for crd_set in SHIPPED_SETS:
        for doc in crd_documents(CRD_DIR, crd_set):
            names = doc["spec"]["names"]
            words = [names["kind"], names["plural"], names.get("singular", ""), *names.get("shortNames", [])]
            for word in {w.lower() for w in words if w}:
                key = (doc["spec"]["group"], word)
                assert key not in claimed, f"{doc['metadata']['name']} and {claimed[key]} both claim {key}"
                claimed[key] = doc["metadata"]["name"]


def test_shipped_dynamo_crds_are_the_operators(corpus: Path) -> None:
    """The Dynamo 1.6 CRDs: byte for byte the upstream ones of 2026-08-21 (tests/data/corpus holds
    them), except the DynamoGraphDeployment CRD, which is what `tools/dynamo_crds_16.py` derives
    (shipped without its schemas' descriptions)."""
    from tools.dynamo_crds_16 import DERIVE, INSTALLED, dump_crd, load, shipped

    files = sorted((CRD_DIR / DYNAMO_CRD_SET).glob("*.yaml"))
    assert sorted(p.name for p in files) == sorted(INSTALLED)
    for path in files:
        upstream = (corpus / "crds" / "dynamo-2026-08-21" / path.name).read_text(encoding="utf-8")
        derive = DERIVE.get(path.name)
        expected = upstream if derive is None else dump_crd(shipped(derive(load(upstream))), upstream)
        assert path.read_text(encoding="utf-8") == expected, (
            f"{path.name}: run python -m tools.dynamo_crds_16"
        )
