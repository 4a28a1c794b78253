"""Reconciliation you can trust, through the real Pulumi CLI against the local control plane:
drift repair, prune, autoscaler ownership, PVC retention, secrets, request counts (and what the
operator's webhook refuses on the way: a scaling adapter's replicas, a removed component)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from pulumi import automation as auto

from dynamo_infra.kube.client import PROGRAM_USER_AGENT, USER_AGENT
from tests.conftest import DATA
from tests.integration.harness import GraphStack, admission_off, graph_stack, preview_failure
from tools.localcluster import LocalCluster

# The local cluster's own controllers (their writes are not ours).
CLUSTER_AGENTS = (
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "local-volume-provisioner",
    "kube-apiserver",
)

GRAPH = (DATA / "graphs" / "reconcile.yaml").read_text()


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Iterator[GraphStack]:
    with graph_stack(tmp_path_factory, cluster, "rec", GRAPH) as r:
        autoscaler = {"kind": "hpa", "minReplicas": 1, "maxReplicas": 6}
        r.stack.set_config(
            "dynamo-infra:autoscalers", auto.ConfigValue(json.dumps({"rec": {"Worker": autoscaler}}))
        )
        r.up()
        yield r


def test_noop_up_writes_nothing(rig: GraphStack) -> None:
    before = len(rig.cluster.audit_events())
    mine_before = len(rig.cluster.audit_events(USER_AGENT))
    program_before = len(rig.cluster.audit_events(PROGRAM_USER_AGENT))
    preview = rig.stack.preview(on_output=lambda _: None)
    assert set(preview.change_summary) == {"same"}
    rig.up()
    events = rig.cluster.audit_events()[before:]
    writes = [
        (e["verb"], e["requestURI"], e.get("userAgent"))
        for e in events
        if e["verb"] not in ("get", "list", "watch")
        and not str(e.get("userAgent", "")).startswith(CLUSTER_AGENTS)
    ]
    assert writes == []
    ours = rig.cluster.audit_events(USER_AGENT)[mine_before:]
    program = rig.cluster.audit_events(PROGRAM_USER_AGENT)[program_before:]
    print(
        f"no-op preview + up: {len(ours)} requests from our providers, {len(program)} reads by the program "
        f"(ownership of the platform objects), {len(events)} API requests in all: "
        f"{sorted({e['requestURI'] for e in program})}"
    )
    assert len(ours) == 0
    # Per program run (preview, up): discovery of v1, apiextensions.k8s.io/v1 and
    # rbac.authorization.k8s.io/v1, the namespace, the planner and EPP service accounts, the MPI SSH
    # key secret, the metadata of the four Dynamo CRDs (DGD, DGDSA, DWM, DynamoModel) and of the
    # planner and EPP ClusterRoles (each used as it is when another tool made it): 13; and the list of
    # the namespace's DGDs (`dynamo_infra.components.neighbours`): 14.
    reads = sorted({e["requestURI"] for e in program})
    assert {e["verb"] for e in program} == {"get", "list"} and len(program) <= 28, (len(program), reads)


def test_drift_is_shown_by_refresh_and_repaired_by_up(rig: GraphStack) -> None:
    dep = rig.deployment("rec-frontend")
    # Another field manager changes an env var we own (as `kubectl edit` would).
    env = dep["spec"]["template"]["spec"]["containers"][0]["env"]
    idx = next(i for i, e in enumerate(env) if e["name"] == "DYN_HTTP_PORT")
    rig.kube.request(
        "PATCH",
        rig.kube.resource("apps/v1", "Deployment").path(rig.ns, dep["metadata"]["name"]),
        body=[
            {"op": "replace", "path": f"/spec/template/spec/containers/0/env/{idx}/value", "value": "9999"},
            # A field we do not set: kept by the repair.
            {"op": "add", "path": "/metadata/annotations/team", "value": "inference"},
        ],
        params={"fieldManager": "kubectl-edit"},
        content_type="application/json-patch+json",
    )
    lines: list[str] = []
    refresh = rig.stack.refresh(on_output=lines.append)
    assert refresh.summary.resource_changes and refresh.summary.resource_changes.get("update") == 1
    # The refresh says which manager changed the field we own.
    changed = f"spec.template.spec.containers[0].env[{idx}].value was changed by kubectl-edit"
    assert changed in "\n".join(lines), "\n".join(lines[-60:])
    preview = rig.stack.preview(diff=True, on_output=lines.append)
    assert preview.change_summary.get("update") == 1
    assert re.search(r'"9999" => "8000"', "\n".join(lines)), "\n".join(lines[-60:])
    rig.up()
    repaired = rig.deployment("rec-frontend")
    env = repaired["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {e["name"]: e.get("value") for e in env}["DYN_HTTP_PORT"] == "8000"
    assert repaired["metadata"]["annotations"]["team"] == "inference"


def test_deleted_service_is_recreated_by_up_refresh(rig: GraphStack) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "rec-frontend", "namespace": rig.ns}}
    assert rig.kube.delete(svc, propagation="Background")
    rig.kube.wait_deleted(svc, 30)
    rig.up(refresh=True)
    assert rig.kube.get(svc) is not None


def test_autoscaler_replicas_survive_two_ups(rig: GraphStack) -> None:
    dep = rig.deployment("rec-worker-")
    assert dep["spec"]["replicas"] == 2
    # Scale through the scale subresource as an HPA would.
    path = rig.kube.resource("apps/v1", "Deployment").path(rig.ns, dep["metadata"]["name"]) + "/scale"
    rig.kube.request(
        "PATCH", path, body={"spec": {"replicas": 4}}, params={"fieldManager": "horizontal-pod-autoscaler"},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    rig.up()
    assert rig.deployment("rec-worker-")["spec"]["replicas"] == 4
    # The graph's own count may not change: the operator's webhook refuses it (the adapter owns it).
    rig.graph.write_text(GRAPH.replace("replicas: 2", "replicas: 3"))
    failure = preview_failure(rig.stack)
    assert (
        "spec.services.Worker.replicas: Forbidden: cannot be modified directly when scaling adapter"
        in failure
    )
    rig.graph.write_text(GRAPH)
    rig.up()
    assert rig.deployment("rec-worker-")["spec"]["replicas"] == 4


def test_hpa_targets_the_adapted_workload(rig: GraphStack) -> None:
    worker = rig.deployment("rec-worker-")["metadata"]["name"]
    hpa = rig.kube.get(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": worker, "namespace": rig.ns},
        }
    )
    assert hpa is not None
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": worker}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 6)


def test_state_holds_no_plaintext_credentials(rig: GraphStack) -> None:
    token = json.loads(rig.cluster.kubeconfig.read_text())["users"][0]["user"]["token"]
    state_dir = rig.project.parent / "state"
    files = [f for f in state_dir.rglob("*") if f.is_file()]
    assert files, "the file backend holds the stack"
    assert [str(f) for f in files if token in f.read_text(errors="replace")] == []
    current = next(f for f in files if f.name == "rec.json" and "stacks" in f.parts)
    assert "ciphertext" in current.read_text()
    # Provider logs and errors never print it either.
    lines: list[str] = []
    rig.stack.preview(on_output=lines.append, diff=True)
    assert token not in "\n".join(lines)


def test_removing_a_component_prunes_only_its_objects(rig: GraphStack) -> None:
    planner = rig.deployment("rec-planner")
    frontend_uid = rig.deployment("rec-frontend")["metadata"]["uid"]
    text = GRAPH[: GRAPH.index("    Planner:")]
    rig.graph.write_text(text)
    # The operator's webhook keeps a graph's components: refused, nothing deleted.
    assert "components removed: [Planner]" in preview_failure(rig.stack)
    assert rig.kube.get(planner) is not None
    with admission_off(rig.stack):
        result = rig.up()
    # Only the component's resource goes (the shared objects' workload keeps no admission now: no change;
    # the records' DGD loses the component: their update).
    changes = result.summary.resource_changes
    assert changes is not None and changes.get("delete") == 1 and changes.get("update") == 1, changes
    assert rig.kube.get(planner) is None
    assert rig.deployment("rec-frontend")["metadata"]["uid"] == frontend_uid
    rig.graph.write_text(GRAPH)
    rig.up()


def test_pvc_is_retained_on_destroy_unless_opted_in(rig: GraphStack) -> None:
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "model-cache", "namespace": rig.ns},
    }
    live = rig.kube.get(claim)
    assert live is not None and live["status"]["phase"] == "Bound"
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": live["spec"]["volumeName"]},
    }
    uid = live["metadata"]["uid"]
    assert rig.stack.destroy(on_output=lambda _: None).summary.result == "succeeded"
    kept = rig.kube.get(claim)
    assert kept is not None and kept["metadata"]["uid"] == uid and rig.kube.get(volume) is not None
    assert rig.kube.list("apps/v1", "Deployment", rig.ns) == []
    # A new `up` adopts the kept claim (never modified); with the opt-in, destroy deletes it.
    rig.stack.set_config("dynamo-infra:deletePvcsOnDestroy", auto.ConfigValue("true"))
    rig.up()
    assert rig.kube.get(claim)["metadata"]["uid"] == uid  # type: ignore[index]
    rig.stack.destroy(on_output=lambda _: None)
    assert rig.kube.get(claim) is not None, "an adopted claim is never deleted"
    rig.kube.delete(claim, propagation="Background")
    rig.kube.wait_deleted(claim, 30)
    rig.up()
    rig.stack.destroy(on_output=lambda _: None)
    assert rig.kube.wait_deleted(claim, 30), "a claim we created is deleted with the opt-in"
    rig.stack.set_config("dynamo-infra:deletePvcsOnDestroy", auto.ConfigValue("false"))
    rig.up()
