"""`dynamo-infra diff-live`: a stack's rendering against the cluster now, per object and field."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

NAME = "diff-live"
HELP = "compare what a stack renders with what is in the cluster now (no Pulumi, no state)"
DESCRIPTION = """\
Render the stack as `dynamo-infra render STACK` does and read each object from the cluster (the
stack's kubeconfig, or --kubeconfig). Reports objects missing from the cluster, objects of the
graphs (found by their dynamo-infra.io/inventory label) the rendering no longer has, and each field
we set whose live value differs. Only the fields we set are compared, as server-side apply owns
them: what the API server defaults is not drift; nor are replicas an autoscaler, scaling adapter or
the agent owns, nor claims (created when missing, never modified). Read only: no Pulumi, no state.
Exit 1 when there is drift, 0 when there is none.
"""
# Kinds a graph's objects may have had besides those rendered now (looked for as extra objects).
GRAPH_KINDS = (
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("apps/v1", "Deployment"),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    ("grove.io/v1alpha1", "PodCliqueSet"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stack", metavar="STACK", help="a stack name or a Pulumi.<stack>.yaml path")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig file (default: the stack's)")
    parser.add_argument("--context", help="kubeconfig context (default: the stack's)")
    parser.add_argument("--namespace", help="the namespace the stack was rendered into, if not its own")
    parser.add_argument(
        "--project-dir", type=Path, help="the Pulumi project (default: the current directory)"
    )


def live_drift(client: Any, result: Any) -> list[Any]:
    """Every drift of the rendered files against the cluster behind `client`."""
    from dynamo_infra.cli.drift import EXTRA, Drift, object_drift
    from dynamo_infra.kube.client import object_key
    from dynamo_infra.reconcile.ownership import INVENTORY_LABEL

    out: list[Drift] = []
    rendered_keys: set[str] = set()
    inventories: dict[str, set[str]] = {}
    kinds: set[tuple[str, str]] = set(GRAPH_KINDS)
    for f in result.files:
        for obj in f.objects:
            key = object_key(obj)
            rendered_keys.add(key)
            out.extend(
                object_drift(
                    key,
                    obj,
                    client.get(obj),
                    replicas_external=f.replicas_external,
                    create_only=f.create_only,
                )
            )
            label = ((obj.get("metadata") or {}).get("labels") or {}).get(INVENTORY_LABEL)
            if label:
                inventories.setdefault(str(obj["metadata"]["namespace"]), set()).add(str(label))
                kinds.add((str(obj["apiVersion"]), str(obj["kind"])))
    for namespace, labels in sorted(inventories.items()):
        selector = f"{INVENTORY_LABEL} in ({','.join(sorted(labels))})"
        for api_version, kind in sorted(kinds):
            if not client.serves(api_version, kind):
                continue
            for obj in client.list(api_version, kind, namespace, selector):
                key = object_key(obj)
                if key not in rendered_keys:
                    out.append(Drift(key, EXTRA))
    return out


def run(args: argparse.Namespace) -> int:
    from dynamo_infra.cli import rendering
    from dynamo_infra.cli.main import EXIT_FINDINGS, EXIT_OK
    from dynamo_infra.cli.stackfile import read_stack
    from dynamo_infra.kube import connection
    from dynamo_infra.kube.client import KubeClient
    from dynamo_infra.stack_config import StackConfig

    stack_file = read_stack(args.stack, args.project_dir).with_namespace(args.namespace)
    if args.kubeconfig:
        values = {k: v for k, v in stack_file.values.items() if k != "kubeconfig"}
        stack_file = stack_file.with_values({**values, "kubeconfigPath": str(args.kubeconfig)})
    stack = StackConfig.from_config(stack_file)
    result = rendering.render_stack(stack, stack_file.owner, stack_file.project_dir)
    with KubeClient(connection.load(stack.kubeconfig, args.context or stack.context)) as client:
        drift = live_drift(client, result)
    if args.format == "json":
        print(json.dumps([asdict(d) for d in drift], indent=2, default=str))
    else:
        for d in drift:
            print(d.text())
    return EXIT_FINDINGS if drift else EXIT_OK
