"""What the benchmarks share: a Pulumi project of this repository's program in a temporary folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pulumi import automation as auto

from tools.localcluster import LocalCluster

REPO = Path(__file__).resolve().parent.parent


def local_stack(root: Path, cluster: LocalCluster, name: str, graph: Path, namespace: str) -> auto.Stack:
    """A stack of a copy of the program (file backend in `root`) deploying `graph` to `cluster`."""
    project = root / "project"
    project.mkdir()
    for file in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO / file, project / file)
    (project / "stacks").mkdir()
    (project / "stacks" / "crds").symlink_to(REPO / "stacks" / "crds")
    (project / ".venv").symlink_to(REPO / ".venv")
    opts = auto.LocalWorkspaceOptions(
        work_dir=str(project), env_vars={"PULUMI_BACKEND_URL": f"file://{root}"}
    )
    stack = auto.create_stack(name, work_dir=str(project), opts=opts)
    stack.set_all_config(
        {
            "dynamo-infra:kubeconfigPath": auto.ConfigValue(str(cluster.kubeconfig)),
            "dynamo-infra:cluster": auto.ConfigValue(json.dumps({"namespace": namespace})),
            "dynamo-infra:graphs": auto.ConfigValue(json.dumps([str(graph)])),
        }
    )
    return stack
