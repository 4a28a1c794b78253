"""Fleet-scale figures, one table: `benchmarks/run [--only render,requests] [--json out.json] [--quick]`.

Each section is a module exposing `figures(quick: bool) -> list[Figure]` (benchmarks.common.Figure).
The JSON holds the machine (cores, memory, load), the toolchain versions and every figure.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.common import Figure, table

# Sections in run order: name -> module exposing `figures(quick: bool) -> list[Figure]`.
SECTIONS: dict[str, str] = {
    "render": "benchmarks.render_bench",
    "requests": "benchmarks.requests_bench",
    "apply": "benchmarks.apply_bench",
    "fleet": "benchmarks.fleet_bench",
    "faults": "benchmarks.faults_bench",
}


def _first_line(cmd: list[str]) -> str:
    """The first output line of a version command ('' if it cannot run)."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else ""


def _dist(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def machine() -> dict[str, Any]:
    """Cores, memory, load and Python of this machine."""
    meminfo = dict(
        line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line
    )
    return {
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "memory_gib": round(int(meminfo["MemTotal"].split()[0]) / 2**20, 1),
        "load_average": list(os.getloadavg()),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def toolchain_versions() -> dict[str, Any]:
    """Pinned versions (tools/toolchain.toml) and what the programs on PATH report."""
    from tools import toolchain

    pinned = toolchain.versions()
    return {
        "pinned": {name: section.get("version") for name, section in pinned.items()},
        "pulumi_cli": _first_line(["pulumi", "version"]),
        "pulumi_sdk": _dist("pulumi"),
        "pulumi_kubernetes_sdk": _dist("pulumi-kubernetes"),
        "kube_apiserver": _first_line(["kube-apiserver", "--version"]),
        "kubectl": _first_line(["kubectl", "version", "--client"]),
        "etcd": _first_line(["etcd", "--version"]),
    }


def select(only: str | None, sections: dict[str, str] = SECTIONS) -> list[str]:
    """Section names to run, in table order; raises ValueError naming unknown ones."""
    if not only:
        return list(sections)
    wanted = [s.strip() for s in only.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in sections]
    if unknown:
        raise ValueError(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(sections)}")
    return [s for s in sections if s in wanted]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks/run", description=__doc__.splitlines()[0])
    ap.add_argument("--only", help=f"comma-separated sections (default all: {', '.join(SECTIONS)})")
    ap.add_argument("--json", type=Path, help="write machine, versions and figures here")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    args = ap.parse_args(argv)
    try:
        names = select(args.only)
    except ValueError as e:
        ap.error(str(e))
    report: dict[str, Any] = {"machine": machine(), "toolchain": toolchain_versions(), "quick": args.quick}
    figures: list[Figure] = []
    sections: dict[str, Any] = {}
    for name in names:
        run: Callable[[bool], list[Figure]] = importlib.import_module(SECTIONS[name]).figures
        print(f"[benchmarks] {name} ...", file=sys.stderr, flush=True)
        started = time.monotonic()
        got = run(args.quick)
        sections[name] = {
            "seconds": round(time.monotonic() - started, 1),
            "figures": [f.to_json() for f in got],
        }
        figures += got
    report["load_average_after"] = list(os.getloadavg())
    report["sections"] = sections
    print(table(figures))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if all(f.met is not False for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
