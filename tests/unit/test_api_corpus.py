"""Every corpus graph loads, validates, converts both ways losslessly and emits CRD-valid manifests."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml

from dynamo_infra.api import Resource, to_hub, to_other_version, to_yaml, v1alpha1, v1beta1
from dynamo_infra.api.conversion import convertible
from dynamo_infra.api.schema import strict_openapi
from tests.conftest import CORPUS, load_corpus

GRAPHS = sorted((CORPUS / "graphs").rglob("*.yaml")) + sorted((CORPUS / "graphs").rglob("*.yml"))
CRDS = CORPUS / "crds" / "dynamo"


def test_corpus_is_enumerated() -> None:
    assert len(GRAPHS) >= 30, GRAPHS


@functools.cache
def crds() -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = {}
    for f in CRDS.glob("*.yaml"):
        crd = yaml.load(f.read_text(encoding="utf-8"), Loader=loader)
        out[crd["spec"]["names"]["kind"]] = crd
    return out


@functools.cache
def crd_validator(kind: str, version: str) -> Any:
    """Validator of the CRD schema read in place from tests/data/corpus (strict about unknown keys)."""
    for v in crds()[kind]["spec"]["versions"]:
        if v["name"] == version:
            return jsonschema_rs.Draft7Validator(strict_openapi(v["schema"]["openAPIV3Schema"]))
    raise AssertionError(f"no CRD for {kind} {version}")


def assert_crd_accepts(obj: Resource) -> None:
    manifest = obj.to_manifest()
    validator = crd_validator(obj.KIND, obj.API_VERSION.split("/")[-1])
    errors = [f"{list(e.instance_path)}: {e.message}" for e in validator.iter_errors(manifest)]
    assert not errors, errors


def dynamo_docs(path: Path) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(d, dict)]
    return [d for d in docs if str(d.get("apiVersion", "")).startswith("nvidia.com/")]


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_loads_validates_and_keeps_other_documents(path: Path) -> None:
    loaded = load_corpus(path)
    raw = dynamo_docs(path)
    assert len(loaded.documents) == len(raw) >= 1
    all_docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    assert len(loaded.others) == len(all_docs) - len(raw)
    for doc, original in zip(loaded.documents, raw, strict=True):
        assert doc.name == original["metadata"]["name"]
        # What we emit is what the user wrote (no defaults injected, nothing dropped).
        assert doc.to_manifest() == {k: v for k, v in original.items() if k != "status"}


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_emitted_manifests_are_accepted_by_the_crd(path: Path) -> None:
    for doc in load_corpus(path).documents:
        assert_crd_accepts(doc)
        if convertible(doc):
            assert_crd_accepts(to_other_version(doc))


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_round_trip_is_lossless(path: Path) -> None:
    for doc in load_corpus(path).documents:
        if not convertible(doc):
            continue
        other = to_other_version(doc)
        assert other.api_version != doc.api_version
        back = to_other_version(other)
        assert type(back) is type(doc)
        assert back.to_manifest() == doc.to_manifest()
        assert back == doc


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_yaml_dump_reloads_identically(path: Path) -> None:
    loaded = load_corpus(path)
    again = load_corpus(to_yaml(loaded.documents))
    assert [d.to_manifest() for d in again.documents] == [d.to_manifest() for d in loaded.documents]


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_hub_has_every_service_as_a_component(path: Path) -> None:
    for g in load_corpus(path).graphs:
        hub = to_hub(g)
        assert isinstance(hub, v1beta1.DynamoGraphDeployment)
        if isinstance(g, v1alpha1.DynamoGraphDeployment):
            assert [c.name for c in hub.spec.components or []] == sorted(g.spec.services or {})
            for c in hub.spec.components or []:
                svc = (g.spec.services or {})[c.name]
                if svc.component_type == "worker" and svc.sub_component_type in ("prefill", "decode"):
                    assert c.type == svc.sub_component_type
                if svc.multinode is not None:
                    assert c.multinode is not None and c.multinode.node_count == svc.multinode.node_count
