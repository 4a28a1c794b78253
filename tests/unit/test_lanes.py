"""The test lanes (tests/conftest.py): a bare `pytest` runs the unit lane alone; every test lives in a
lane's folder and carries its marker; tools/static-checks and tools/run-tests run the rest."""

from __future__ import annotations

import os
import shlex
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import conftest
from tests.conftest import LANES, lane_of

TESTS = conftest.REPO / "tests"


def fake_config(markexpr: str = "", args: tuple[str, ...] = (), cwd: Path = conftest.REPO) -> pytest.Config:
    """What the lane hooks read of pytest's configuration."""
    source = pytest.Config.ArgsSource.ARGS if args else pytest.Config.ArgsSource.TESTPATHS
    return SimpleNamespace(  # type: ignore[return-value]
        option=SimpleNamespace(markexpr=markexpr),
        args_source=source,
        args=list(args) or ["tests"],
        invocation_params=SimpleNamespace(dir=cwd),
    )


def collected(config: pytest.Config) -> set[str]:
    return {lane for lane in LANES if not conftest.pytest_ignore_collect(TESTS / lane, config)}


def test_every_test_module_lives_in_a_lanes_folder() -> None:
    modules = sorted(TESTS.rglob("test_*.py"))
    assert modules
    assert [m for m in modules if lane_of(m) is None] == []
    assert {lane_of(m) for m in modules} == set(LANES)


def test_each_lane_is_a_registered_marker() -> None:
    pytest_ini = tomllib.loads((conftest.REPO / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"
    ]
    markers = [m.split(":")[0] for m in pytest_ini["markers"]]
    assert sorted(markers) == sorted(LANES)
    assert pytest_ini["testpaths"] == ["tests"]


def test_a_bare_pytest_collects_the_unit_lane_alone() -> None:
    assert collected(fake_config()) == {"unit"}
    assert collected(fake_config(args=("tests",))) == {"unit"}


def test_a_path_inside_a_lane_or_a_marker_selects_it() -> None:
    assert collected(fake_config(args=("tests/integration/test_faults.py::test_x", "tests/unit"))) == {
        "unit",
        "integration",
    }
    assert collected(fake_config(args=("test_serving.py",), cwd=TESTS / "e2e")) == {"unit", "e2e"}
    # With -m every folder is collected and the markers decide.
    assert collected(fake_config(markexpr="integration")) == set(LANES)
    assert conftest.pytest_ignore_collect(TESTS / "unit" / "test_lanes.py", fake_config()) is None


def test_static_checks_run_every_tool_before_the_pytest_lanes() -> None:
    tools = conftest.REPO / "tools"
    static = (tools / "static-checks").read_text()
    assert os.access(tools / "static-checks", os.X_OK)
    steps = [
        shlex.split(line.partition("step ")[2])
        for line in static.splitlines()
        if line.startswith("step ") or (not line.startswith("#") and " step " in line)
    ]
    assert [[Path(s[0]).name, *s[1:]] for s in steps] == [
        ["ruff", "format", "--check", "."],
        ["ruff", "check", "."],
        ["mypy"],
        ["lint-imports"],
        ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "static", "tests/static"],
        ["build-docs", "-q"],
    ]
    run_tests = (tools / "run-tests").read_text().splitlines()
    (lanes,) = [i for i, line in enumerate(run_tests) if line.startswith("python -m pytest ")]
    assert run_tests.index("tools/static-checks") < lanes
    assert shlex.split(run_tests[lanes])[3:5] == ["-m", "unit or integration or e2e"]
    assert run_tests[lanes].endswith('--dist loadfile "$@"')


def test_the_longest_files_run_first_and_exist() -> None:
    for name in conftest.LONGEST_FIRST:
        assert (conftest.REPO / "tests" / name).is_file(), name

    class Item:
        def __init__(self, name: str) -> None:
            self.path = conftest.REPO / "tests" / name

    items = [Item(n) for n in ("unit/test_lanes.py", "e2e/test_serving.py", "integration/test_stacks.py")]
    items.sort(key=conftest._longest_first)  # type: ignore[arg-type]
    assert [i.path.name for i in items] == ["test_stacks.py", "test_serving.py", "test_lanes.py"]
