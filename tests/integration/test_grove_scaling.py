"""Grove replica changes after creation, through the real Pulumi CLI against the local control plane
(Grove CRDs installed by the platform layer; the test creates the PodClique and PodCliqueScalingGroup
Grove's controller would, from the PodCliqueSet's template).

As the operator does, a component's replicas go to its PodClique (single node) or
PodCliqueScalingGroup (multinode) through the scale subresource; a component whose replicas an
autoscaler owns (`scalingAdapter`) is never scaled; a hand-made scale shows on refresh and the next
`up` restores the graph's count.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pulumi import automation as auto

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import USER_AGENT
from tests.conftest import DATA
from tests.integration.harness import GROVE, GraphStack, graph_stack, play_grove, preview_failure
from tools.localcluster import LocalCluster

GRAPH = (DATA / "graphs" / "grove_scaling.yaml").read_text()


def target(rig: GraphStack, kind: str, component: str) -> Manifest:
    """The PodClique or PodCliqueScalingGroup Grove made for a component."""
    return {
        "apiVersion": GROVE,
        "kind": kind,
        "metadata": {"name": f"gsc-0-{component}", "namespace": rig.ns},
    }


def replicas(rig: GraphStack, kind: str, component: str) -> int:
    live = rig.kube.get(target(rig, kind, component))
    assert live is not None
    return int(live["spec"]["replicas"])


def scale_by_hand(rig: GraphStack, kind: str, component: str, n: int, manager: str) -> None:
    path = rig.kube.resource(GROVE, kind).path(rig.ns, f"gsc-0-{component}") + "/scale"
    rig.kube.request(
        "PATCH", path, body={"spec": {"replicas": n}}, params={"fieldManager": manager},
        content_type="application/merge-patch+json",
    )  # fmt: skip


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Iterator[GraphStack]:
    options = {"multinode": {"orchestrator": "grove"}, "await": {"mode": "skip", "timeoutSeconds": 60}}
    with graph_stack(tmp_path_factory, cluster, "gsc", GRAPH, **options) as r:
        r.stack.set_config("dynamo-infra:platform", auto.ConfigValue(json.dumps({"installCrds": ["grove"]})))
        r.up()
        made = play_grove(r.kube, r.ns)
        assert sorted(o["metadata"]["name"] for o in made) == [
            "gsc-0-decode",
            "gsc-0-frontend",
            "gsc-0-prefill",
        ]
        yield r


def scale_requests(cluster: LocalCluster, since: int) -> list[tuple[str, str]]:
    return [
        (e["verb"], e["requestURI"].split("?")[0])
        for e in cluster.audit_events(USER_AGENT)[since:]
        if e["requestURI"].split("?")[0].endswith("/scale") and e["verb"] not in ("get", "list", "watch")
    ]


def test_replica_changes_go_through_the_scale_subresource(rig: GraphStack) -> None:
    assert replicas(rig, "PodClique", "frontend") == 1
    assert replicas(rig, "PodCliqueScalingGroup", "decode") == 1
    before = len(rig.cluster.audit_events(USER_AGENT))
    rig.graph.write_text(GRAPH.replace("replicas: 1\n      podTemplate", "replicas: 2\n      podTemplate", 1))
    rig.graph.write_text(
        rig.graph.read_text().replace(
            "      replicas: 1\n      multinode", "      replicas: 3\n      multinode"
        )
    )
    rig.up()
    assert replicas(rig, "PodClique", "frontend") == 2
    assert replicas(rig, "PodCliqueScalingGroup", "decode") == 3
    writes = scale_requests(rig.cluster, before)
    base = f"/apis/{GROVE}/namespaces/{rig.ns}"
    assert sorted(writes) == [
        ("patch", f"{base}/podcliques/gsc-0-frontend/scale"),
        ("patch", f"{base}/podcliquescalinggroups/gsc-0-decode/scale"),
    ]
    # The PodCliqueSet's template says the same (what a re-created clique would start from).
    pcs = rig.kube.get(
        {"apiVersion": GROVE, "kind": "PodCliqueSet", "metadata": {"name": "gsc", "namespace": rig.ns}}
    )
    assert pcs is not None
    template = pcs["spec"]["template"]
    assert next(c for c in template["cliques"] if c["name"] == "frontend")["spec"]["replicas"] == 2
    assert template["podCliqueScalingGroups"][0]["replicas"] == 3


def test_autoscaled_component_is_never_scaled(rig: GraphStack) -> None:
    scale_by_hand(rig, "PodClique", "prefill", 4, "horizontal-pod-autoscaler")
    text = rig.graph.read_text()
    # The graph's own count may not change: the operator's webhook refuses it (the adapter owns it).
    rig.graph.write_text(
        text.replace("replicas: 1\n      scalingAdapter", "replicas: 2\n      scalingAdapter")
    )
    failure = preview_failure(rig.stack)
    assert "spec.components[prefill].replicas: Forbidden: cannot be modified directly" in failure
    rig.graph.write_text(text)
    before = len(rig.cluster.audit_events(USER_AGENT))
    rig.up()
    assert replicas(rig, "PodClique", "prefill") == 4
    assert [w for w in scale_requests(rig.cluster, before) if "prefill" in w[1]] == []


def test_hand_scaling_is_drift_repaired_by_up(rig: GraphStack) -> None:
    want = replicas(rig, "PodClique", "frontend")
    rig.stack.refresh(on_output=lambda _: None)  # statuses now see the cliques created after `up`
    scale_by_hand(rig, "PodClique", "frontend", want + 5, "kubectl")
    refresh = rig.stack.refresh(on_output=lambda _: None)
    assert refresh.summary.resource_changes and refresh.summary.resource_changes.get("update") == 1
    preview = rig.stack.preview(on_output=lambda _: None)
    assert preview.change_summary.get("update") == 1
    rig.up()
    assert replicas(rig, "PodClique", "frontend") == want
    assert set(rig.stack.preview(on_output=lambda _: None).change_summary) == {"same"}
