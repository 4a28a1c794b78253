"""Integration fixtures: one local control plane per test session, Pulumi projects in temp folders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dynamo_infra.kube.client import KubeClient
from tests.integration.harness import copy_project, fresh_namespace, kube_client, make_stack, unique
from tools.localcluster import LocalCluster

# The builders live in the harness; tests/e2e imports them from here.
__all__ = ["copy_project", "make_stack", "unique"]


@pytest.fixture(autouse=True)
def _offline(offline_pulumi: None) -> None:
    """Every integration test runs the pinned toolchain offline (tests/conftest.py)."""


@pytest.fixture()
def kube(cluster: LocalCluster) -> Iterator[KubeClient]:
    with kube_client(cluster) as client:
        yield client


@pytest.fixture()
def namespace(request: pytest.FixtureRequest, kube: KubeClient) -> Iterator[str]:
    """A fresh namespace named after the test module's `NAMESPACE_PREFIX`, deleted after the test."""
    with fresh_namespace(kube, getattr(request.module, "NAMESPACE_PREFIX", "it")) as name:
        yield name


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    return copy_project(tmp_path)
