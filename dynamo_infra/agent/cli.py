"""The `dynamo-infra` command line: `dynamo-infra agent --namespace NS [--namespace NS ...]`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

# Log level when none is given.
DEFAULT_LOG_LEVEL = "INFO"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dynamo-infra", description="dynamo-infra's in-cluster tools")
    sub = p.add_subparsers(dest="command", required=True)
    agent = sub.add_parser(
        "agent",
        help="run the agent: replica requests to workloads, live DGD/DGDSA status, LoRA adapters",
        description="Credentials: $KUBECONFIG (its current context), else the pod's service account.",
    )
    agent.add_argument(
        "--namespace", action="append", required=True, metavar="NS", help="a namespace of graphs (repeat)"
    )
    agent.add_argument(
        "--log-level", default=DEFAULT_LOG_LEVEL, choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "agent":
        # Imported here: the agent (kopf, aiohttp) loads only when it runs.
        from dynamo_infra.agent.app import run

        run(list(dict.fromkeys(args.namespace)), args.log_level)
    return 0
