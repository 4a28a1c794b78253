"""`dynamo-infra render`: the Kubernetes objects a stack (or graph files) would apply, as YAML."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dynamo_infra.errors import DynamoInfraError

NAME = "render"
HELP = "print the Kubernetes YAML a stack or graph files would apply (no cluster, no Pulumi)"
DESCRIPTION = """\
Render what `pulumi up` would create, without a cluster or Pulumi: from a stack (a name, found in
the project's stackConfigDir, or a path to a Pulumi.<stack>.yaml) with its platform layer, or from
DynamoGraphDeployment files with --cluster options. With --out, one file per graph part:
  _platform.yaml               namespace, CRDs, ClusterRoles, service accounts (stacks only)
  <graph>/_claims.yaml         claims the graph creates
  <graph>/<component>.yaml     one file per component (its workload, Service, ...)
  <graph>/_records.yaml        the DynamoGraphDeployment record (and scaling adapters)
(and _shared, _checkpoints, _podcliqueset, _autoscalers when the graph has them); without it, one
multi-document stream on stdout, in the same order. Output is deterministic.

Assumes an empty cluster, as a first `up` sees it: the stack owns the namespace, its service
accounts and every CRD it installs (a live `up` uses those of others as they are); no image pull
secrets are discovered; the MPI SSH key copy and checkpoint capture Jobs are not rendered. Notes on
stderr say which applied. Secure stack values are not decrypted (a kubeconfig is not needed).
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "sources", nargs="+", metavar="STACK|FILES", help="a stack name or file, or DGD files"
    )
    parser.add_argument("--out", type=Path, help="write one file per graph part under this directory")
    parser.add_argument("--cluster", help="cluster options for FILES: JSON, or @file (JSON or YAML)")
    parser.add_argument("--namespace", help="render into this namespace instead of the stack's")
    parser.add_argument(
        "--project-dir", type=Path, help="the Pulumi project (default: the current directory)"
    )


def cluster_data(value: str | None) -> Any:
    """`--cluster`: inline JSON, or `@path` of a JSON or YAML file."""
    if not value:
        return {}
    import yaml

    try:
        if value.startswith("@"):
            return yaml.safe_load(Path(value[1:]).read_text())
        return json.loads(value)
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise DynamoInfraError(f"--cluster: cannot read {value!r}: {e}") from None


def is_stack(sources: list[str]) -> bool:
    """One source that is a stack name or a `Pulumi.<stack>.yaml` (anything else: graph files)."""
    if len(sources) != 1:
        return False
    source = Path(sources[0])
    return source.name.startswith("Pulumi.") or source.suffix not in (".yaml", ".yml")


def load(args: argparse.Namespace, *, kubeconfig: bool = False) -> Any:
    """(StackConfig, StackFile) of the stack argument; secure values are reported on stderr."""
    from dynamo_infra.cli.stackfile import read_stack
    from dynamo_infra.stack_config import StackConfig

    source = args.sources[0] if hasattr(args, "sources") else args.stack
    stack_file = read_stack(source, args.project_dir).with_namespace(args.namespace)
    for k in stack_file.secure_keys:
        print(f"note: {k} is a secret: not decrypted (read as absent)", file=sys.stderr)
    return StackConfig.from_config(stack_file, kubeconfig=kubeconfig), stack_file


def rendered(args: argparse.Namespace) -> Any:
    """The RenderResult of the command's sources."""
    from dynamo_infra.cli import rendering

    if is_stack(args.sources):
        if args.cluster:
            raise DynamoInfraError("--cluster is for graph files; a stack has its own dynamo-infra:cluster")
        stack, stack_file = load(args)
        return rendering.render_stack(stack, stack_file.owner, stack_file.project_dir)
    options = rendering.cluster_options(cluster_data(args.cluster), args.namespace)
    return rendering.render_files([Path(s) for s in args.sources], options)


def run(args: argparse.Namespace) -> int:
    from dynamo_infra.cli.main import EXIT_OK

    result = rendered(args)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.out:
        for path in result.write(args.out):
            print(path, file=sys.stderr)
    else:
        sys.stdout.write(result.stream())
    return EXIT_OK
