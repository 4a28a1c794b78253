"""Stacks of many graphs (10, 50, 100 tiny 2-component mocker graphs, distinct names, one namespace,
`await: {mode: skip}`) on the local control plane: `preview`, first `up`, no-op `up`, an `up` changing
one graph (a replica bump), `destroy`; a fit of time against graphs (linear, and a quadratic term);
the effect of `--parallel`; the CPU seconds of each kind of process (the CLI, the program, the dynamic
providers, the control plane) during the largest stack's first `up` (`benchmarks.cpu`); the state's
size per graph and the serialized dynamic provider's size per resource. Figures on a shared machine
are upper bounds.

    . tools/env.sh && python -m benchmarks.fleet_bench [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from benchmarks import harness
from benchmarks.common import Figure, figure_name, table
from benchmarks.cpu import CpuSampler
from benchmarks.requests_bench import reads_writes, tally
from tools.localcluster import LocalCluster

# Stack sizes (graphs per stack); `--quick` runs the first two.
SIZES = (10, 50, 100)
QUICK_SIZES = (10, 50)
# Stack whose `preview` is timed at each `--parallel` (None: the CLI's default).
PARALLEL_SIZE = 50
PARALLELISM = (None, 4, 32)
NAMESPACE = "fleet"
# A quadratic term adding less than this share of the largest stack's time reads as linear.
LINEAR_SHARE = 0.10
# Type of the program's dynamic resources in the state.
DYNAMIC_TYPE = "pulumi-python:dynamic:Resource"
GRAPH = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: {name}
spec:
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec: {{mainContainer: {{image: nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.4.0}}}}
    worker:
      componentType: worker
      replicas: {replicas}
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.4.0
          command: [python3, -m, dynamo.mocker]
          args: [--model-path, /models/tiny-chat]
"""
# User agents of the control plane's own components (their requests are not the stack's).
SYSTEM_AGENTS = ("kube-", "kwok", "lws", "fake-", "kubelet")
# Targets (issues 15 and 29) of a stack of TARGET_SIZE graphs: seconds by step, no write in a no-op
# `up`, and the state each added graph costs.
TARGET_SIZE = 100
STEP_TARGETS = {"preview": 60.0, "first up": 90.0, "no-op up": 60.0, "destroy": 90.0}
NOOP_WRITES_TARGET = 0
STATE_PER_GRAPH_TARGET_KIB = 40.0
STEPS = ("preview", "first up", "no-op up", "one-graph change up", "destroy")
# Steps timed again on a second stack with Pulumi's checkpoints off (PULUMI_SKIP_CHECKPOINTS: the state
# is written once at the end, not after every step).
UNCHECKPOINTED_STEPS = ("first up", "destroy")
SKIP_CHECKPOINTS = "PULUMI_SKIP_CHECKPOINTS"


def graph_files(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True)
    paths = []
    for i in range(count):
        path = folder / f"g{i:03d}.yaml"
        path.write_text(GRAPH.format(name=f"g{i:03d}", replicas=1))
        paths.append(path)
    return paths


def bytes_by_type(deployment: dict[str, Any]) -> dict[str, int]:
    """Serialized state bytes per resource type (the provider's type for dynamic resources), largest first."""
    out: dict[str, int] = {}
    for r in deployment.get("resources") or []:
        kind = str(r.get("type"))
        if kind == DYNAMIC_TYPE:
            kind = f"dynamic:{r.get('urn', '').split('::')[-2].split('$')[-1]}"
        out[kind] = out.get(kind, 0) + len(json.dumps(r))
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def state_sizes(deployment: dict[str, Any]) -> tuple[int, list[int], int]:
    """(state bytes, `__provider` lengths of the dynamic resources, resource count)."""
    resources = deployment.get("resources") or []
    providers = [
        len(str(r.get("inputs", {}).get("__provider", "")))
        for r in resources
        if r.get("type") == DYNAMIC_TYPE
    ]
    return len(json.dumps(deployment)), providers, len(resources)


