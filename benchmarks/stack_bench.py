"""End-to-end figures on the local control plane: cluster start, first `up` of a 3-component graph,
no-op `up` (and the API requests it makes, by client), update of one component, destroy.

    . tools/env.sh && python -m benchmarks.stack_bench
"""

from __future__ import annotations

import collections
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import local_stack
from tools import toolchain
from tools.localcluster import LocalCluster

GRAPH = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: bench
spec:
  backendFramework: vllm
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec: {mainContainer: {image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0}}
    Decode:
      componentType: worker
      subComponentType: decode
      replicas: 2
      resources: {limits: {gpu: "1"}}
      extraPodSpec: {mainContainer: {image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0, command: [python3, -m, dynamo.vllm]}}
    Prefill:
      componentType: worker
      subComponentType: prefill
      replicas: 2
      resources: {limits: {gpu: "1"}}
      extraPodSpec: {mainContainer: {image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0, command: [python3, -m, dynamo.vllm]}}
"""


def timed(label: str, fn):  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    out = fn()
    print(f"{label:<42} {time.monotonic() - t0:7.1f} s", flush=True)
    return out


def requests_by_agent(events: list[dict]) -> dict[str, collections.Counter[str]]:  # type: ignore[type-arg]
    out: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for e in events:
        agent = str(e.get("userAgent", "")).split("/")[0] or "?"
        out[agent]["write" if e["verb"] not in ("get", "list", "watch") else "read"] += 1
    return out


def main() -> int:
    toolchain.bin_dirs()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        cluster = timed("local control plane start", lambda: LocalCluster(root / "cluster").start())
        try:
            graph = root / "bench.yaml"
            graph.write_text(GRAPH)
            stack = local_stack(root, cluster, "bench", graph, "bench")
            quiet = {"on_output": lambda _: None}
            timed("first up (3 components, awaited)", lambda: stack.up(**quiet))
            before = len(cluster.audit_events())
            timed("no-op up", lambda: stack.up(**quiet))
            for agent, counts in sorted(requests_by_agent(cluster.audit_events()[before:]).items()):
                print(
                    f"  no-op up requests by {agent:<32} reads {counts['read']:3}  writes {counts['write']:3}"
                )
            graph.write_text(
                GRAPH.replace(
                    'replicas: 2\n      resources: {limits: {gpu: "1"}}\n      extraPodSpec: {mainContainer: {image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0, command: [python3, -m, dynamo.vllm]}}\n    Prefill',
                    'replicas: 3\n      resources: {limits: {gpu: "1"}}\n      extraPodSpec: {mainContainer: {image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0, command: [python3, -m, dynamo.vllm]}}\n    Prefill',
                )
            )
            before = len(cluster.audit_events())
            timed("up scaling one component 2 -> 3", lambda: stack.up(**quiet))
            for agent, counts in sorted(requests_by_agent(cluster.audit_events()[before:]).items()):
                print(
                    f"  scale up requests by {agent:<34} reads {counts['read']:3}  writes {counts['write']:3}"
                )
            timed("destroy", lambda: stack.destroy(**quiet))
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
