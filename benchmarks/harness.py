"""What the apply and fleet sections share: Pulumi set up offline, a local control plane, stacks of the
program over many graph files, median timing and a polynomial least-squares fit."""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from tools import toolchain
from tools.localcluster import LocalCluster

REPO = Path(__file__).resolve().parent.parent
# Passphrase of the benchmark stacks' secrets (throwaway state in a temporary folder).
PASSPHRASE = "dynamo-infra-bench"
# Quiet automation-API output.
QUIET: dict[str, Any] = {"on_output": lambda _: None}
# The packages the program and its providers import.
BYTE_COMPILED = ("dynamo_infra",)
# Timed repeats of each measurement (the median is reported).
REPEATS = 3


def compiled_sources() -> None:
    """This repository's packages byte-compiled, as `pip install` compiles an installed package and
    Python caches a checkout's on first import: where PYTHONDONTWRITEBYTECODE is set (this machine's
    image sets it), every program and provider process would otherwise compile them from source
    (~0.1 s per process), which no user pays and the pulumi-kubernetes SDK, installed, does not."""
    for package in BYTE_COMPILED:
        compileall.compile_dir(REPO / package, quiet=1)


def offline_pulumi(root: Path) -> None:
    """The pinned toolchain on PATH and Pulumi offline, as tests/conftest.py's offline_pulumi sets them;
    our packages byte-compiled (`compiled_sources`)."""
    compiled_sources()
    dirs = [str(d) for d in toolchain.bin_dirs()]
    os.environ["PATH"] = os.pathsep.join([*dirs, str(REPO / ".venv" / "bin"), os.environ["PATH"]])
    os.environ["PULUMI_SKIP_UPDATE_CHECK"] = "true"
    os.environ["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
    os.environ.setdefault("PULUMI_HOME", str(root / "pulumi-home"))
    toolchain.install_plugins(Path(os.environ["PULUMI_HOME"]))
    os.environ.setdefault("PULUMI_LANGUAGE_HOST_PYTHON", str(REPO / ".venv" / "bin" / "python"))
    os.environ["PULUMI_CONFIG_PASSPHRASE"] = PASSPHRASE


@contextlib.contextmanager
def local_cluster(root: Path) -> Iterator[LocalCluster]:
    """A started local control plane under `root`, stopped on exit."""
    cluster = LocalCluster(root / "cluster")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def project(root: Path, files: dict[str, str] | None = None) -> Path:
    """A Pulumi project folder under `root`: a copy of this repository's program, or `files`."""
    folder = root / "project"
    if folder.exists():
        return folder
    folder.mkdir(parents=True)
    if files is None:
        for file in ("Pulumi.yaml", "__main__.py"):
            shutil.copy(REPO / file, folder / file)
        (folder / "stacks").mkdir()
        (folder / "stacks" / "crds").symlink_to(REPO / "stacks" / "crds")
    else:
        for name, text in files.items():
            (folder / name).write_text(text)
    (folder / ".venv").symlink_to(REPO / ".venv")
    return folder


def stack(root: Path, name: str, config: dict[str, str], files: dict[str, str] | None = None) -> auto.Stack:
    """Stack `name` (file backend in `root`) of the project under `root`, with plain `config` values."""
    work_dir = str(project(root, files))
    opts = auto.LocalWorkspaceOptions(work_dir=work_dir, env_vars={"PULUMI_BACKEND_URL": f"file://{root}"})
    s = auto.create_stack(name, work_dir=work_dir, opts=opts)
    s.set_all_config({k: auto.ConfigValue(v) for k, v in config.items()})
    return s


def program_stack(
    root: Path, cluster: LocalCluster, name: str, graphs: list[Path], options: dict[str, Any]
) -> auto.Stack:
    """A stack of this repository's program deploying `graphs` with cluster options `options`."""
    return stack(
        root,
        name,
        {
            "dynamo-infra:kubeconfigPath": str(cluster.kubeconfig),
            "dynamo-infra:cluster": json.dumps(options),
            "dynamo-infra:graphs": json.dumps([str(g) for g in graphs]),
        },
    )


def timed(fn: Callable[[], Any]) -> float:
    """Wall time of `fn()` in seconds."""
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def median(samples: list[float]) -> float:
    return float(statistics.median(samples))


def polyfit(xs: list[float], ys: list[float], degree: int) -> list[float]:
    """Least-squares coefficients c0..c_degree of y = sum(c_i x^i) (normal equations)."""
    n = degree + 1
    a = [[sum(x ** (i + j) for x in xs) for j in range(n)] for i in range(n)]
    b = [sum(y * x**i for x, y in zip(xs, ys, strict=True)) for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot], b[col], b[pivot] = a[pivot], a[col], b[pivot], b[col]
        for r in range(n):
            if r != col and a[col][col]:
                f = a[r][col] / a[col][col]
                a[r] = [v - f * w for v, w in zip(a[r], a[col], strict=True)]
                b[r] -= f * b[col]
    return [b[i] / a[i][i] for i in range(n)]
