"""The shipped CRD files (`stacks/crds/<set>/*.yaml`): each document's name found without parsing it,
and its YAML parsed only when the platform installs it.

The Dynamo set alone is 1.6 MB of YAML (~190 ms to parse with libyaml), and most runs need only the
names: the ownership check reads every Dynamo CRD's metadata by name, and a CRD another tool installed
is never applied. A document whose name the line scan cannot read for certain is parsed instead.

A stack that installs the CRDs parses them on every run of its program (`up` runs it twice): each
parsed document is kept as JSON (~10 ms to read back) in a cache folder, named by the SHA-256 of its
text and of the parser, so a kept document is always the parse of the text it is read for.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# The cache folder of parsed CRD documents, when set ("" keeps none); else $XDG_CACHE_HOME (or
# ~/.cache) / CACHE_SUBDIR.
CACHE_ENV = "DYNAMO_INFRA_CACHE_DIR"
CACHE_SUBDIR = Path("dynamo-infra") / "crds"

# A YAML document marker line (`---`, maybe with a comment or trailing spaces), with the newline
# before it (matched on the text after a newline: a literal prefix is searched fast).
DOCUMENT_MARKER = re.compile(r"\n---[ \t]*(?:#[^\n]*)?(?=\n|$)")
# A top-level `metadata` key line, with the newline before it.
METADATA_LINE = re.compile(r"\nmetadata:[^\n]*")
# A line with YAML content (not blank, not a comment).
CONTENT_LINE = re.compile(r"^[ \t]*[^\s#]", re.M)
# The top-level `metadata:` key of a block-style document (nothing after it but a comment).
METADATA_KEY = re.compile(r"^metadata:[ \t]*(#.*)?$")
# `name: <plain or quoted scalar>` (a trailing comment allowed) at one indentation level.
NAME_KEY = re.compile(
    r"""^(?P<indent>[ ]+)name:[ \t]+(?P<value>"[^"\\]*"|'[^']*'|[A-Za-z0-9][\w.-]*)[ \t]*(#.*)?$"""
)


@dataclass(frozen=True)
class CrdSource:
    """One CRD document of a shipped set: its name and its YAML text."""

    name: str
    text: str
    # Where it comes from, for errors: `<file>#<index of the document in the file>`.
    origin: str


def _documents(text: str) -> list[str]:
    """The texts of a YAML stream's documents (split at `---` lines; empty ones dropped)."""
    return [t.removeprefix("\n") for t in DOCUMENT_MARKER.split("\n" + text) if CONTENT_LINE.search(t)]


def _lines(text: str, start: int) -> Iterator[str]:
    """The lines of `text` from `start` on, one at a time (a metadata block is a few lines of 1.6 MB)."""
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        yield text[start:end]
        start = end + 1


def scanned_name(text: str) -> str | None:
    """`metadata.name` of a block-style document read line by line; None when not certain (flow
    style, anchors, tags, multi-line or escaped scalars, a second `metadata`)."""
    keys = list(METADATA_LINE.finditer("\n" + text))
    if len(keys) != 1 or not METADATA_KEY.match(keys[0].group()[1:]):
        return None
    indent: str | None = None
    # The match is in `text` after a newline: its end there is the start of the next line.
    for line in _lines(text, keys[0].end()):
        if not CONTENT_LINE.match(line):
            continue
        if not line.startswith(" "):
            return None  # the metadata block ended without a name
        own = line[: len(line) - len(line.lstrip(" "))]
        indent = own if indent is None else indent
        if own == indent and line.lstrip(" ").startswith("name:"):
            found = NAME_KEY.match(line)
            if found is None or found["indent"] != indent:
                return None
            value = found["value"]
            return value[1:-1] if value[0] in "\"'" else value
    return None


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _is_crd(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"


def _checked(text: str, origin: str) -> dict[str, Any]:
    """One document parsed, checked to be a CustomResourceDefinition."""
    doc = yaml.load(text, Loader=_LOADER)
    if not _is_crd(doc):
        kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"{origin}: {kind} is not a CustomResourceDefinition")
    return doc  # type: ignore[no-any-return]


def cache_dir() -> Path | None:
    """The folder parsed CRD documents are kept in (None: none is kept)."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return Path(chosen) if chosen else None
    base = os.environ.get("XDG_CACHE_HOME")
    try:
        return (Path(base) if base else Path.home() / ".cache") / CACHE_SUBDIR
    except RuntimeError:  # no home folder
        return None


def _cache_file(folder: Path, text: str) -> Path:
    parser = f"{yaml.__version__}/{_LOADER.__module__}.{_LOADER.__name__}"
    digest = hashlib.sha256(f"{parser}\n{text}".encode()).hexdigest()
    return folder / f"{digest}.json"


def _kept(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # absent, unreadable or cut short: parsed again
    return doc if _is_crd(doc) else None


def _keep(path: Path, doc: dict[str, Any]) -> None:
    """Write `doc` to `path` when JSON holds it exactly (written whole, then renamed: a reader never
    sees half a file); a folder that cannot be written keeps nothing."""
    written = ""
    try:
        text = json.dumps(doc, separators=(",", ":"))
        if json.loads(text) != doc:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=path.parent, suffix=".tmp", delete=False
        ) as f:
            written = f.name
            f.write(text)
        os.replace(written, path)
    except (OSError, TypeError, ValueError):
        if written:
            with contextlib.suppress(OSError):
                os.unlink(written)


def parsed(text: str, origin: str) -> dict[str, Any]:
    """`_checked(text, origin)`, read from the cache folder when it holds that text's parse."""
    folder = cache_dir()
    if folder is None:
        return _checked(text, origin)
    path = _cache_file(folder, text)
    doc = _kept(path)
    if doc is None:
        doc = _checked(text, origin)
        _keep(path, doc)
    return doc


@functools.cache
def crd_sources(crd_dir: Path, crd_set: str) -> tuple[CrdSource, ...]:
    """The documents of one shipped set, named (every YAML document of its folder; read once)."""
    files = sorted((crd_dir / crd_set).glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"{crd_dir / crd_set} holds no CRD files")
    sources = []
    for f in files:
        for i, text in enumerate(_documents(f.read_text())):
            origin = f"{f}#{i}"
            name = scanned_name(text)
            if name is None:
                name = str((_checked(text, origin).get("metadata") or {}).get("name", ""))
            sources.append(CrdSource(name, text, origin))
    return tuple(sources)


@functools.cache
def crd_document(source: CrdSource) -> dict[str, Any]:
    """A source's CustomResourceDefinition, parsed once (and kept: `parsed`)."""
    return parsed(source.text, source.origin)


def crd_names(crd_dir: Path, crd_set: str) -> list[str]:
    """Names of one shipped set's CRDs, in file order (not parsed)."""
    return [s.name for s in crd_sources(crd_dir, crd_set)]


def crd_documents(crd_dir: Path, crd_set: str) -> tuple[dict[str, Any], ...]:
    """Every CustomResourceDefinition of one shipped set, parsed."""
    return tuple(crd_document(s) for s in crd_sources(crd_dir, crd_set))
