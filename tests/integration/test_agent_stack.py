"""A stack with the dynamo-infra agent (`dynamo-infra:agent`) and a graph whose planner runs in its
kubernetes environment, through the real Pulumi CLI on the local control plane (admission on,
nothing awaited).

`up` deploys the agent (ServiceAccount, Deployment, Role and RoleBinding) and writes the graph's DGD
record with the `dynamo-infra.io/components` annotation the agent reads. The planner's and agent's
run-time changes are then made by hand, as they make them: the planner scales the adapted decode
worker through its DGDSA's scale subresource and the prefill worker by a JSON patch of the DGD; the
agent carries the DGDSA's replicas to the DGD and both to the Deployments' scale. A preview shows no
change, and an `up` that changes the workers (new Deployments: their hash changed) reverts none of
them: the new Deployments start from the planner's replicas, as the operator's new DCDs would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pulumi import automation as auto

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import stub
from tests.integration.harness import GraphStack, graph_stack
from tools.localcluster import LocalCluster

BETA = "nvidia.com/v1beta1"
GRAPH_NAME = "agentg"
# The agent image (never pulled: kwok runs no containers).
AGENT_IMAGE = "ghcr.io/example/dynamo-infra:0.1.0"
AGENT = "dynamo-infra-agent"
# What the agent's and the planner's writes are recorded as.
AGENT_MANAGER, PLANNER_MANAGER = "dynamo-infra-agent", "planner"
MOCKER = "nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.4.0"
GRAPH = f"""\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: {GRAPH_NAME}
spec:
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec:
        mainContainer:
          image: {MOCKER}
    prefill:
      componentType: worker
      subComponentType: prefill
      replicas: 1
      extraPodSpec:
        mainContainer:
          image: {MOCKER}
          command: [python3, -m, dynamo.mocker]
          args: [--model-path, /models/tiny-chat, --disaggregation-mode, prefill]
    decode:
      componentType: worker
      subComponentType: decode
      replicas: 1
      scalingAdapter:
        enabled: true
      extraPodSpec:
        mainContainer:
          image: {MOCKER}
          command: [python3, -m, dynamo.mocker]
          args: [--model-path, /models/tiny-chat, --disaggregation-mode, decode]
    Planner:
      componentType: planner
      replicas: 1
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/dynamo-planner:1.4.0
          command: [python3, -m, dynamo.planner]
          args: [--config, '{{"environment": "kubernetes", "backend": "mocker"}}']
"""
# The workers' containers, and an env var added to them: a new worker hash, so new Deployments.
WORKER_ARGS = ("--disaggregation-mode, prefill]\n", "--disaggregation-mode, decode]\n")
WORKER_ENV = "          env:\n            - {name: DYN_LOG, value: debug}\n"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Iterator[GraphStack]:
    # Nothing awaited: replicas are what is checked here, and rollouts under kwok cost time.
    with graph_stack(tmp_path_factory, cluster, GRAPH_NAME, GRAPH, **{"await": {"mode": "skip"}}) as r:
        r.stack.set_config("dynamo-infra:agent", auto.ConfigValue(json.dumps({"image": AGENT_IMAGE})))
        yield r


def record(rig: GraphStack) -> Manifest:
    live = rig.kube.get(stub(BETA, "DynamoGraphDeployment", rig.ns, GRAPH_NAME))
    assert live is not None
    return live


def record_replicas(rig: GraphStack) -> dict[str, Any]:
    return {c["name"]: c.get("replicas") for c in record(rig)["spec"]["components"]}


def scaled(rig: GraphStack, component: str) -> int:
    return int(rig.deployment(f"{GRAPH_NAME}-{component}-")["spec"]["replicas"])


def patch_record(rig: GraphStack, component: str, replicas: int, manager: str) -> None:
    """A JSON patch of the DGD record's component replicas, guarded by its name (as the planner does)."""
    index = [c["name"] for c in record(rig)["spec"]["components"]].index(component)
    info = rig.kube.resource(BETA, "DynamoGraphDeployment")
    ops = [
        {"op": "test", "path": f"/spec/components/{index}/name", "value": component},
        {"op": "add", "path": f"/spec/components/{index}/replicas", "value": replicas},
    ]
    rig.kube.request(
        "PATCH", info.path(rig.ns, GRAPH_NAME), body=ops, params={"fieldManager": manager},
        content_type="application/json-patch+json",
    )  # fmt: skip


