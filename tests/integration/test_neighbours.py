"""Neighbours in one namespace, through the real Pulumi CLI on the local control plane.

- Two stacks deploying a graph of the same name into one namespace: the second's preview and `up`
  fail naming the first stack, and write nothing (the program reads the graph's DGD record first;
  without it, each resource refuses the first stack's objects before writing); the first's objects
  keep every field, and its next preview shows no change.
- A namespace where the Dynamo operator manages graphs (a DGD it wrote, with objects it owns): a
  stack's preview and `up` fail naming the DGDs, and write nothing. (The same graph moving from the
  operator is taken over: tests/integration/test_takeover.py.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import PROGRAM_USER_AGENT, USER_AGENT, KubeClient, object_key
from dynamo_infra.reconcile.takeover import DGD_KIND, OPERATOR_FIELD_MANAGERS
from dynamo_infra.render.runtime.records import RECORD_API_VERSION
from tests.conftest import DATA
from tests.integration.harness import TAIL, destroy, make_stack, up
from tools.localcluster import LocalCluster

NAMESPACE_PREFIX = "nb"
GRAPH = DATA / "graphs" / "reconcile.yaml"
# Every kind the graph writes: its shared RBAC, claim, workloads, Services and records.
KINDS = (
    ("v1", "ServiceAccount"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
    (RECORD_API_VERSION, DGD_KIND),
    (RECORD_API_VERSION, "DynamoGraphDeploymentScalingAdapter"),
)
# Kinds whose objects no controller writes after `up` (their resourceVersion must not move).
STILL = ("ServiceAccount", "Role", "RoleBinding")
# Verbs that write.
WRITES = ("create", "update", "patch", "delete", "deletecollection")


def fingerprint(obj: Manifest) -> Manifest:
    """What another stack must not change: everything but status and what controllers' status writes
    move (resourceVersion, managedFields entries of the status subresource)."""
    meta = dict(obj["metadata"])
    if obj["kind"] not in STILL:
        meta.pop("resourceVersion", None)
    meta["managedFields"] = [m for m in meta.get("managedFields") or [] if not m.get("subresource")]
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


def snapshot(kube: KubeClient, namespace: str) -> dict[str, Manifest]:
    found: dict[str, Manifest] = {}
    for api_version, kind in KINDS:
        for obj in kube.list(api_version, kind, namespace):
            found[object_key(obj)] = fingerprint(obj)
    return found


def our_writes(cluster: LocalCluster, since: int) -> list[tuple[str, str]]:
    return [
        (e["verb"], e["requestURI"]) for e in cluster.audit_events(USER_AGENT)[since:] if e["verb"] in WRITES
    ]


def failed_up(stack: auto.Stack) -> str:
    lines: list[str] = []
    with pytest.raises(auto.errors.CommandError) as failed:
        stack.up(on_output=lines.append)
    return "\n".join(lines) + str(failed.value)


def failed_preview(stack: auto.Stack) -> str:
    lines: list[str] = []
    with pytest.raises(auto.errors.CommandError) as failed:
        stack.preview(on_output=lines.append)
    return "\n".join(lines) + str(failed.value)


def test_a_second_stack_with_the_same_graph_is_refused_and_writes_nothing(
    project: Path, cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    first = make_stack(project, cluster, "first", namespace, [GRAPH])
    up(first)
    before = snapshot(kube, namespace)
    kinds = {k.split("/")[-3] for k in before}
    assert kinds == {kind for _, kind in KINDS}, kinds
    second = make_stack(project, cluster, "second", namespace, [GRAPH])
    since = len(cluster.audit_events(USER_AGENT))
    # The program reads the graph's record: the preview and the `up` fail at once.
    for failure in (failed_preview(second), failed_up(second)):
        assert "runs a graph of that name deployed by stack dynamo-infra/first" in failure, failure[-3000:]
    assert our_writes(cluster, since) == []
    assert snapshot(kube, namespace) == before
    program = len(cluster.audit_events(PROGRAM_USER_AGENT))
    assert set(first.preview(on_output=lambda _: None).change_summary) == {"same"}
    # What the neighbours' read costs a program run: one list of the namespace's DGDs' metadata.
    reads = [
        e
        for e in cluster.audit_events(PROGRAM_USER_AGENT)[program:]
        if e["requestURI"].startswith("/apis/nvidia.com/")
    ]
    assert [e["verb"] for e in reads] == ["list"], [e["requestURI"] for e in reads]
    # Without the record, every resource of the second refuses the first's objects before writing.
    record = next(o for k, o in before.items() if f"/{DGD_KIND}/" in k)
    assert kube.delete(record, propagation="Background") and kube.wait_deleted(record, 60)
    del before[object_key(record)]
    since = len(cluster.audit_events(USER_AGENT))
    failure = failed_up(second)
    assert "belongs to dynamo-infra resource" in failure and "of stack dynamo-infra/first" in failure, (
        failure[-3000:]
    )
    assert our_writes(cluster, since) == []
    assert snapshot(kube, namespace) == before
    destroy(second)
    assert snapshot(kube, namespace) == before, "the second's destroy deletes nothing of the first"
    assert set(first.preview(on_output=lambda _: None).change_summary) == {"same"}
    destroy(first)


def operator_graph(kube: KubeClient, namespace: str, name: str) -> Manifest:
    """A DGD as the Dynamo operator's users make it and the operator reconciles it (its field manager)."""
    dgd = {
        "apiVersion": RECORD_API_VERSION,
        "kind": DGD_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"components": [{"name": "Frontend", "componentType": "frontend", "replicas": 1}]},
    }
    path = kube.resource(RECORD_API_VERSION, DGD_KIND).path(namespace)
    return kube.request("POST", path, body=dgd, params={"fieldManager": OPERATOR_FIELD_MANAGERS[0]})


def owned_deployment(namespace: str, owner: Manifest) -> dict[str, Any]:
    labels = {"app": "op-frontend"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "op-frontend",
            "namespace": namespace,
            "ownerReferences": [
                {
                    "apiVersion": RECORD_API_VERSION,
                    "kind": DGD_KIND,
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            },
        },
    }


def test_a_namespace_where_the_operator_manages_graphs_is_refused(
    project: Path, cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    # A stack deployed first installs the Dynamo CRDs; then the operator starts managing a graph there.
    ours = make_stack(project, cluster, "ours", namespace, [GRAPH])
    up(ours)
    dgd = operator_graph(kube, namespace, "op-graph")
    kube.apply(owned_deployment(namespace, dgd), manager=OPERATOR_FIELD_MANAGERS[0])
    other = project / "examples" / "other.yaml"
    other.write_text(GRAPH.read_text().replace("name: rec", "name: other", 1))
    newcomer = make_stack(project, cluster, "newcomer", namespace, [other])
    since = len(cluster.audit_events(USER_AGENT))
    expected = f"namespace {namespace}: the Dynamo operator manages graphs there ({DGD_KIND} op-graph)"
    for failure in (failed_preview(newcomer), failed_up(newcomer), failed_preview(ours)):
        assert expected in failure, failure[-3000:]
    assert our_writes(cluster, since) == []
    assert not [d for d in kube.list("apps/v1", "Deployment", namespace) if "other" in d["metadata"]["name"]]
    # Once the operator's graph is gone, the stack deploys as before (nothing changed meanwhile).
    assert kube.delete(dgd, propagation="Background") and kube.wait_deleted(dgd, 60)
    preview = ours.preview(on_output=lambda _: None)
    assert set(preview.change_summary) == {"same"}, preview.stdout[-TAIL * 100 :]
    destroy(ours)
    destroy(newcomer)
