"""Serving figures with the real Dynamo runtime on the local control plane: runtime set-up, time from
`pulumi up` start to the first token of the `local` stack's mocker graph, and the requests/s the
frontend sustains through our deployment under a bounded load (loopback only, fixed duration and
concurrency; it stops by itself).

    . tools/env.sh && python -m benchmarks.serving_bench [--seconds 30] [--concurrency 8] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from benchmarks.common import REPO, local_stack
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient
from tools import dynamo_runtime, toolchain
from tools.localcluster import LocalCluster
from tools.serving import HARNESS_USER_AGENT, chat, served

GRAPH = REPO / "examples" / "mocker-agg.yaml"


def graph_release() -> str:
    """The runtime release the graph's images run on (its first image's tag)."""
    image = next(
        line.split("image:", 1)[1].strip() for line in GRAPH.read_text().splitlines() if "image:" in line
    )
    return dynamo_runtime.for_image(image).version


NAMESPACE = "bench-serving"
# Tokens each load request asks for.
LOAD_MAX_TOKENS = 16


def load(url: str, model: str, seconds: float, concurrency: int) -> dict[str, float]:
    """`concurrency` clients sending chat completions back to back for `seconds`; figures."""
    latencies: list[float] = []
    errors: list[str] = []
    tokens = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "the quick brown fox"}],
        "max_tokens": LOAD_MAX_TOKENS,
    }

    def client() -> None:
        with httpx.Client(timeout=30) as http:
            while time.monotonic() < deadline:
                t0 = time.monotonic()
                try:
                    r = http.post(f"{url}/v1/chat/completions", json=body)
                    r.raise_for_status()
                    used = int(r.json()["usage"]["completion_tokens"])
                except (httpx.HTTPError, KeyError, ValueError) as e:
                    with lock:
                        errors.append(type(e).__name__)
                    continue
                with lock:
                    latencies.append(time.monotonic() - t0)
                    tokens[0] += used

    started = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    ordered = sorted(latencies)
    return {
        "seconds": round(wall, 1),
        "concurrency": concurrency,
        "requests": len(latencies),
        "errors": len(errors),
        "requests_per_s": round(len(latencies) / wall, 1),
        "tokens_per_s": round(tokens[0] / wall, 1),
        "latency_p50_ms": round(statistics.median(ordered) * 1000, 1) if ordered else float("nan"),
        "latency_p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 1) if ordered else float("nan"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    release = graph_release()
    figures: dict[str, object] = {"cores": os.cpu_count(), "dynamo": release}

    t0 = time.monotonic()
    dynamo_runtime.ensure(release)
    figures["runtime_ready_s"] = round(time.monotonic() - t0, 1)
    figures["runtime_install_s"] = dynamo_runtime.setup_seconds(release)
    toolchain.bin_dirs()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        cluster = LocalCluster(root / "cluster").start()
        try:
            stack = local_stack(root, cluster, "serving", GRAPH, NAMESPACE)
            up_started = time.time()
            stack.up(on_output=lambda _: None)
            figures["pulumi_up_s"] = round(time.time() - up_started, 1)
            conn = connection.load(str(cluster.kubeconfig))
            with (
                KubeClient(conn, HARNESS_USER_AGENT) as kube,
                served(kube, conn, namespace=NAMESPACE, graph="mocker-agg", root=root / "pods") as live,
            ):
                first = chat(live.url, live.model)
                figures["up_to_first_token_s"] = round(first.first_token_at - up_started, 1)
                figures["first_request_first_token_ms"] = round(first.first_token_s * 1000, 1)
                figures["load"] = load(live.url, live.model, args.seconds, args.concurrency)
            stack.destroy(on_output=lambda _: None)
        finally:
            cluster.stop()

    for key, value in figures.items():
        if isinstance(value, dict):
            for k, v in value.items():
                print(f"{key}.{k:<28} {v}")
        else:
            print(f"{key:<33} {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
