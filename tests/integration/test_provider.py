"""The dynamic provider's lifecycle against the local control plane, without the Pulumi engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynamo_infra.api import load_yaml
from dynamo_infra.api.manifest import unpack
from dynamo_infra.kube.client import FIELD_MANAGER, USER_AGENT, KubeClient, object_key
from dynamo_infra.reconcile.ownership import ForeignObject
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider
from dynamo_infra.render import render_graph
from tools.localcluster import LocalCluster

NAMESPACE_PREFIX = "prov"


def component_props(
    repo: Path, cluster: LocalCluster, ns: str, component: str, text: str | None = None
) -> dict:
    dgd = load_yaml(text or (repo / "examples" / "agg.yaml").read_text()).graphs[0]
    rendered = render_graph(dgd, namespace=ns)
    objs = rendered.components[component].objects if component else rendered.shared
    return {
        "kubeconfig": cluster.kubeconfig.read_text(),
        "context": "",
        "namespace": ns,
        "graph": rendered.name,
        "component": component,
        "objects": {object_key(o): o for o in objs},
        "replicasExternal": False,
        "await": {"mode": "wait", "timeoutSeconds": 120},
    }


def test_create_update_read_delete(
    repo: Path, cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    p = ComponentWorkloadProvider()
    shared = p.create(component_props(repo, cluster, namespace, ""))
    props = component_props(repo, cluster, namespace, "Frontend")
    created = p.create(props)
    outs = created.outs
    assert outs["status"]["ready"] is True
    dep = kube.get(next(o for o in props["objects"].values() if o["kind"] == "Deployment"))
    assert dep is not None
    assert any(
        m["manager"] == FIELD_MANAGER and m["operation"] == "Apply" for m in dep["metadata"]["managedFields"]
    )

    # Drift on a field we own shows up in read, and update (force apply) restores it.
    key = next(k for k, o in props["objects"].items() if o["kind"] == "Deployment")
    kube.request(
        "PATCH",
        kube.resource("apps/v1", "Deployment").path(namespace, dep["metadata"]["name"]),
        body={"spec": {"template": {"spec": {"terminationGracePeriodSeconds": 5}}}},
        content_type="application/merge-patch+json",
    )
    read = p.read(created.id, outs)
    assert read.inputs["objects"][key]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 5
    assert unpack(read.outs["objects"]) == read.inputs["objects"], "outputs keep the objects packed"
    assert p.diff(created.id, read.inputs, props).changes is True
    p.update(created.id, read.outs, props)
    restored = kube.get(props["objects"][key])
    assert (
        restored is not None and restored["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 60
    )

    # Objects that leave the rendering are pruned.
    svc_key = next(k for k, o in props["objects"].items() if o["kind"] == "Service")
    fewer = {**props, "objects": {k: o for k, o in props["objects"].items() if k != svc_key}}
    updated = p.update(created.id, outs, fewer)
    assert kube.get(props["objects"][svc_key]) is None
    assert updated.outs["inventory"] == [key]

    p.delete(created.id, updated.outs)
    assert kube.get(props["objects"][key]) is None
    p.delete(shared.id, shared.outs)
    assert all(kube.get(o) is None for o in component_props(repo, cluster, namespace, "")["objects"].values())
    assert cluster.audit_events(USER_AGENT), "our requests carry our user agent"


def test_an_object_someone_else_made_is_not_taken_over(
    repo: Path, cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    props = component_props(repo, cluster, namespace, "Frontend")
    svc = next(o for o in props["objects"].values() if o["kind"] == "Service")
    kube.apply({**svc, "spec": {"ports": [{"port": 1234}]}}, manager="kubectl")
    with pytest.raises(ForeignObject, match=f"{object_key(svc)} belongs to field manager kubectl"):
        ComponentWorkloadProvider().create(props)
    live = kube.get(svc)
    assert live is not None and [p["port"] for p in live["spec"]["ports"]] == [1234]
    assert all(kube.get(o) is None for o in props["objects"].values() if o["kind"] != "Service")