def preview(s: auto.Stack, parallel: int | None) -> None:
    """`preview` at this `--parallel` (None: the CLI's default)."""
    s.preview(parallel=parallel, **harness.QUIET)


def fleet_stack(root: Path, cluster: LocalCluster, name: str, graphs: list[Path]) -> auto.Stack:
    """Stack `name` of these graphs in a namespace of its own, without awaiting readiness."""
    return harness.program_stack(
        root,
        cluster,
        name,
        graphs,
        {"namespace": name.replace("fleet", f"{NAMESPACE}-"), "await": {"mode": "skip"}},
    )


def run_size(
    root: Path, cluster: LocalCluster, count: int, parallel: bool, sample_cpu: bool = False
) -> tuple[dict[str, float], dict[str, Any]]:
    graphs = graph_files(root / f"graphs-{count}", count)
    s = fleet_stack(root, cluster, f"fleet{count}", graphs)
    times: dict[str, float] = {}
    info: dict[str, Any] = {}
    q = harness.QUIET
    times["preview"] = harness.timed(lambda: s.preview(**q))
    with CpuSampler() if sample_cpu else contextlib.nullcontext() as cpu:
        times["first up"] = harness.timed(lambda: s.up(**q))
    if cpu is not None:
        info["first up cpu"] = cpu.by_kind()
    before = len(cluster.audit_events())
    times["no-op up"] = harness.timed(lambda: s.up(**q))
    events = cluster.audit_events()[before:]
    info["no-op requests"] = sum(
        1 for e in events if not str(e.get("userAgent", "")).startswith(SYSTEM_AGENTS)
    )
    info["no-op writes"] = reads_writes(tally(events))[1]
    deployment = dict(s.export_stack().deployment or {})
    size, providers, resources = state_sizes(deployment)
    info.update(state=size, providers=providers, resources=resources, by_type=bytes_by_type(deployment))
    print(
        f"[fleet] {count} graphs: {resources} resources; state bytes by type {info['by_type']}",
        file=sys.stderr,
    )
    if parallel:
        info["parallel"] = {p: harness.timed(functools.partial(preview, s, p)) for p in PARALLELISM}
    graphs[0].write_text(GRAPH.format(name="g000", replicas=2))
    times["one-graph change up"] = harness.timed(lambda: s.up(**q))
    times["destroy"] = harness.timed(lambda: s.destroy(**q))
    unchecked = fleet_stack(root, cluster, f"fleet{count}-unchecked", graphs)
    with without_checkpoints():
        for step, run in (("first up", unchecked.up), ("destroy", unchecked.destroy)):
            times[f"{step} skip checkpoints"] = harness.timed(functools.partial(run, **q))
    return times, info


@contextlib.contextmanager
def without_checkpoints() -> Iterator[None]:
    """Pulumi runs started meanwhile write the state once, at the end (SKIP_CHECKPOINTS)."""
    os.environ[SKIP_CHECKPOINTS] = "true"
    try:
        yield
    finally:
        del os.environ[SKIP_CHECKPOINTS]


def step_target(graphs: int, step: str) -> float | None:
    """The step's wall-time target at this stack size (only at TARGET_SIZE)."""
    return STEP_TARGETS.get(step) if graphs == TARGET_SIZE else None


def fit(sizes: list[int], ys: list[float], label: str) -> list[Figure]:
    """Linear fit (seconds per graph) and, with three sizes or more, the quadratic term's share."""
    xs = [float(n) for n in sizes]
    _, slope = harness.polyfit(xs, ys, 1)
    out = [
        Figure(
            figure_name("fleet", label, "per_graph"), slope, "s/graph", detail={"sizes": sizes, "times": ys}
        )
    ]
    if len(sizes) >= 3:
        c = harness.polyfit(xs, ys, 2)
        share = c[2] * max(xs) ** 2 / max(ys)
        out.append(
            Figure(
                figure_name("fleet", label, "quadratic_share"),
                share,
                "fraction",
                target=LINEAR_SHARE,
                note=f"of the time at {max(sizes)} graphs",
                detail={
                    "coefficients": c,
                    "reads": "linear" if abs(share) < LINEAR_SHARE else "worse than linear",
                },
            )
        )
    return out


