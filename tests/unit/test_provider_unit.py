"""The dynamic provider's pure parts: diff, apply order, drift projection, kubeconfig parsing."""

from __future__ import annotations

import base64

import pytest

from dynamo_infra.kube import connection
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.reconcile.base import DELETE_TIMEOUT_S
from dynamo_infra.reconcile.inputs import apply_order
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider
from dynamo_infra.reconcile.workload import delete_objects, project

DEP = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "w", "namespace": "n"},
    "spec": {"replicas": 1},
}
SVC = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "w", "namespace": "n"}}
SA = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa", "namespace": "n"}}


def props(**over: object) -> dict:
    base = {
        "kubeconfig": "k",
        "namespace": "n",
        "graph": "g",
        "component": "c",
        "objects": {"apps/v1/Deployment/n/w": DEP},
        "replicasExternal": False,
        "await": {"mode": "wait", "timeoutSeconds": 5},
    }
    return {**base, **over}


def test_diff_reports_no_change_when_only_outputs_differ() -> None:
    p = ComponentWorkloadProvider()
    olds = {**props(), "status": {"ready": True}, "inventory": ["apps/v1/Deployment/n/w"]}
    assert p.diff("id", olds, props()).changes is False


def test_diff_reports_manifest_changes_without_replacing() -> None:
    p = ComponentWorkloadProvider()
    scaled = {"apps/v1/Deployment/n/w": {**DEP, "spec": {"replicas": 2}}}
    d = p.diff("id", props(), props(objects=scaled))
    assert d.changes is True and d.replaces == []


@pytest.mark.parametrize("field", ["pullSecretDiscovery", "replicasExternal"])
def test_diff_reports_a_flag_changed_alone(field: str) -> None:
    """Every input is diffed: a flag turned on alone is applied by the next `up`."""
    p = ComponentWorkloadProvider()
    assert "pullSecretDiscovery" in p.inputs.diffed()
    d = p.diff("id", props(**{field: False}), props(**{field: True}))
    assert d.changes is True and d.replaces == []


def test_apply_order_puts_dependencies_before_workloads() -> None:
    objs = {"apps/v1/Deployment/n/w": DEP, "v1/Service/n/w": SVC, "v1/ServiceAccount/n/sa": SA}
    assert apply_order(objs) == ["v1/ServiceAccount/n/sa", "v1/Service/n/w", "apps/v1/Deployment/n/w"]


def test_check_rejects_bad_manifests() -> None:
    r = ComponentWorkloadProvider().check({}, props(objects={"x": {"kind": "Service"}}, kubeconfig=""))
    assert sorted(f.property for f in r.failures) == ["kubeconfig", "objects.x"]


def test_projection_keeps_only_fields_we_set() -> None:
    live = {"spec": {"replicas": 3, "revisionHistoryLimit": 10, "template": {"a": [1, 2]}}, "status": {}}
    desired = {"spec": {"replicas": 1, "template": {"a": [1, 2]}}}
    assert project(live, desired) == {"spec": {"replicas": 3, "template": {"a": [1, 2]}}}


def test_kubeconfig_parses_token_and_ca_and_rejects_missing_context() -> None:
    ca = base64.b64encode(b"PEM").decode()
    text = f"""
apiVersion: v1
kind: Config
current-context: c
contexts: [{{name: c, context: {{cluster: k, user: u}}}}]
clusters: [{{name: k, cluster: {{server: "https://127.0.0.1:6443/", certificate-authority-data: {ca}}}}}]
users: [{{name: u, user: {{token: s3cr3t}}}}]
"""
    conn = connection.parse(text)
    assert (
        conn.server == "https://127.0.0.1:6443" and conn.ca_pem == b"PEM" and conn.bearer_token() == "s3cr3t"
    )
    with pytest.raises(connection.KubeconfigError) as e:
        connection.parse(text, context="other")
    assert "s3cr3t" not in str(e.value)


def test_check_rejects_scale_of_unobserved_objects_and_bad_counts() -> None:
    clique = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "metadata": {"name": "g-0-w", "namespace": "n"},
    }
    key = "grove.io/v1alpha1/PodClique/n/g-0-w"
    p = ComponentWorkloadProvider()
    good = p.check({}, props(observe={key: clique}, scale={key: 3.0}))
    assert good.failures == []
    bad = p.check({}, props(observe={key: clique}, scale={key: -1, "x/Y/n/z": 1}))
    assert sorted(f.property for f in bad.failures) == [f"scale.{key}", "scale.x/Y/n/z"]


def test_diff_sees_a_scale_change() -> None:
    key = "grove.io/v1alpha1/PodClique/n/g-0-w"
    p = ComponentWorkloadProvider()
    assert p.diff("id", props(scale={key: 1}), props(scale={key: 2})).changes is True
    assert p.diff("id", props(), props(scale=None)).changes is False


class _DeletingClient:
    """Records deletes and waits; `gone` says which objects a wait finds gone."""

    def __init__(self, gone: bool = True) -> None:
        self.calls: list[tuple[str, str, float]] = []
        self.gone = gone

    def delete(self, obj: dict, propagation: str = "Foreground") -> bool:
        assert propagation == "Foreground"  # a delete that waits for its objects takes their pods first
        self.calls.append(("delete", obj["metadata"]["name"], 0.0))
        return obj["metadata"]["name"] != "absent"

    def wait_deleted(self, obj: dict, timeout: float) -> bool:
        self.calls.append(("wait", obj["metadata"]["name"], timeout))
        return self.gone


def test_a_delete_sends_every_delete_before_waiting_and_waits_once_overall() -> None:
    keys = ["v1/ConfigMap/ns/c", "v1/Service/ns/absent", "apps/v1/Deployment/ns/d"]
    client = _DeletingClient()
    delete_objects(client, keys, {}, lambda _: None)  # type: ignore[arg-type]
    # Reverse apply order, all deletes first; objects the API server did not have are not waited for.
    assert [(op, name) for op, name, _ in client.calls] == [
        ("delete", "d"), ("delete", "absent"), ("delete", "c"), ("wait", "d"), ("wait", "c"),
    ]  # fmt: skip
    waits = [t for op, _, t in client.calls if op == "wait"]
    assert waits[0] <= DELETE_TIMEOUT_S and waits[1] <= waits[0]
    stuck = _DeletingClient(gone=False)
    with pytest.raises(KubeError, match="apps/v1/Deployment/ns/d still exists"):
        delete_objects(stuck, keys, {}, lambda _: None)  # type: ignore[arg-type]
