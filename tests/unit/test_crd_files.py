"""The shipped CRD files: names found by the line scan are the names YAML parsing finds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from dynamo_infra.components.crd_files import (
    CACHE_ENV,
    crd_document,
    crd_documents,
    crd_names,
    crd_sources,
    parsed,
    scanned_name,
)

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "stacks" / "crds"
SETS = sorted(p.name for p in CRD_DIR.iterdir() if p.is_dir())


@pytest.mark.parametrize("crd_set", SETS)
def test_scanned_names_are_the_parsed_names(crd_set: str) -> None:
    parsed = [
        d["metadata"]["name"]
        for f in sorted((CRD_DIR / crd_set).glob("*.yaml"))
        for d in yaml.load_all(f.read_text(), Loader=yaml.CSafeLoader)
        if d
    ]
    assert crd_names(CRD_DIR, crd_set) == parsed
    # Every shipped document's name is found by the scan, none by parsing.
    assert all(scanned_name(s.text) == s.name for s in crd_sources(CRD_DIR, crd_set))


def test_the_istio_stream_splits_into_its_documents() -> None:
    sources = crd_sources(CRD_DIR, "istio")
    assert len(sources) == 15
    assert [crd_document(s)["metadata"]["name"] for s in sources] == [s.name for s in sources]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("kind: X\nmetadata:\n  name: plain.example.com\nspec: {}\n", "plain.example.com"),
        ('metadata:\n  name: "quoted.example.com"  # why\n', "quoted.example.com"),
        ("metadata:\n  name: 'single.example.com'\n", "single.example.com"),
        # A nested `name` (a label's) is not the object's.
        ("metadata:\n  labels:\n    name: label\n  name: own.example.com\n", "own.example.com"),
        ("metadata:  # comment\n\n  # note\n  name: after.comments\n", "after.comments"),
    ],
)
def test_scanned_name_reads_block_metadata(text: str, name: str) -> None:
    assert scanned_name(text) == name


@pytest.mark.parametrize(
    "text",
    [
        "metadata: {name: flow.example.com}\n",  # flow style
        "metadata:\n  name: &anchor anchored\n",  # anchor
        'metadata:\n  name: "esc\\"aped"\n',  # escapes
        "metadata:\n  labels: {}\nspec:\n  name: not-metadata\n",  # no name in metadata
        "metadata:\n  name: one\n---\nmetadata:\n  name: two\n",  # two documents
        "spec:\n  metadata:\n    name: nested\n",  # no top-level metadata
    ],
)
def test_scanned_name_gives_up_when_unsure(text: str) -> None:
    assert scanned_name(text) is None


def _write(folder: Path, text: str) -> Path:
    (folder / "set").mkdir()
    (folder / "set" / "crd.yaml").write_text(text)
    return folder


def test_an_unscannable_document_is_named_by_parsing(tmp_path: Path) -> None:
    crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: flow.example.com}\n"
    root = _write(tmp_path, f"# header\n---\n{crd}---\n\n")
    assert crd_names(root, "set") == ["flow.example.com"]
    assert crd_documents(root, "set")[0]["metadata"]["name"] == "flow.example.com"


def test_a_document_that_is_not_a_crd_is_refused_when_parsed(tmp_path: Path) -> None:
    root = _write(tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")
    assert crd_names(root, "set") == ["cm"]
    with pytest.raises(ValueError, match=r"crd.yaml#0: ConfigMap is not a CustomResourceDefinition"):
        crd_documents(root, "set")


def test_an_empty_set_is_refused(tmp_path: Path) -> None:
    (tmp_path / "none").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no CRD files"):
        crd_names(tmp_path, "none")


def test_a_parsed_crd_is_kept_by_its_text_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    source = crd_sources(CRD_DIR, "dynamo")[0]
    expected = yaml.load(source.text, Loader=yaml.CSafeLoader)
    assert parsed(source.text, source.origin) == expected
    kept = list((tmp_path / "cache").glob("*.json"))
    assert len(kept) == 1 and not list((tmp_path / "cache").glob("*.tmp"))
    # Read back from the file (not parsed): a marker written into it comes back.
    doc = json.loads(kept[0].read_text())
    doc["metadata"]["annotations"] = {"kept": "yes"}
    kept[0].write_text(json.dumps(doc))
    assert parsed(source.text, source.origin)["metadata"]["annotations"] == {"kept": "yes"}
    # Another text is another file; a file cut short is parsed again and rewritten.
    other = crd_sources(CRD_DIR, "dynamo")[1]
    assert parsed(other.text, other.origin) == yaml.load(other.text, Loader=yaml.CSafeLoader)
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2
    kept[0].write_text("{")
    assert parsed(source.text, source.origin) == expected
    assert json.loads(kept[0].read_text()) == expected


def test_no_cache_folder_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    source = crd_sources(CRD_DIR, "dynamo")[0]
    assert parsed(source.text, source.origin)["kind"] == "CustomResourceDefinition"
    assert not list(tmp_path.rglob("*.json"))
    # A folder that cannot be written keeps nothing and fails nothing.
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(blocked / "cache"))
    assert parsed(source.text, source.origin)["kind"] == "CustomResourceDefinition"


def test_a_document_that_is_not_a_crd_is_never_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="ConfigMap is not a CustomResourceDefinition"):
        parsed("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n", "x#0")
    assert not (tmp_path / "cache").exists()