def figures(quick: bool) -> list[Figure]:
    """Every figure at SIZES (quick: QUICK_SIZES)."""
    return measure(list(QUICK_SIZES if quick else SIZES))


def measure(sizes: list[int]) -> list[Figure]:
    """Every figure for stacks of these many graphs (`--parallel` at PARALLEL_SIZE, if among them)."""
    out: list[Figure] = []
    results: dict[int, tuple[dict[str, float], dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        harness.offline_pulumi(root)
        with harness.local_cluster(root) as cluster:
            for n in sizes:
                results[n] = run_size(
                    root, cluster, n, parallel=n == PARALLEL_SIZE, sample_cpu=n == max(sizes)
                )
                times, info = results[n]
                for step in [*STEPS, *(f"{u} skip checkpoints" for u in UNCHECKPOINTED_STEPS)]:
                    out.append(
                        Figure(
                            figure_name("fleet", n, f"{step}_s"),
                            times[step],
                            "s",
                            target=step_target(n, step),
                        )
                    )
                out.append(
                    Figure(figure_name("fleet", n, "first_up_per_graph"), times["first up"] / n, "s/graph")
                )
                out.append(
                    Figure(
                        figure_name("fleet", n, "noop_up_writes"),
                        info["no-op writes"],
                        "requests",
                        target=NOOP_WRITES_TARGET,
                    )
                )
                out.append(
                    Figure(
                        figure_name("fleet", n, "state_per_graph"),
                        info["state"] / n / 1024,
                        "KiB",
                        detail={"resources": info["resources"], "bytes by type": info["by_type"]},
                    )
                )
                out.append(
                    Figure(
                        figure_name("fleet", n, "noop_up_requests_per_graph"),
                        info["no-op requests"] / n,
                        "requests/graph",
                    )
                )
                providers = info["providers"]
                if providers:
                    out.append(
                        Figure(
                            figure_name("fleet", n, "provider_input_per_resource"),
                            sum(providers) / len(providers) / 1024,
                            "KiB",
                            detail={
                                "max": max(providers),
                                "dynamic resources": len(providers),
                                "share of state": sum(providers) / info["state"],
                            },
                        )
                    )
                for kind, seconds in (info.get("first up cpu") or {}).items():
                    out.append(Figure(figure_name("fleet", n, "first_up_cpu", kind), seconds, "s"))
                for p, t in (info.get("parallel") or {}).items():
                    out.append(
                        Figure(figure_name("fleet", n, f"preview_parallel_{p or 'default'}_s"), t, "s")
                    )
                print(f"[fleet] {n} graphs: {times}", file=sys.stderr, flush=True)
    if len(sizes) >= 2:
        _, marginal = harness.polyfit([float(n) for n in sizes], [results[n][1]["state"] for n in sizes], 1)
        out.append(
            Figure(
                figure_name("fleet", "state_per_added_graph"),
                marginal / 1024,
                "KiB/graph",
                target=STATE_PER_GRAPH_TARGET_KIB,
            )
        )
        _, per_graph = harness.polyfit(
            [float(n) for n in sizes], [results[n][1]["resources"] for n in sizes], 1
        )
        out.append(Figure(figure_name("fleet", "resources_per_added_graph"), per_graph, "resources/graph"))
    fitted = (
        "first up",
        "no-op up",
        "preview",
        "destroy",
        "first up skip checkpoints",
        "destroy skip checkpoints",
    )
    for step in fitted if len(sizes) >= 2 else ():
        out += fit(sizes, [results[n][0][step] for n in sizes], step)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help=f"stacks of {QUICK_SIZES} graphs only")
    parser.add_argument("--sizes", help=f"comma-separated stack sizes (default {SIZES})")
    args = parser.parse_args()
    sizes = (
        [int(n) for n in args.sizes.split(",")] if args.sizes else list(QUICK_SIZES if args.quick else SIZES)
    )
    print(table(measure(sizes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
