"""The agent's pure parts: reading a DGD record's components, the replica decisions, the named 403,
its kopf registration (watching handlers only: nothing stored in objects), its rendered objects and
least-privilege rules."""

from __future__ import annotations

import json
from pathlib import Path

import kopf
import pytest

from dynamo_infra.agent.app import Api, Graphs, register, settings
from dynamo_infra.agent.errors import Forbidden, named, request_rule
from dynamo_infra.agent.scale import adapter_changes, scale_requests
from dynamo_infra.agent.status import RecordError, components_of, recorded
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.cli.main import parser
from dynamo_infra.kube.connection import KubeconfigError, from_environment, in_cluster
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.render.runtime.agent import AGENT_NAME, AGENT_RULES, agent_command, agent_objects
from dynamo_infra.render.runtime.records import COMPONENTS_ANNOTATION

TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "g-worker"}


def record(owners: dict[str, str], replicas: dict[str, int | None]) -> Manifest:
    annotation = {
        n: {"watch": {}, "workload": "", "replicas": o, **({"scaleTarget": TARGET} if o != "none" else {})}
        for n, o in owners.items()
    }
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {
            "name": "g",
            "namespace": "ns",
            "annotations": {COMPONENTS_ANNOTATION: json.dumps(annotation)},
        },
        "spec": {
            "components": [
                {"name": n, **({"replicas": r} if r is not None else {})} for n, r in replicas.items()
            ]
        },
    }


def dgdsa(component: str, replicas: int) -> Manifest:
    return {
        "metadata": {"name": f"g-{component.lower()}"},
        "spec": {"replicas": replicas, "dgdRef": {"name": "g", "componentName": component}},
    }


def test_only_dgds_with_the_annotation_are_recorded() -> None:
    assert recorded(record({"W": "agent"}, {"W": 1}))
    operators = {"metadata": {"name": "g", "annotations": {"nvidia.com/x": "y"}}}
    assert not recorded(operators) and components_of(operators) == {}


def test_components_are_read_with_their_scale_target_in_the_graphs_namespace() -> None:
    c = components_of(record({"W": "agent", "F": "graph"}, {"W": 1, "F": 1}))
    assert c["W"].replicas == "agent" and c["F"].replicas == "graph"
    assert c["W"].scale_target == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "g-worker", "namespace": "ns"},
    }


def test_a_broken_annotation_names_the_graph() -> None:
    bad = {"metadata": {"name": "g", "namespace": "ns", "annotations": {COMPONENTS_ANNOTATION: "{"}}}
    with pytest.raises(RecordError, match=r"ns/g: annotation dynamo-infra.io/components is not JSON"):
        components_of(bad)


def test_status_watches_only_the_kinds_that_decide_readiness() -> None:
    dgd = record({"W": "agent"}, {"W": 1})
    ann = json.loads(dgd["metadata"]["annotations"][COMPONENTS_ANNOTATION])
    ann["W"]["watch"] = {
        "apps/v1/Deployment/ns/w": {"apiVersion": "apps/v1", "kind": "Deployment"},
        "v1/Service/ns/w": {"apiVersion": "v1", "kind": "Service"},
    }
    dgd["metadata"]["annotations"][COMPONENTS_ANNOTATION] = json.dumps(ann)
    assert list(components_of(dgd)["W"].status_input()["watch"]) == ["apps/v1/Deployment/ns/w"]


def test_an_adapter_request_becomes_a_tested_json_patch_of_agent_components_only() -> None:
    dgd = record({"F": "graph", "W": "agent", "A": "autoscaler"}, {"F": 1, "W": 1, "A": 1})
    components = components_of(dgd)
    changes, ops = adapter_changes(dgd, components, [dgdsa("W", 2), dgdsa("F", 5), dgdsa("A", 5)])
    assert [(c.component, c.before, c.after) for c in changes] == [("W", 1, 2)]
    assert ops == [
        {"op": "test", "path": "/spec/components/1/name", "value": "W"},
        {"op": "add", "path": "/spec/components/1/replicas", "value": 2},
    ]
    assert adapter_changes(dgd, components, [dgdsa("W", 1)]) == ([], [])


def test_scale_requests_are_the_agent_components_dgd_replicas() -> None:
    dgd = record({"F": "graph", "W": "agent", "U": "agent", "N": "none"}, {"F": 3, "W": 2, "U": None, "N": 4})
    components = components_of(dgd)
    assert components["N"].scale_target is None
    assert [(c.name, r) for c, r in scale_requests(dgd, components)] == [("W", 2)]


@pytest.mark.parametrize(
    ("method", "path", "rule"),
    [
        ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/w/scale", ("patch", "deployments/scale", "ns")),
        ("GET", "/apis/apps/v1/namespaces/ns/deployments/w/scale", ("get", "deployments/scale", "ns")),
        ("GET", "/apis/nvidia.com/v1beta1/namespaces/ns/dynamographdeploymentscalingadapters", ("list", "dynamographdeploymentscalingadapters", "ns")),
        ("PATCH", "/apis/nvidia.com/v1beta1/namespaces/ns/dynamographdeployments/g/status?x=1", ("patch", "dynamographdeployments/status", "ns")),
        ("GET", "/api/v1/namespaces/ns/pods/p", ("get", "pods", "ns")),
        ("GET", "/api/v1/namespaces", ("list", "namespaces", "")),
    ],
)  # fmt: skip
def test_a_request_is_named_as_the_rbac_rule_it_needs(
    method: str, path: str, rule: tuple[str, str, str]
) -> None:
    assert request_rule(method, path) == rule


