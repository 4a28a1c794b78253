"""Render time per single-node corpus graph (parse excluded): `.venv/bin/python benchmarks/render_bench.py`."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from dynamo_infra.api import DynamoValidationError, load_yaml
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "graphs"
# Timed renders per graph (after one warm-up render).
RUNS = 50


def main() -> int:
    options = ClusterOptions()
    print(f"{'graph':58} {'objects':>7} {'median ms':>10} {'p95 ms':>8}")
    for path in sorted(p for d in ("v1alpha1", "v1beta1") for p in (CORPUS / d).glob("*.yaml")):
        for dgd in load_yaml(path).graphs:
            label = f"{path.parent.name}/{path.name}:{dgd.name}"
            try:
                rendered = render_graph(dgd, options, "bench")
            except DynamoValidationError as e:
                print(f"{label:58} skipped ({str(e).splitlines()[0][:60]})")
                continue
            times = []
            for _ in range(RUNS):
                t = time.perf_counter()
                render_graph(dgd, options, "bench")
                times.append((time.perf_counter() - t) * 1000)
            times.sort()
            count = len(rendered.all_objects()) + len(rendered.components)
            print(
                f"{label:58} {count:7d} {statistics.median(times):10.2f} {times[int(0.95 * len(times)) - 1]:8.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
