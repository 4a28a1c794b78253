"""The code is kept formatted, linted and type-checked (ruff and mypy as configured in pyproject)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def run(repo: Path, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name(tool)
    return subprocess.run([str(exe), *args], cwd=repo, capture_output=True, text=True)


@pytest.mark.parametrize(
    "args", [("format", "--check", "."), ("check", ".")], ids=["ruff-format", "ruff-check"]
)
def test_ruff(repo: Path, args: tuple[str, ...]) -> None:
    out = run(repo, "ruff", *args)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


def test_mypy_strict(repo: Path) -> None:
    out = run(repo, "mypy")
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-2000:]
    assert out.stdout.startswith("Success: no issues found")
