"""Render time per corpus graph (parse excluded), with the default options and, for multinode, DRA
and checkpoint graphs, with the cluster kinds they need: `.venv/bin/python benchmarks/render_bench.py`."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

from dynamo_infra.api import AnyDGD, DynamoValidationError, load_yaml, to_hub
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpus" / "graphs"
# Timed renders per graph (after one warm-up render).
RUNS = 50
# Cluster kinds multinode / DRA / checkpoint graphs are also timed with.
CLUSTERS: dict[str, dict[str, Any]] = {
    "lws": {"multinode": {"orchestrator": "lws"}, "dra": {"enabled": True}},
    "grove": {"multinode": {"orchestrator": "grove"}, "dra": {"enabled": True}},
    "dra": {"dra": {"enabled": True}},
    "checkpoint": {"checkpoint": {"enabled": True}},
}


def clusters_for(dgd: AnyDGD) -> list[str]:
    comps = to_hub(dgd).spec.components or []
    exp = [c.experimental.to_wire() if c.experimental else {} for c in comps]
    out = []
    if any(c.multinode is not None for c in comps):
        out += ["lws", "grove"]
    elif any("gpuMemoryService" in e or "failover" in e for e in exp):
        out += ["dra", "grove"]
    if any(e.get("checkpoint", {}).get("enabled") for e in exp):
        out.append("checkpoint")
    return out


def main() -> int:
    print(f"{'graph':70} {'objects':>7} {'median ms':>10} {'p95 ms':>8}")
    for path in sorted(p for d in ("v1alpha1", "v1beta1") for p in (CORPUS / d).glob("*.yaml")):
        # Admission off: the corpus holds graphs the webhook denies; this times rendering only.
        for dgd in load_yaml(path, admission=False).graphs:
            for cluster in [None, *clusters_for(dgd)]:
                options = ClusterOptions.parse(CLUSTERS[cluster]) if cluster else ClusterOptions()
                label = f"{path.parent.name}/{path.name}:{dgd.name}" + (f" [{cluster}]" if cluster else "")
                try:
                    rendered = render_graph(dgd, options, "bench")
                except DynamoValidationError as e:
                    print(f"{label:70} rejected ({str(e).splitlines()[0][:60]})")
                    continue
                times = []
                for _ in range(RUNS):
                    t = time.perf_counter()
                    render_graph(dgd, options, "bench")
                    times.append((time.perf_counter() - t) * 1000)
                times.sort()
                count = len(rendered.all_objects()) + len(rendered.components)
                p95 = times[int(0.95 * len(times)) - 1]
                print(f"{label:70} {count:7d} {statistics.median(times):10.2f} {p95:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
