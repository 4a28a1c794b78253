"""Rendering of the aggregated example: names, labels, defaults the operator injects."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynamo_infra.api import DynamoValidationError, load_yaml
from dynamo_infra.render import render_graph
from dynamo_infra.render.rendered import RenderedGraph


@pytest.fixture(scope="module")
def rendered(repo: Path) -> RenderedGraph:
    return render_graph(load_yaml(repo / "examples" / "agg.yaml").graphs[0], namespace="team-a")


def by_kind(objs: tuple[dict, ...], kind: str) -> dict:
    return next(o for o in objs if o["kind"] == kind)


def env_of(container: dict) -> dict[str, object]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_dcd_names_and_dynamo_namespace(rendered: RenderedGraph) -> None:
    assert rendered.dynamo_namespace == "team-a-vllm-agg"
    assert rendered.components["Frontend"].dcd_name == "vllm-agg-frontend"
    assert rendered.worker_hash is not None and len(rendered.worker_hash) == 8
    assert rendered.components["VllmWorker"].dcd_name == f"vllm-agg-vllmworker-{rendered.worker_hash}"


def test_deployment_selector_and_pod_labels(rendered: RenderedGraph) -> None:
    dep = by_kind(rendered.components["VllmWorker"].objects, "Deployment")
    name = rendered.components["VllmWorker"].dcd_name
    assert dep["spec"]["selector"] == {"matchLabels": {"nvidia.com/selector": name}}
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert labels == {
        "nvidia.com/dynamo-component": "VllmWorker",
        "nvidia.com/dynamo-component-type": "worker",
        "nvidia.com/dynamo-discovery-backend": "kubernetes",
        "nvidia.com/dynamo-discovery-enabled": "true",
        "nvidia.com/dynamo-graph-deployment-name": "vllm-agg",
        "nvidia.com/dynamo-namespace": "team-a-vllm-agg",
        "nvidia.com/dynamo-worker-hash": rendered.worker_hash,
        "nvidia.com/metrics-enabled": "true",
        "nvidia.com/selector": name,
    }
    assert dep["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
    }


def test_frontend_probes_follow_the_pinned_operator(rendered: RenderedGraph) -> None:
    main = by_kind(rendered.components["Frontend"].objects, "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert main["livenessProbe"] == {
        "httpGet": {"path": "/live", "port": "http"},
        "initialDelaySeconds": 15,
        "periodSeconds": 10,
        "timeoutSeconds": 1,
        "failureThreshold": 3,
    }
    assert main["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert "startupProbe" not in main
    assert main["command"] == ["python3"] and main["args"] == ["-m", "dynamo.frontend"]


def test_worker_env_is_merged_sorted_and_user_command_kept(rendered: RenderedGraph) -> None:
    spec = by_kind(rendered.components["VllmWorker"].objects, "Deployment")["spec"]["template"]["spec"]
    main = spec["containers"][0]
    names = [e["name"] for e in main["env"]]
    assert names == sorted(names)
    env = env_of(main)
    assert env["DYN_SYSTEM_PORT"] == "9090"
    assert env["DYN_NAMESPACE_WORKER_SUFFIX"] == rendered.worker_hash
    assert env["DYN_HEALTH_CHECK_ENABLED"] == "false"
    assert main["command"] == ["python3", "-m", "dynamo.vllm"]
    assert main["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert main["livenessProbe"]["failureThreshold"] == 1
    assert spec["securityContext"] == {"fsGroup": 1000}
    assert spec["serviceAccountName"] == "vllm-agg-k8s-service-discovery"
    assert spec["terminationGracePeriodSeconds"] == 60
    assert {"name": "shared-memory", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}} in spec["volumes"]


def test_services_per_component(rendered: RenderedGraph) -> None:
    fe = by_kind(rendered.components["Frontend"].objects, "Service")
    assert fe["metadata"]["name"] == "vllm-agg-frontend"
    assert fe["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]
    assert fe["spec"]["selector"] == {
        "nvidia.com/dynamo-component-type": "frontend",
        "nvidia.com/dynamo-namespace": "team-a-vllm-agg",
        "nvidia.com/dynamo-component": "Frontend",
    }
    worker = by_kind(rendered.components["VllmWorker"].objects, "Service")
    assert worker["spec"]["ports"][0]["port"] == 9090


def test_render_is_deterministic(repo: Path) -> None:
    dgd = load_yaml(repo / "examples" / "agg.yaml").graphs[0]
    assert render_graph(dgd, namespace="x") == render_graph(dgd, namespace="x")


def test_changing_a_worker_changes_its_hash_but_not_replicas(repo: Path) -> None:
    text = (repo / "examples" / "agg.yaml").read_text()
    base = render_graph(load_yaml(text).graphs[0]).worker_hash
    scaled = render_graph(
        load_yaml(text.replace("replicas: 1\n      resources", "replicas: 3\n      resources")).graphs[0]
    )
    assert scaled.components["VllmWorker"].replicas == 3
    assert scaled.worker_hash == base
    changed = render_graph(load_yaml(text.replace("Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B")).graphs[0])
    assert changed.worker_hash != base


def test_bad_graph_reports_field_path(repo: Path) -> None:
    text = (
        (repo / "examples" / "agg.yaml")
        .read_text()
        .replace("replicas: 1\n      resources", "replicas: -1\n      resources")
    )
    with pytest.raises(DynamoValidationError) as e:
        load_yaml(text)
    assert [str(p) for p in e.value.problems] == ["spec.services.VllmWorker.replicas: must be ≥ 0 (got -1)"]
