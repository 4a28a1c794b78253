"""Who owns the namespace, through the real Pulumi CLI against the local control plane: a stack
creates and deletes only a namespace of its own; a user's namespace, or another stack's, is used as
it is and survives `destroy` with everything the stack did not create in it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dynamo_infra.kube.client import KubeClient
from tests.integration.harness import destroy, make_stack, namespace_object, unique, up
from tools.localcluster import LocalCluster

OWNER = "dynamo-infra.io/owner-stack"


@pytest.fixture()
def graph(project: Path) -> Path:
    return project / "examples" / "agg.yaml"


@pytest.fixture()
def gone(kube: KubeClient) -> Iterator[list[str]]:
    """Namespaces to remove after the test (whatever it left)."""
    names: list[str] = []
    yield names
    for n in names:
        kube.delete(namespace_object(n), propagation="Background")


def test_a_users_namespace_is_used_untouched_and_kept(
    project: Path, graph: Path, cluster: LocalCluster, kube: KubeClient, gone: list[str]
) -> None:
    ns = unique("users")
    gone.append(ns)
    kube.apply(
        {**namespace_object(ns), "metadata": {"name": ns, "labels": {"team": "inference"}}}, manager="kubectl"
    )
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token", "namespace": ns},
              "stringData": {"HF_TOKEN": "x"}}  # fmt: skip
    kube.apply(secret, manager="kubectl")
    stack = make_stack(project, cluster, "users", ns, [graph])
    up(stack)
    assert kube.list("apps/v1", "Deployment", ns), "the graph runs in the user's namespace"
    live = kube.get(namespace_object(ns))
    assert live is not None
    assert live["metadata"]["labels"] == {"team": "inference", "kubernetes.io/metadata.name": ns}
    assert OWNER not in (live["metadata"].get("annotations") or {})
    destroy(stack)
    assert kube.get(namespace_object(ns)) is not None and kube.get(secret) is not None
    assert kube.list("apps/v1", "Deployment", ns) == []


def test_only_the_stack_that_created_a_namespace_deletes_it(
    project: Path, graph: Path, cluster: LocalCluster, kube: KubeClient, gone: list[str]
) -> None:
    ns = unique("owned")
    gone.append(ns)
    # Unrestricted: a restricted identity's namespace is made beforehand by an admin (test_rbac.py).
    first = make_stack(project, cluster, "first", ns, [graph], restricted=False)
    up(first)
    live = kube.get(namespace_object(ns))
    assert live is not None and live["metadata"]["annotations"][OWNER] == "dynamo-infra/first"
    # A second stack deploying into the same namespace uses it and leaves it on destroy.
    other = project / "examples" / "other.yaml"
    other.write_text(graph.read_text().replace("name: vllm-agg", "name: other-agg", 1))
    second = make_stack(project, cluster, "second", ns, [other])
    up(second)
    destroy(second)
    assert kube.get(namespace_object(ns)) is not None
    assert kube.list("apps/v1", "Deployment", ns), "the first stack's graph still runs"
    destroy(first)
    assert kube.wait_deleted(namespace_object(ns), 60)
