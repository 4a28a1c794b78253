"""Integration fixtures: one local control plane per test session, Pulumi projects in temp folders."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pulumi import automation as auto

from dynamo_infra.reconcile import connection
from dynamo_infra.reconcile.kube import KubeClient
from tests.conftest import REPO
from tools.localcluster import LocalCluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def _offline(offline_pulumi: None) -> None:
    """Every integration test runs the pinned toolchain offline (tests/conftest.py)."""


@pytest.fixture()
def kube(cluster: LocalCluster) -> Iterator[KubeClient]:
    with KubeClient(connection.load(str(cluster.kubeconfig))) as client:
        yield client


def copy_project(root: Path) -> Path:
    """`root/project`: the Pulumi project (program, examples, shipped CRD sets) using the repository's
    virtualenv, with its file backend in `root/state`."""
    dest = root / "project"
    dest.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO / name, dest / name)
    shutil.copytree(REPO / "examples", dest / "examples")
    (dest / "stacks").mkdir()
    # Every stack's platform layer installs the Dynamo CRD set from here.
    (dest / "stacks" / "crds").symlink_to(REPO / "stacks" / "crds")
    (dest / ".venv").symlink_to(REPO / ".venv")
    (root / "state").mkdir()
    return dest


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    return copy_project(tmp_path)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def make_stack(
    project: Path, local: LocalCluster, name: str, namespace: str, graphs: list[Path], **options: object
) -> auto.Stack:
    """A stack of the project copy in its own file backend, pointed at the local control plane."""
    opts = auto.LocalWorkspaceOptions(
        work_dir=str(project), env_vars={"PULUMI_BACKEND_URL": f"file://{project.parent / 'state'}"}
    )
    stack = auto.create_stack(name, work_dir=str(project), opts=opts)
    cluster_options = {"namespace": namespace, "await": {"timeoutSeconds": 180}, **options}
    stack.set_all_config(
        {
            "dynamo-infra:kubeconfigPath": auto.ConfigValue(str(local.kubeconfig)),
            "dynamo-infra:cluster": auto.ConfigValue(json.dumps(cluster_options)),
            "dynamo-infra:graphs": auto.ConfigValue(json.dumps([str(g) for g in graphs])),
        }
    )
    return stack
