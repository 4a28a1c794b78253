"""`dynamo-infra validate`: every problem of graph files, with its field path and `file:line`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

NAME = "validate"
HELP = "check DGD files as the program loads them, every problem with its file:line"
DESCRIPTION = """\
Load each file as a stack's `dynamo-infra:graphs` are loaded: the CRD schema and the typed model,
then the operator's validating webhook (its rules that need no cluster, and those that depend on the
cluster options given with --cluster, the shape of `dynamo-infra:cluster`; `admission: {enabled:
false}` turns it off). Every problem is reported with its field path and, where the YAML has it, its
line and column. Exit 1 when any file has a problem, 0 when all pass.

formats:
  text    FILE:LINE:COLUMN: PATH: MESSAGE (warnings prefixed `warning:`)
  json    a list of {file, line, column, path, message, severity}
  github  GitHub Actions annotations (::error file=...,line=...,col=...::PATH: MESSAGE)
"""


@dataclass(frozen=True)
class Finding:
    file: str
    line: int | None
    column: int | None
    path: str
    message: str
    severity: str = "error"

    def text(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line, self.column) if p is not None)
        head = "warning: " if self.severity == "warning" else ""
        return f"{where}: {head}{self.path + ': ' if self.path else ''}{self.message}"

    def github(self) -> str:
        place = f"file={self.file}" + (f",line={self.line},col={self.column}" if self.line else "")
        message = f"{self.path}: {self.message}" if self.path else self.message
        return f"::{self.severity} {place}::{message.replace('%', '%25').replace(chr(10), '%0A')}"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="FILES", help="YAML files holding DGDs")
    parser.add_argument("--format", choices=("text", "json", "github"), default="text")
    parser.add_argument("--cluster", help="cluster options: JSON, or @file (JSON or YAML)")


def _documents_index(docs: list[Any], name: str) -> int:
    for i, d in enumerate(docs):
        dgd = isinstance(d, dict) and d.get("kind") == "DynamoGraphDeployment"
        if dgd and (d.get("metadata") or {}).get("name") == name:
            return i
    return 0


def check_file(path: Path, options: Any) -> list[Finding]:
    """Every problem (and warning) of one file."""
    from dynamo_infra.api import DynamoValidationError, Problem, load_yaml
    from dynamo_infra.api.errors import prefixed
    from dynamo_infra.api.loader import parse_documents
    from dynamo_infra.cli.stackfile import GRAPHS_KEY
    from dynamo_infra.cli.yamlmarks import compose, locate, syntax_position
    from dynamo_infra.render import render_graph
    from dynamo_infra.render.checks.admission import review_graph
    from dynamo_infra.render.checks.name_check import DerivedNameError

    problems: list[Problem] = []
    loaded = None
    warnings: list[str] = []
    try:
        loaded = load_yaml(path, admission=options.admission.enabled)
        warnings.extend(loaded.warnings)
        docs = parse_documents(path.read_text(encoding="utf-8"), str(path))
        if options.admission.enabled:
            for dgd in loaded.graphs:
                review = review_graph(dgd, options)
                prefix = f"documents[{_documents_index(docs, dgd.name)}]" if len(docs) > 1 else ""
                problems.extend(prefixed(prefix, review.problems))
                warnings.extend(review.warnings)
        if not problems:
            # Names the rendering derives (objects, labels) that the API server would reject.
            for dgd in loaded.graphs:
                try:
                    render_graph(dgd, options)
                except DerivedNameError as e:
                    prefix = f"documents[{_documents_index(docs, dgd.name)}]" if len(docs) > 1 else ""
                    problems.extend(prefixed(prefix, e.problems))
                except DynamoValidationError:
                    pass  # what else rendering rejects depends on the stack's cluster options
    except DynamoValidationError as e:
        problems.extend(e.problems)
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    nodes = compose(text)
    out = []
    for p in sorted(set(problems)):
        at = locate(nodes, p.path) if p.path else syntax_position(p.message)
        out.append(Finding(str(path), at.line if at else None, at.column if at else None, p.path, p.message))
    out.sort(key=lambda f: (f.line or 0, f.column or 0, f.path))
    if loaded is not None and len(loaded.graphs) > 1:
        warnings.append(
            f"holds {len(loaded.graphs)} DynamoGraphDeployments: a stack's {GRAPHS_KEY} entry takes files of one"
        )
    for w in warnings:
        out.append(Finding(str(path), None, None, "", w, "warning"))
    return out


def run(args: argparse.Namespace) -> int:
    from dynamo_infra.cli import rendering
    from dynamo_infra.cli.main import EXIT_FINDINGS, EXIT_OK
    from dynamo_infra.cli.render import cluster_data

    options = rendering.cluster_options(cluster_data(args.cluster), None)
    findings = [f for path in args.files for f in check_file(path, options)]
    if args.format == "json":
        print(json.dumps([asdict(f) for f in findings], indent=2))
    else:
        for f in findings:
            print(f.github() if args.format == "github" else f.text())
        errors = sum(f.severity == "error" for f in findings)
        if args.format == "text":
            bad = len({f.file for f in findings if f.severity == "error"})
            print(
                f"{plural(len(args.files), 'file')} checked: {plural(errors, 'problem')} "
                f"in {plural(bad, 'file')}",
                file=sys.stderr,
            )
    return EXIT_FINDINGS if any(f.severity == "error" for f in findings) else EXIT_OK


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
