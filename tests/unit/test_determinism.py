"""Rendering and conversion give the same bytes whatever the interpreter's string hash seed (set
iteration order), so Pulumi diffs stay quiet from one process to the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from dynamo_infra.api import to_other_version, to_yaml
from dynamo_infra.api.conversion import convertible
from tests.conftest import REPO, load_corpus
from tests.unit.test_golden import cases, golden_name, graph_files, render_file

SEEDS = ("1", "2718")


def outputs() -> dict[str, str]:
    """Every golden render, and every corpus document converted to its other API version."""
    out = {golden_name(path, variant): render_file(path, variant) for path, variant in cases()}
    for path in graph_files():
        docs = [to_other_version(d) for d in load_corpus(path).documents if convertible(d)]
        out[f"converted/{path.parent.name}/{path.name}"] = to_yaml(docs) if docs else ""
    return out


def test_outputs_do_not_depend_on_the_hash_seed() -> None:
    code = (
        "import json, sys; from tests.unit.test_determinism import outputs; json.dump(outputs(), sys.stdout)"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": seed},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in SEEDS
    ]
    results: list[dict[str, str]] = []
    for seed, run in zip(SEEDS, runs, strict=True):
        stdout, stderr = run.communicate(timeout=120)
        assert run.returncode == 0, f"PYTHONHASHSEED={seed}: {stderr[-3000:]}"
        results.append(json.loads(stdout))
    first, second = results
    assert len(first) >= len(cases()) > 30
    assert first.keys() == second.keys()
    differing = sorted(name for name in first if first[name] != second[name])
    assert differing == [], f"output differs between PYTHONHASHSEED={SEEDS[0]} and {SEEDS[1]}"
