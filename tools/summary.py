"""Print what a stack created and its status: graph states from the stack outputs, and the objects
the API server holds for each component (kind, name, readiness)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.render.names import LABEL_GRAPH
from dynamo_infra.render.runtime.status import object_readiness

# Kinds listed per graph (those the API server does not serve are skipped).
LISTED_KINDS = (
    ("apps/v1", "Deployment"),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    ("grove.io/v1alpha1", "PodCliqueSet"),
    ("v1", "Service"),
    ("v1", "ServiceAccount"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"),
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--stack", required=True)
    ap.add_argument("--kubeconfig", required=True, type=Path)
    ap.add_argument(
        "--allow-pending",
        action="store_true",
        help="exit 0 for pending graphs too (stacks that skip awaiting: no Grove/LWS controller locally)",
    )
    args = ap.parse_args(argv)
    out = subprocess.run(
        ["pulumi", "stack", "output", "--json", "--stack", args.stack],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    outputs = json.loads(out or "{}")
    namespace = outputs.get("namespace", "default")
    graphs = outputs.get("graphs") or {}
    print(f"\nstack {args.stack}: namespace {namespace}, {len(graphs)} graph(s)")
    with KubeClient(connection.load(str(args.kubeconfig))) as client:
        for name, g in graphs.items():
            ready = next((c for c in g.get("conditions") or [] if c.get("type") == "Ready"), {})
            print(
                f"  graph {name}: state={g.get('state')} Ready={ready.get('status')} ({ready.get('reason')})"
            )
            for comp, s in (g.get("components") or {}).items():
                print(
                    f"    component {comp}: ready={s.get('ready')} replicas {s.get('readyReplicas', 0)}/{s.get('replicas', 0)}"
                )
            for api_version, kind in LISTED_KINDS:
                if not client.serves(api_version, kind):
                    continue
                for obj in client.list(api_version, kind, namespace):
                    labels = obj["metadata"].get("labels") or {}
                    if labels.get(LABEL_GRAPH) != name and not obj["metadata"]["name"].startswith(f"{name}-"):
                        continue
                    r = object_readiness(obj)
                    print(
                        f"      {kind:<15} {obj['metadata']['name']:<45} {'ready' if r.ready else r.reason}"
                    )
    states = {g.get("state") for g in graphs.values()}
    return 0 if states <= ({"successful", "pending"} if args.allow_pending else {"successful"}) else 1


if __name__ == "__main__":
    sys.exit(main())
