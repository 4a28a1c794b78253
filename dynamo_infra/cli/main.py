"""`dynamo-infra COMMAND ...`: the parser built from the table of subcommands, and exit codes.

Each subcommand is a module with `NAME`, `HELP`, `DESCRIPTION`, `configure(parser)` and
`run(args) -> int`. Modules import only the standard library and light parts of the package at
import time (the agent's image has no Pulumi, so nothing may import `dynamo_infra.components`); what a command needs to run is
imported inside its `run`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from dynamo_infra.errors import DynamoInfraError

# Exit codes, the same for every subcommand.
# Success: nothing to report.
EXIT_OK = 0
# The command ran and found something: validation errors, drift, a policy violation.
EXIT_FINDINGS = 1
# The command line itself is wrong (argparse's own code).
EXIT_USAGE = 2
# The command could not do its work: a stack that does not load, an unreachable cluster, a failed preview.
EXIT_ERROR = 3

# The subcommands, in `--help` order: module paths relative to this package, or absolute.
COMMANDS: tuple[str, ...] = (
    "dynamo_infra.cli.render",
    "dynamo_infra.cli.validate",
    "dynamo_infra.cli.preview_summary",
    "dynamo_infra.cli.diff_live",
    "dynamo_infra.cli.rbac",
    "dynamo_infra.cli.unlock",
    "dynamo_infra.agent.cli",
)

EPILOG = f"""exit codes:
  {EXIT_OK}  success, nothing to report
  {EXIT_FINDINGS}  the command found problems (validation errors, drift, policy violations)
  {EXIT_USAGE}  the command line is wrong
  {EXIT_ERROR}  the command could not run (stack does not load, cluster unreachable, preview failed)
"""


def command_modules() -> list[ModuleType]:
    return [importlib.import_module(name) for name in COMMANDS]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dynamo-infra",
        description="Render, validate, review and run NVIDIA Dynamo graphs deployed with dynamo-infra.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in command_modules():
        command = sub.add_parser(
            module.NAME,
            help=module.HELP,
            description=module.DESCRIPTION,
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.set_defaults(run=module.run)
        module.configure(command)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except DynamoInfraError as e:
        print(f"dynamo-infra {args.command}: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    return code


def entry() -> None:
    """The console script."""
    sys.exit(main())
