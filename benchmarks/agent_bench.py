"""The run-time agent's figures on the local control plane: time from a DGDSA scale request (as the
planner makes it) to the component's Deployment `spec.replicas`, and the agent process's resident
memory (now and peak). The agent runs as a process under its own Role, as in
tests/integration/test_agent.py.

    . tools/env.sh && python -m benchmarks.agent_bench [--requests 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import memory_mib
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient
from tests.integration.test_agent import Rig, set_up, start_agent, wait_for
from tools.localcluster import LocalCluster


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20, help="scale requests, alternating 2 and 1")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agent-bench-") as d:
        root = Path(d)
        cluster = LocalCluster(root / "cluster")
        cluster.start()
        try:
            kube = KubeClient(connection.load(str(cluster.kubeconfig)))
            set_up(kube, cluster)
            started = time.monotonic()
            agent = start_agent(kube, root, "agent")
            rig = Rig(kube, root, agent)
            wait_for(
                "the first status", lambda: (rig.dgd().get("status") or {}).get("components"), agent=agent
            )
            first_status = time.monotonic() - started
            latencies = []
            for i in range(args.requests):
                replicas = 2 if i % 2 == 0 else 1
                t0 = time.monotonic()
                rig.scale_adapter(replicas)
                wait_for(f"replicas {replicas}", lambda r=replicas: rig.replicas("Worker") == r, agent=agent)
                latencies.append(time.monotonic() - t0)
            mem = memory_mib(agent.proc.pid)
            agent.stop()
        finally:
            cluster.stop()
    figures = {
        "agent_start_to_first_status_s": round(first_status, 3),
        "scale_request_to_deployment_replicas_s": {
            "median": round(statistics.median(latencies), 4),
            "max": round(max(latencies), 4),
            "n": len(latencies),
        },
        "agent_rss_mib": round(mem["VmRSS"], 1),
        "agent_peak_rss_mib": round(mem["VmHWM"], 1),
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
