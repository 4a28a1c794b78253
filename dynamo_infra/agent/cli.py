"""`dynamo-infra agent --namespace NS [--namespace NS ...]`: run the agent."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

NAME = "agent"
HELP = "run the agent: replica requests to workloads, live DGD/DGDSA status, LoRA adapters"
DESCRIPTION = (
    "Run the in-cluster agent for the graphs of the given namespaces. "
    "Credentials: $KUBECONFIG (its current context), else the pod's service account."
)

# Log level when none is given.
DEFAULT_LOG_LEVEL = "INFO"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--namespace", action="append", required=True, metavar="NS", help="a namespace of graphs (repeat)"
    )
    p.add_argument("--log-level", default=DEFAULT_LOG_LEVEL, choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def parser() -> argparse.ArgumentParser:
    """The agent's own parser (`python -m dynamo_infra.agent`)."""
    p = argparse.ArgumentParser(prog="dynamo-infra agent", description=DESCRIPTION)
    configure(p)
    return p


def run(args: argparse.Namespace) -> int:
    # Imported here: the agent (kopf, aiohttp) loads only when it runs.
    from dynamo_infra.agent.app import run as run_agent

    run_agent(list(dict.fromkeys(args.namespace)), args.log_level)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(parser().parse_args(argv))
