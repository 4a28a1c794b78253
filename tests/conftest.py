"""The test lanes (each test marked by its folder; a bare `pytest` runs the unit lane) and shared
fixtures: paths of the repository and its test data (`tests/data/`); for the integration
and end-to-end suites, the offline toolchain and one local control plane per test session."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dynamo_infra.api import Loaded, load_yaml
from tests import leftovers
from tools import toolchain
from tools.localcluster import LocalCluster

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
# Upstream graphs, CRDs and operator expectations, byte for byte (tests/data/SOURCES).
CORPUS = DATA / "corpus"
# What a wheel is built from (pyproject's packages and package data), as the agent's Dockerfile copies it.
WHEEL_SOURCES = ("pyproject.toml", "dynamo_infra")
# Where the run keeps the marker of the processes it starts.
RUN_MARKER = pytest.StashKey[str]()
# The lanes: a test's folder under tests/ is its lane, and the lane its marker (pyproject's markers).
LANES = ("unit", "static", "integration", "e2e")
# Lanes a bare `pytest` leaves out (uncollected: their modules are not even imported); `-m` selects
# them, as does naming a path inside their folder. `static` is tools/static-checks' lane.
OPT_IN_LANES = ("static", "integration", "e2e")
# Per-test time limit of the unit lane (pytest-timeout); the other lanes keep pyproject's `timeout`.
UNIT_TIMEOUT_S = 60
# Test files that take longest (minutes each, tools/run-tests' `--durations`), run first: the parallel
# workers (pytest-xdist, whole files each) then end together instead of one finishing a long file alone.
LONGEST_FIRST = (
    "integration/test_stacks.py",
    "e2e/test_serving.py",
    "integration/test_reconcile.py",
    "e2e/test_planner.py",
    "integration/test_records.py",
    "integration/test_checkpoint.py",
    "integration/test_faults.py",
    "integration/test_snapshot.py",
)


def load_corpus(source: Path | str) -> Loaded:
    """A corpus file loaded as the operator's controllers saw it in the parity run, whose validating
    webhook was off: the corpus holds graphs that webhook denies (placeholder image tags, checkpoint
    graphs, ...), so admission is off here on purpose (`tests/unit/test_admission_corpus.py` checks
    the webhook's verdict on each)."""
    return load_yaml(source, admission=False)


def build_wheel(out: Path) -> Path:
    """This checkout's wheel, built in `out` from a clean copy of its sources: setuptools packs whatever
    an earlier build left in `build/lib` (a package since moved or removed, too)."""
    src = out / "src"
    src.mkdir(parents=True)
    for name in WHEEL_SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(REPO / name, src / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("dynamo_infra-*.whl")
    return wheel


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    """A terminated run (CI's time limit, a `kill`) still tears down: SIGTERM ends it as Ctrl-C
    does, so fixtures stop the local control plane and the processes the e2e harness started. Every
    process the run starts is marked (`tests/leftovers.py`)."""
    signal.signal(signal.SIGTERM, _interrupted)
    config.stash[RUN_MARKER] = leftovers.mark_run()


def lane_of(path: Path) -> str | None:
    """The lane of a path under tests/ (its first folder there), None outside a lane's folder."""
    try:
        parts = path.resolve().relative_to(REPO / "tests").parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 and parts[0] in LANES else None


def named_lanes(config: pytest.Config) -> set[str]:
    """The lanes of the paths given on the command line (not pyproject's `testpaths`)."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return set()
    root = config.invocation_params.dir
    lanes = {lane_of(root / arg.split("::")[0]) for arg in config.args}
    return {lane for lane in lanes if lane}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Without `-m`, an opt-in lane's folder is collected only when a path inside it is named."""
    if config.option.markexpr or collection_path.parent != REPO / "tests":
        return None
    lane = collection_path.name
    if lane in OPT_IN_LANES and lane not in named_lanes(config):
        return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test carries its lane's marker; a unit test gets the unit time limit unless it sets its
    own or the command line (or PYTEST_TIMEOUT) sets one."""
    timeout_given = config.getoption("timeout", None) is not None or "PYTEST_TIMEOUT" in os.environ
    items.sort(key=_longest_first)  # stable: each file's tests keep their order
    for item in items:
        lane = lane_of(item.path)
        if lane is None:
            raise pytest.UsageError(
                f"{item.nodeid}: a test lives in a lane's folder: tests/{{{','.join(LANES)}}}"
            )
        item.add_marker(lane)
        if lane == "unit" and not timeout_given and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(UNIT_TIMEOUT_S))


def _longest_first(item: pytest.Item) -> int:
    """The rank of the item's file in LONGEST_FIRST (every other file after them, in collection order)."""
    try:
        return LONGEST_FIRST.index(item.path.relative_to(REPO / "tests").as_posix())
    except ValueError:
        return len(LONGEST_FIRST)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run fails if a process it started is still alive at its end (each is listed and killed)."""
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: its siblings carry the marker too; the controller checks after all end
    found = leftovers.leftovers(session.config.stash[RUN_MARKER])
    if not found:
        return
    lines = [f"  pid {p.pid}: {p.command}" for p in found]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = "processes started by the test run outlived it (killed now):\n" + "\n".join(lines)
    if reporter is not None:
        reporter.write_line(message, red=True)
    else:
        print(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def corpus() -> Path:
    return CORPUS


@pytest.fixture()
def event_loop_for_mocks() -> None:
    """Pulumi mocks need a current asyncio loop; earlier tests (Automation API) may leave none."""
    import asyncio

    asyncio.set_event_loop(asyncio.new_event_loop())


@pytest.fixture(scope="session")
def offline_pulumi(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The pinned toolchain on PATH and Pulumi set up to run offline (as tools/env.sh does)."""
    dirs = [str(d) for d in toolchain.bin_dirs()]
    os.environ["PATH"] = os.pathsep.join([*dirs, str(REPO / ".venv" / "bin"), os.environ["PATH"]])
    os.environ["PULUMI_SKIP_UPDATE_CHECK"] = "true"
    os.environ["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
    os.environ.setdefault("PULUMI_HOME", str(tmp_path_factory.mktemp("pulumi-home")))
    toolchain.install_plugins(Path(os.environ["PULUMI_HOME"]))
    os.environ.setdefault("PULUMI_LANGUAGE_HOST_PYTHON", str(REPO / ".venv" / "bin" / "python"))
    os.environ["PULUMI_CONFIG_PASSPHRASE"] = "integration-tests"


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.start()
        yield c
    finally:
        c.stop()
