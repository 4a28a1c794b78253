"""End-to-end fixtures: graphs deployed with `pulumi up` on the local control plane, their pods run
as processes of NVIDIA's Dynamo runtime (tools/podprocs.py), requests sent to their frontends."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient
from tools import dynamo_runtime
from tools.localcluster import LocalCluster
from tools.serving import HARNESS_USER_AGENT

GRAPHS = Path(__file__).resolve().parent / "graphs"


@pytest.fixture(autouse=True)
def _offline(offline_pulumi: None) -> None:
    """The pinned toolchain, offline (tests/conftest.py)."""


@pytest.fixture(scope="session")
def runtime() -> Path:
    """The Dynamo runtime virtualenv's python (installed once into the toolchain cache)."""
    started = time.monotonic()
    python = dynamo_runtime.ensure()
    print(
        f"\n[e2e] dynamo runtime {dynamo_runtime.DYNAMO_VERSION} ready in {time.monotonic() - started:.1f}s "
        f"(installed in {dynamo_runtime.setup_seconds()}s)"
    )
    return python


@pytest.fixture()
def harness_kube(cluster: LocalCluster) -> Iterator[KubeClient]:
    """An admin client with the harness's own user agent (the runtime's requests are told apart)."""
    with KubeClient(connection.load(str(cluster.kubeconfig)), HARNESS_USER_AGENT) as client:
        yield client
