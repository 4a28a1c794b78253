"""`dynamo-infra preview-summary`: a pull-request comment from `pulumi preview --json`.

Reads the JSON from a file or stdin (`--json`), or runs the preview of `--stack` itself through the
Automation API, and writes Markdown: per graph, component and Kubernetes object the fields that
change, which changes restart pods, secrets masked, cut to `--limit` characters.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dynamo_infra.cli.main import EXIT_OK, EXIT_USAGE
from dynamo_infra.cli.preview_markdown import DEFAULT_LIMIT, GITHUB_COMMENT_LIMIT, comment
from dynamo_infra.cli.preview_model import load_preview, summarize
from dynamo_infra.errors import DynamoInfraError

NAME = "preview-summary"
HELP = "a Markdown pull-request comment from `pulumi preview --json`"
DESCRIPTION = (
    "Summarize a Pulumi preview for a pull request: per graph, component and Kubernetes object the\n"
    "fields that change (old -> new), which changes restart pods, secrets masked. The comment fits\n"
    f"--limit characters (default {DEFAULT_LIMIT:,}, below GitHub's {GITHUB_COMMENT_LIMIT:,}) by\n"
    "collapsing the least important parts first, and says what it cut."
)
# Smallest --limit accepted: room for the headline and the notes of what was cut.
MIN_LIMIT = 1_000


class PreviewFailed(DynamoInfraError):
    """No preview to summarize: `pulumi preview` of the stack failed, or its output is unreadable."""


def configure(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--json", metavar="FILE", help="`pulumi preview --json` output ('-': stdin)")
    source.add_argument("--stack", metavar="NAME", help="run `pulumi preview` of this stack instead")
    parser.add_argument(
        "--cwd", metavar="DIR", default=".", help="the Pulumi project of --stack (default: .)"
    )
    parser.add_argument("--out", metavar="FILE", help="write the comment here (default: stdout)")
    parser.add_argument(
        "--limit",
        metavar="N",
        type=int,
        default=DEFAULT_LIMIT,
        help=f"most characters (default {DEFAULT_LIMIT})",
    )
    parser.add_argument("--title", metavar="STACK", default="", help="the stack named in the comment's title")


def run_preview(stack_name: str, cwd: str) -> str:
    """`pulumi preview --json` of a stack of the project in `cwd`, through the Automation API."""
    from pulumi import automation as auto

    try:
        stack = auto.select_stack(stack_name=stack_name, work_dir=cwd)
        return str(stack.preview(json=True).stdout)
    except auto.errors.CommandError as e:
        raise PreviewFailed(f"pulumi preview of stack {stack_name} failed: {e}") from e


def run(args: argparse.Namespace) -> int:
    if args.limit < MIN_LIMIT:
        print(f"dynamo-infra {NAME}: error: --limit must be at least {MIN_LIMIT}", file=sys.stderr)
        return EXIT_USAGE
    if args.stack:
        text, stack = run_preview(args.stack, args.cwd), args.stack
    else:
        try:
            text = sys.stdin.read() if args.json == "-" else Path(args.json).read_text()
        except OSError as e:
            raise PreviewFailed(f"cannot read {args.json}: {e.strerror or e}") from e
        stack = args.title
    markdown = comment(summarize(load_preview(text), stack or args.title), args.limit)
    if args.out:
        Path(args.out).write_text(markdown + "\n")
    else:
        sys.stdout.write(markdown + "\n")
    return EXIT_OK
