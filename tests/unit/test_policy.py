"""The policy pack's pure decisions (dynamo_infra.policy): pods and GPUs of rendered graphs on each
workload kind, the fit against a cluster, pinned images, literal secrets in env vars."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dynamo_infra.api import v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.config import ClusterOptions
from dynamo_infra.policy import gpus, images, pods, secrets
from dynamo_infra.render import render_graph
from tests.conftest import REPO

IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"
ORCHESTRATORS = ("none", "lws", "grove")


def graph(
    replicas: int, gpus_per_pod: int, nodes: int = 1, **container: Any
) -> v1beta1.DynamoGraphDeployment:
    main: dict[str, Any] = {
        "name": "main",
        "image": IMAGE,
        "command": ["python3", "-m", "dynamo.vllm"],
        "args": ["--model", "m"],
        "resources": {"limits": {"nvidia.com/gpu": str(gpus_per_pod)}},
        **container,
    }
    worker: dict[str, Any] = {
        "name": "w",
        "type": "worker",
        "replicas": replicas,
        "podTemplate": {"spec": {"containers": [main]}},
    }
    if nodes > 1:
        worker["multinode"] = {"nodeCount": nodes}
    return v1beta1.DynamoGraphDeployment.parse(
        {
            "apiVersion": v1beta1.API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": "g"},
            "spec": {"components": [worker]},
        }
    )


def rendered(dgd: v1beta1.DynamoGraphDeployment, orchestrator: str = "none") -> list[Manifest]:
    return render_graph(
        dgd, ClusterOptions.parse({"multinode": {"orchestrator": orchestrator}}), "ns"
    ).all_objects()


def node(name: str, gpus_: int, unschedulable: bool = False) -> Manifest:
    return {
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"unschedulable": unschedulable},
        "status": {"allocatable": {"nvidia.com/gpu": str(gpus_)}},
    }


@pytest.mark.parametrize("orchestrator", ORCHESTRATORS[1:])
@pytest.mark.parametrize(("replicas", "nodes", "per_pod"), [(1, 2, 8), (3, 4, 2)])
def test_multinode_gpus_count_every_node_of_every_replica(
    orchestrator: str, replicas: int, nodes: int, per_pod: int
) -> None:
    objects = rendered(graph(replicas, per_pod, nodes), orchestrator)
    demand = gpus.demands(pods.all_pod_templates(objects), objects)
    assert sum(d.total for d in demand) == replicas * nodes * per_pod
    assert {d.gpus_per_pod for d in demand} == {per_pod}


@pytest.mark.parametrize("orchestrator", ORCHESTRATORS)
def test_single_node_gpus_are_replicas_times_gpus_per_pod(orchestrator: str) -> None:
    objects = rendered(graph(3, 2), orchestrator)
    demand = gpus.demands(pods.all_pod_templates(objects), objects)
    assert [(d.template.pods, d.gpus_per_pod) for d in demand] == [(3, 2)]


def test_a_pod_counts_sidecars_dra_claims_and_its_largest_init_container() -> None:
    def c(n: int, **extra: Any) -> Manifest:
        return {"name": f"c{n}", "resources": {"requests": {"nvidia.com/gpu": str(n)}}, **extra}

    template: Manifest = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}]
                }
            }
        },
    }
    spec: Manifest = {"containers": [c(1)], "initContainers": [c(1, restartPolicy="Always"), c(5)]}
    assert gpus.pod_gpus(spec) == 5
    spec = {
        **spec,
        "initContainers": [c(1, restartPolicy="Always")],
        "resourceClaims": [{"name": "x", "resourceClaimTemplateName": "t"}],
    }
    assert gpus.pod_gpus(spec, "ns", gpus.claim_template_gpus([template])) == 2 + 2


def test_the_cluster_s_gpus_skip_cordoned_nodes_and_read_resource_slices() -> None:
    slices = [
        {
            "spec": {
                "nodeName": "a",
                "driver": "gpu.nvidia.com",
                "devices": [{"name": str(i)} for i in range(8)],
            }
        },
        {"spec": {"nodeName": "b", "driver": "gpu.nvidia.com", "devices": [{"name": "0"}] * 4}},
        {"spec": {"nodeName": "b", "driver": "nic.example.com", "devices": [{"name": "0"}] * 9}},
    ]
    cluster = gpus.cluster_gpus([node("a", 8), node("b", 0), node("c", 8, unschedulable=True)], slices)
    assert dict(cluster.nodes) == {"a": 8, "b": 4}
    assert (cluster.largest, cluster.total) == (8, 12)


def test_fit_is_the_largest_node_per_pod_and_the_total_per_stack() -> None:
    cluster = gpus.cluster_gpus([node(f"n{i}", 8) for i in range(4)])

    def violations(replicas: int, per_pod: int, nodes: int = 1) -> list[str]:
        objects = rendered(graph(replicas, per_pod, nodes), "lws" if nodes > 1 else "none")
        return gpus.fit_violations(gpus.demands(pods.all_pod_templates(objects), objects), cluster)

    assert violations(4, 8) == []
    assert violations(2, 4, nodes=4) == []
    (too_big,) = violations(1, 16)
    assert "a pod asks for 16 GPUs, but the largest node has 8" in too_big
    (too_many,) = violations(5, 8)
    assert "the stack asks for 40 GPUs" in too_many and "the cluster has 32" in too_many
    assert len(violations(3, 16)) == 2


@pytest.mark.parametrize(
    "image",
    [
        IMAGE,
        "registry:5000/team/img:v2",
        "img@sha256:" + "a" * 64,
        "img:latest@sha256:" + "b" * 64,
        "localhost:5000/img:2026.01",
    ],
)
def test_pinned_images_pass(image: str) -> None:
    assert images.unpinned_reason(image) is None


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        ("nvcr.io/nvidia/vllm-runtime", "has no tag (pulls latest)"),
        ("registry:5000/img", "has no tag (pulls latest)"),
        ("img:latest", "has the tag latest"),
        ("img:LATEST", "has the tag latest"),
        ("img:${VERSION}", "has a placeholder"),
        ("img:<tag>", "has a placeholder"),
        ("img:{{ .Values.tag }}", "has a placeholder"),
        ("img:my-tag", "has the placeholder tag my-tag"),
        ("img:TAG", "has the placeholder tag TAG"),
        ("img:IMAGE_TAG", "has the placeholder tag IMAGE_TAG"),
    ],
)
def test_unpinned_images_say_why(image: str, reason: str) -> None:
    assert images.unpinned_reason(image) == reason


def test_image_violations_name_the_workload_and_container() -> None:
    (found,) = images.image_violations(pods.all_pod_templates(rendered(graph(1, 1, image="img:latest"))))
    assert found.startswith("Deployment/ns/g-w-")
    assert "container main: image 'img:latest' has the tag latest; pin a version tag or a digest" in found


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("HF_TOKEN", "anything", "its name says it holds a secret"),
        ("OPENAI_API_KEY", "x", "its name says it holds a secret"),
        ("db-password", "x", "its name says it holds a secret"),
        ("MODEL", "hf_" + "a" * 34, "its value looks like a Hugging Face token"),
        ("ARGS", "--key sk-" + "b" * 40, "its value looks like an OpenAI-style API key"),
        ("ID", "AKIA" + "C" * 16, "its value looks like an AWS access key id"),
        ("NGC", "nvapi-" + "d" * 40, "its value looks like an NVIDIA NGC API key"),
        ("CERT", "-----BEGIN RSA PRIVATE KEY-----\nMII", "its value looks like a PEM private key"),
    ],
)
def test_secret_looking_literals_are_found(name: str, value: str, reason: str) -> None:
    assert secrets.secret_reason(name, value) == reason


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HF_TOKEN", ""),
        ("HF_TOKEN", "$(HF_TOKEN_FROM_SECRET)"),
        ("MONKEY_BUSINESS", "x"),
        ("DYN_LOG", "debug"),
        ("PWD", "/w"),
    ],
)
def test_ordinary_literals_pass(name: str, value: str) -> None:
    assert secrets.secret_reason(name, value) is None


def test_a_secret_key_ref_passes_and_a_literal_token_never_shows_its_value() -> None:
    token = "hf_" + "z" * 34
    env = [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        {"name": "API_TOKEN", "value": token},
    ]
    (found,) = secrets.secret_env_violations(pods.all_pod_templates(rendered(graph(1, 1, env=env))))
    assert "env API_TOKEN has a literal value and its value looks like a Hugging Face token" in found
    assert token not in found


@pytest.mark.parametrize("path", sorted((REPO / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_the_example_graphs_pass_the_image_and_secret_policies(path: Path) -> None:
    from dynamo_infra import load_graph

    options = ClusterOptions.parse({"multinode": {"orchestrator": "grove"}, "dra": {"enabled": True}})
    templates = pods.all_pod_templates(render_graph(load_graph(path), options, "ns").all_objects())
    assert templates
    assert images.image_violations(templates) == []
    assert secrets.secret_env_violations(templates) == []


def test_counts_carried_as_doubles_count() -> None:
    """Pulumi carries numbers as doubles: a preview's `replicas: 3.0` is three pods."""
    deployment: Manifest = {
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": {
            "replicas": 3.0,
            "template": {
                "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 2.0}}}]}
            },
        },
    }
    (demand,) = gpus.demands(pods.all_pod_templates([deployment]), [deployment])
    assert (demand.template.pods, demand.gpus_per_pod, demand.total) == (3, 2, 6)