def test_up_deploys_the_agent_and_annotates_the_record(rig: GraphStack) -> None:
    rig.up()
    # With the agent, the planner is served: no warning.
    assert not any("it never scales" in line for line in rig.lines), "\n".join(rig.lines)
    for kind, api in (("ServiceAccount", "v1"), ("Deployment", "apps/v1"), ("Role", "rbac.authorization.k8s.io/v1"),
                      ("RoleBinding", "rbac.authorization.k8s.io/v1")):  # fmt: skip
        obj = rig.kube.get(stub(api, kind, rig.ns, AGENT))
        assert obj is not None, kind
        assert obj["metadata"]["annotations"]["dynamo-infra.io/owner-stack"].endswith(f"/{GRAPH_NAME}")
    deployment = rig.kube.get(stub("apps/v1", "Deployment", rig.ns, AGENT))
    assert deployment is not None
    (main,) = deployment["spec"]["template"]["spec"]["containers"]
    assert main["image"] == AGENT_IMAGE and main["command"] == [
        "dynamo-infra",
        "agent",
        "--namespace",
        rig.ns,
    ]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == AGENT
    # Not awaited where the stack awaits no workload.
    assert deployment["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    components = json.loads(record(rig)["metadata"]["annotations"]["dynamo-infra.io/components"])
    assert {n: c["replicas"] for n, c in components.items()} == {
        "Frontend": "graph",
        "prefill": "agent",
        "decode": "agent",
        "Planner": "graph",
    }
    decode = rig.deployment(f"{GRAPH_NAME}-decode-")["metadata"]["name"]
    assert components["decode"]["scaleTarget"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": decode,
    }
    assert components["decode"]["workload"] == f"apps/v1/Deployment/{rig.ns}/{decode}"
    assert record(rig)["status"]["state"]


def test_run_time_replicas_survive_preview_and_up(rig: GraphStack) -> None:
    adapter = stub(BETA, "DynamoGraphDeploymentScalingAdapter", rig.ns, f"{GRAPH_NAME}-decode")
    # The planner: the adapted decode worker through its DGDSA, the prefill worker by patching the DGD.
    rig.kube.set_scale(adapter, 3, manager=PLANNER_MANAGER)
    patch_record(rig, "prefill", 2, PLANNER_MANAGER)
    # The agent: the DGDSA's replicas to the DGD, the DGD's to each Deployment's scale.
    patch_record(rig, "decode", 3, AGENT_MANAGER)
    for component, replicas in (("decode", 3), ("prefill", 2)):
        rig.kube.set_scale(rig.deployment(f"{GRAPH_NAME}-{component}-"), replicas, manager=AGENT_MANAGER)
    expected = {"Frontend": 1, "prefill": 2, "decode": 3, "Planner": 1}
    assert record_replicas(rig) == expected
    preview = rig.stack.preview(diff=True, on_output=lambda _: None)
    assert set(preview.change_summary) == {"same"}, preview.stdout
    # An `up` that changes the workers (new Deployments, as the worker hash changes) and so the
    # records keeps what the planner chose.
    before = {c: rig.deployment(f"{GRAPH_NAME}-{c}-")["metadata"]["name"] for c in ("decode", "prefill")}
    text = rig.graph.read_text()
    for args in WORKER_ARGS:
        assert text.count(args) == 1
        text = text.replace(args, args + WORKER_ENV)
    rig.graph.write_text(text)
    result = rig.up(refresh=True)
    assert result.summary.resource_changes is not None and result.summary.resource_changes.get("update"), (
        result.summary.resource_changes
    )
    after = {c: rig.deployment(f"{GRAPH_NAME}-{c}-")["metadata"]["name"] for c in ("decode", "prefill")}
    assert all(after[c] != before[c] for c in after), (before, after)
    assert record_replicas(rig) == expected
    assert (scaled(rig, "decode"), scaled(rig, "prefill")) == (3, 2)
    live_adapter = rig.kube.get(adapter)
    assert live_adapter is not None and live_adapter["spec"]["replicas"] == 3


def test_destroy_removes_the_agent(rig: GraphStack) -> None:
    result = rig.stack.destroy(on_output=lambda _: None)
    assert result.summary.result == "succeeded"
    for kind, api in (("ServiceAccount", "v1"), ("Deployment", "apps/v1"), ("Role", "rbac.authorization.k8s.io/v1"),
                      ("RoleBinding", "rbac.authorization.k8s.io/v1")):  # fmt: skip
        assert rig.kube.get(stub(api, kind, rig.ns, AGENT)) is None, kind