def test_a_403_names_the_missing_rule() -> None:
    err = KubeError(
        "x", 403, "Forbidden", method="PATCH", path="/apis/apps/v1/namespaces/ns/deployments/w/scale"
    )
    failure = named(err)
    assert isinstance(failure, Forbidden)
    assert (
        str(failure)
        == "forbidden: patch deployments/scale in namespace ns (the agent's Role lacks this rule)"
    )
    assert not isinstance(named(KubeError("boom", 500)), Forbidden)


def test_kopf_gets_watching_handlers_only_and_keeps_nothing_in_objects() -> None:
    registry = kopf.OperatorRegistry()
    register(registry, Graphs(Api(lambda: in_cluster({}))))
    watched = {h.selector.any_name for h in registry._watching.get_all_handlers()}
    assert watched == {
        "dynamographdeployments", "dynamographdeploymentscalingadapters",
        "deployments", "leaderworkersets", "podcliques", "podcliquescalinggroups",
    }  # fmt: skip
    # No changing or spawning handlers: no progress/diff-base annotations, no finalizers.
    assert not registry._changing.get_all_handlers()
    assert not registry._spawning.get_all_handlers()
    s = settings()
    assert s.peering.standalone and not s.posting.enabled and s.scanning.disabled


def test_in_cluster_credentials(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("tok\n")
    (tmp_path / "ca.crt").write_text("ca")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    conn = in_cluster(env, tmp_path)
    assert (conn.server, conn.token, conn.ca_pem) == ("https://10.0.0.1:443", "tok", b"ca")
    assert (
        in_cluster({**env, "KUBERNETES_SERVICE_HOST": "fd00::1"}, tmp_path).server == "https://[fd00::1]:443"
    )
    with pytest.raises(KubeconfigError, match="not in a cluster"):
        from_environment({})


def test_the_cli_takes_repeated_namespaces() -> None:
    args = parser().parse_args(["agent", "--namespace", "a", "--namespace", "b"])
    assert args.namespace == ["a", "b"]
    with pytest.raises(SystemExit):
        parser().parse_args(["agent"])


def test_rendered_objects() -> None:
    objects = agent_objects("ops", ["b", "a", "b"], "registry/agent:1")
    assert [(o["kind"], o["metadata"]["namespace"]) for o in objects] == [
        ("ServiceAccount", "ops"), ("Deployment", "ops"),
        ("Role", "a"), ("RoleBinding", "a"), ("Role", "b"), ("RoleBinding", "b"),
    ]  # fmt: skip
    assert {o["metadata"]["name"] for o in objects} == {AGENT_NAME}
    pod = objects[1]["spec"]["template"]
    (main,) = pod["spec"]["containers"]
    assert main["name"] == "main" and main["image"] == "registry/agent:1"
    assert main["command"] == ["dynamo-infra", "agent", "--namespace", "a", "--namespace", "b"]
    assert main["command"] == agent_command(["a", "b"])
    assert pod["spec"]["serviceAccountName"] == AGENT_NAME
    assert pod["metadata"]["labels"]["app.kubernetes.io/name"] == AGENT_NAME
    assert objects[3]["subjects"] == [{"kind": "ServiceAccount", "name": AGENT_NAME, "namespace": "ops"}]
    assert objects[2]["rules"] == AGENT_RULES
    custom = agent_objects("ops", ["a"], "i", replicas=2, resources={"limits": {"memory": "1Gi"}})[1]
    assert custom["spec"]["replicas"] == 2
    assert custom["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}}


def test_the_rules_are_least_privilege() -> None:
    """Namespaced, no wildcard, no secrets, pods only read, nothing created or deleted; writes only
    where the agent writes: the DGD record (replicas), the records' status, the workloads' scale, the
    DynamoModels' finalizer and status."""
    granted = {
        (g, r, v)
        for rule in AGENT_RULES
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    assert not any("*" in x for triple in granted for x in triple)
    writes = {(r, v) for _g, r, v in granted if v not in ("get", "list", "watch")}
    assert writes == {
        ("dynamographdeployments", "patch"),
        ("dynamographdeployments/status", "patch"),
        ("dynamographdeploymentscalingadapters/status", "patch"),
        ("deployments/scale", "patch"),
        ("leaderworkersets/scale", "patch"),
        ("podcliques/scale", "patch"),
        ("podcliquescalinggroups/scale", "patch"),
        # LoRA adapters: the DynamoModel's finalizer and status.
        ("dynamomodels", "patch"),
        ("dynamomodels/status", "patch"),
    }
    assert not {r for _g, r, _v in granted} & {"secrets", "roles", "rolebindings"}
    # Pods are only read, one at a time, by the LoRA handlers (an endpoint without LoRA management
    # may be a vLLM prefill covered by another: render/runtime/lora.py RULES).
    assert {(g, r, v) for g, r, v in granted if r == "pods"} == {("", "pods", "get")}
