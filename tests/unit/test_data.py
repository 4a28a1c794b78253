"""The test data is what tests/data/SOURCES lists, byte for byte, and the tests read nothing outside
the repository."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tests.conftest import CORPUS, DATA, REPO

SECTION = re.compile(r"^\[(?P<folder>[^\]]+)\]\s+(?P<source>\S.*)$")
ENTRY = re.compile(r"^(?P<name>\S+)\s+(?P<size>\d+)\s+(?P<sha256>[0-9a-f]{64})(?:\s+(?P<upstream>\S.*))?$")


def listed() -> dict[str, tuple[int, str, str]]:
    """`path under tests/data` -> (bytes, sha256, upstream) of every file SOURCES lists."""
    out: dict[str, tuple[int, str, str]] = {}
    folder = source = ""
    for n, line in enumerate((DATA / "SOURCES").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if m := SECTION.match(line):
            folder, source = m["folder"], m["source"]
            continue
        m = ENTRY.match(line)
        assert m and folder, f"SOURCES:{n}: not `file  bytes  sha256` under a `[folder]` section: {line!r}"
        path = f"{folder}/{m['name']}"
        assert path not in out, f"SOURCES:{n}: {path} listed twice"
        out[path] = (int(m["size"]), m["sha256"], m["upstream"] or source)
    return out


def test_every_data_file_is_listed_with_its_size_and_hash() -> None:
    entries = listed()
    present = {p.relative_to(DATA).as_posix() for p in CORPUS.rglob("*") if p.is_file()}
    assert sorted(present - entries.keys()) == [], "files under tests/data/corpus missing from SOURCES"
    assert sorted(entries.keys() - present) == [], "files SOURCES lists that are missing"
    for path, (size, sha256, _) in entries.items():
        data = (DATA / path).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (size, sha256), (
            f"{path} differs from upstream"
        )


def test_every_upstream_file_names_its_commit() -> None:
    for path, (_, _, upstream) in listed().items():
        if not path.endswith("/README.md"):
            pinned = r"^(\S+@[0-9a-f]{40}|[0-9a-f]{12,40}|pypi:\S+==\S+)\s+\S"
            assert re.match(pinned, upstream), f"{path}: {upstream!r}"


def test_tests_read_nothing_beside_the_repository() -> None:
    """No test, fixture or test helper builds a path to the folder next to the repository."""
    beside = re.compile(r'/\s*"shared"\s*(/|\)|$)|\.\./shared|/work/shared')
    offenders = [
        f"{p.relative_to(REPO)}:{n}"
        for p in sorted((REPO / "tests").rglob("*.py"))
        if p != Path(__file__)
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if beside.search(line)
    ]
    assert offenders == []
