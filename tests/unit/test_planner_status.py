"""The DGD component status the 1.6 planner reads (render.runtime.planner_status, render.runtime.gpu_shape), and its way
through the records: `up` computes it, every status write (provider, agent) carries it with the generation."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.agent.status import components_of
from dynamo_infra.api import v1alpha1, v1beta1
from dynamo_infra.api.loader import to_hub
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.records import records_props
from dynamo_infra.config import ClusterOptions
from dynamo_infra.kube.client import object_key
from dynamo_infra.reconcile.observe import record_status
from dynamo_infra.render import render_graph
from dynamo_infra.render.runtime.gpu_shape import PodSet, container_gpus, pod_scalar_gpus, pod_set_gpus
from dynamo_infra.render.runtime.planner_status import (
    POWER_LIMIT_ANNOTATION,
    command_line_tokens,
    first_flag_value,
    planner_component_status,
    projected,
    runtime_identity,
)
from dynamo_infra.render.runtime.records import (
    COMPONENTS_ANNOTATION,
    PLANNER_STATUS_KEY,
    components_annotation,
    graph_record,
    graph_record_status,
)
from dynamo_infra.render.runtime.status import ComponentStatus

# NVIDIA's ai-dynamo 1.6.1 profiler template (tests/data/SOURCES).
WHEEL_DISAGG = Path(__file__).parents[1] / "data/corpus/graphs-1.6/wheel/vllm__disagg.yaml"
GPUS = "nvidia.com/gpu"


def graph(decode_power: str | None = "300", nodes: int = 1, image: str | None = None) -> Manifest:
    d: Manifest = yaml.safe_load(WHEEL_DISAGG.read_text())
    decode = d["spec"]["components"][1]
    assert decode["name"] == "decode"
    if decode_power is not None:
        decode["podTemplate"]["metadata"] = {"annotations": {POWER_LIMIT_ANNOTATION: decode_power}}
    if nodes > 1:
        decode["multinode"] = {"nodeCount": nodes}
        decode["podTemplate"]["spec"]["containers"][0]["resources"]["limits"][GPUS] = "4"
    if image is not None:
        for c in d["spec"]["components"]:
            c["podTemplate"]["spec"]["containers"][0]["image"] = image
    return d


def planner_fields(d: Manifest, options: ClusterOptions | None = None) -> dict[str, Manifest]:
    dgd = v1beta1.DynamoGraphDeployment.parse(d)
    rendered = render_graph(dgd, options or ClusterOptions(), "ns")
    shared = (*rendered.shared, *rendered.workloads)
    return {
        c["name"]: planner_component_status(c, rendered.components[c["name"]].objects, shared)
        for c in to_hub(dgd).to_manifest()["spec"]["components"]
    }


def planner_accepts(deployment: Manifest, name: str) -> tuple[int, int, Manifest]:
    """What the 1.6.1 planner takes from a DGD, reproduced minimally from
    `dynamo/planner/monitoring/dgd_services.py` (`Service._current_component_status`, `get_gpu_shape`,
    `get_gpu_power_limit_watts`): the component's status only while `status.observedGeneration`
    equals `metadata.generation`, and a GPU shape of two non-negative integers, replica 0 only with
    engine 0. Raises AssertionError where the planner raises GPUShapeUnavailableError."""
    status = deployment.get("status", {})
    generation = deployment.get("metadata", {}).get("generation")
    assert generation is not None and generation == status.get("observedGeneration"), "not current"
    component = status.get("components", {}).get(name, {})
    engine, replica = component.get("gpusPerEngine"), component.get("gpusPerReplica")
    assert engine is not None and replica is not None, "no complete shape"
    engine, replica = int(engine), int(replica)
    assert engine >= 0 and replica >= 0 and not (replica == 0 and engine != 0), "invalid shape"
    return engine, replica, component


def test_single_node_workers_publish_shape_model_and_power() -> None:
    fields = planner_fields(graph())
    assert fields["decode"] == {
        "servedModelName": "Qwen/Qwen3-0.6B",
        "gpuPowerLimitWatts": 300,
        "gpusPerEngine": 1,
        "gpusPerReplica": 1,
    }
    # No power annotation: no power limit (the planner's power path then refuses, as with the operator).
    assert fields["prefill"] == {
        "servedModelName": "Qwen/Qwen3-0.6B",
        "gpusPerEngine": 1,
        "gpusPerReplica": 1,
    }
    # A GPU-less component resolves to a present zero shape.
    assert fields["Frontend"] == {"gpusPerEngine": 0, "gpusPerReplica": 0}


@pytest.mark.parametrize("orchestrator", ["lws", "grove"])
def test_multinode_engine_spans_every_node_and_the_leader_serves(orchestrator: str) -> None:
    options = ClusterOptions.model_validate({"multinode": {"orchestrator": orchestrator}})
    fields = planner_fields(graph(nodes=2), options)
    # 4 GPUs on each of 2 nodes: one engine is 8 GPUs, one more replica adds 8.
    assert fields["decode"]["gpusPerEngine"] == 8 and fields["decode"]["gpusPerReplica"] == 8
    assert fields["decode"]["servedModelName"] == "Qwen/Qwen3-0.6B"
    assert fields["decode"]["gpuPowerLimitWatts"] == 300
    assert fields["prefill"]["gpusPerEngine"] == 1


@pytest.mark.parametrize("raw", ["0", "-5", "abc", "3_00", "1.5", "", "9223372036854775808"])
def test_an_invalid_power_annotation_is_not_projected(raw: str) -> None:
    assert "gpuPowerLimitWatts" not in planner_fields(graph(decode_power=raw))["decode"]


def test_power_is_trimmed_as_the_operator_parses_it() -> None:
    assert planner_fields(graph(decode_power=" 250 "))["decode"]["gpuPowerLimitWatts"] == 250


@pytest.mark.parametrize(
    ("image", "override", "on"),
    [
        ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1", None, True),
        ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.0-cuda13", None, True),
        ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.1", None, False),
        ("my-registry/vllm:latest", None, False),
        ("my-registry/vllm:latest", "1.6.0", True),
        ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1", "1.5.0", False),
    ],
)
def test_the_gate_is_the_components_runtime(image: str, override: str | None, on: bool) -> None:
    component: Manifest = {"podTemplate": {"spec": {"containers": [{"name": "main", "image": image}]}}}
    if override:
        component["runtimeVersionOverride"] = override
    assert projected(component) is on


def test_below_1_6_the_status_and_records_are_as_before() -> None:
    fields = planner_fields(graph(image="nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.1"))
    assert fields == {"Frontend": {}, "decode": {}, "prefill": {}}
    dgd = v1beta1.DynamoGraphDeployment.parse(graph(image="nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.1"))
    props = records_props(dgd, render_graph(dgd, ClusterOptions(), "ns"))
    assert all(PLANNER_STATUS_KEY not in c for c in props["components"].values())


def test_a_v1alpha1_graph_without_a_versioned_image_is_unchanged() -> None:
    from tests.unit.test_records import GRAPH

    dgd = v1alpha1.DynamoGraphDeployment.parse(GRAPH)
    props = records_props(dgd, render_graph(dgd, ClusterOptions(), "ns"))
    assert all(PLANNER_STATUS_KEY not in c for c in props["components"].values())


def test_served_model_and_runtime_component_from_a_shell_packed_command() -> None:
    # The operator's own vector (internal/dynamo/runtime_status_test.go, TestResolveComponentRuntimeStatus).
    template = {
        "metadata": {"annotations": {POWER_LIMIT_ANNOTATION: " 300 "}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "command": ["/bin/sh", "-c"],
                    "args": [
                        'exec python -m dynamo.vllm --model ignored --served-model-name "Qwen/Qwen3-8B" '
                        "--endpoint=dyn://prod.custom-decode.generate"
                    ],
                }
            ]
        },
    }
    assert runtime_identity(template) == {
        "servedModelName": "Qwen/Qwen3-8B",
        "runtimeComponentName": "custom-decode",
        "gpuPowerLimitWatts": 300,
    }


@pytest.mark.parametrize(
    ("args", "want"),
    [
        (["--model-path", "/models/x"], "/models/x"),
        (["--model-path=/models/y"], "/models/y"),
        (["--model-name", "a", "--model", "b"], "a"),
        (["--model"], ""),
    ],
)
def test_served_model_flags_in_order(args: list[str], want: str) -> None:
    tokens = command_line_tokens([], args)
    assert first_flag_value(tokens, "--served-model-name", "--model-name", "--model", "--model-path") == want


def test_an_endpoint_not_of_three_parts_names_no_component() -> None:
    template = {"spec": {"containers": [{"name": "main", "args": ["--endpoint", "dyn://a.b"]}]}}
    assert runtime_identity(template) == {}


def test_scalar_gpus_follow_kubernetes_pod_scheduling() -> None:
    def c(name: str, gpus: int, **extra: Any) -> Manifest:
        return {"name": name, "resources": {"limits": {GPUS: str(gpus)}}, **extra}

    spec = {
        "containers": [c("main", 2), c("side", 1)],
        "initContainers": [c("fetch", 4), c("proxy", 1, restartPolicy="Always"), c("warm", 3)],
    }
    # Init phases: 4, then the sidecar 1 + 3 = 4; app phase 2 + 1 + sidecar 1 = 4.
    assert pod_scalar_gpus(spec) == 4
    assert container_gpus({"limits": {GPUS: "1", "nvidia.com/mig-1g.10gb": "1"}}) is None
    assert container_gpus({"requests": {GPUS: "500m"}}) is None
    assert container_gpus({"requests": {GPUS: 2}}) == 2


def test_dra_claims_count_per_pod_for_templates_and_once_for_a_named_claim() -> None:
    request = {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}
    claims = {
        ("ResourceClaimTemplate", "t"): {"devices": {"requests": [request]}},
        ("ResourceClaim", "shared"): {"devices": {"requests": [request]}},
    }
    pod = {
        "containers": [
            {"name": "main", "resources": {"claims": [{"name": "mine"}, {"name": "all", "request": "gpus"}]}},
            {"name": "b", "resources": {"claims": [{"name": "mine"}]}},
        ],
        "resourceClaims": [
            {"name": "mine", "resourceClaimTemplateName": "t"},
            {"name": "all", "resourceClaimName": "shared"},
        ],
    }
    # Two pods of one replica: the template's 2 GPUs each, the named claim's 2 once.
    assert pod_set_gpus([PodSet(pod, 2)], claims) == 6
    # A claim the rendering does not hold leaves the shape unknown.
    assert pod_set_gpus([PodSet(pod)], {}) is None


def records_round_trip(d: Manifest, generation: int) -> Manifest:
    """up: the records' inputs; the DGD record with its components annotation; the agent reads that
    annotation back and writes the status for the record as the API server stores it (`generation`)."""
    dgd = v1beta1.DynamoGraphDeployment.parse(d)
    rendered = render_graph(dgd, ClusterOptions(), "ns")
    props = records_props(dgd, rendered)
    annotations = {COMPONENTS_ANNOTATION: components_annotation(props["components"])}
    record = graph_record(props["dgd"], "ns", annotations, {})
    record["metadata"]["generation"] = generation
    inputs = {n: c.status_input() for n, c in components_of(record).items()}
    workloads: dict[str, Manifest] = {
        c["workload"]: {
            **copy.deepcopy(w),
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1},
        }
        for c in props["components"].values()
        for k, w in c["watch"].items()
        if k == c["workload"]
    }

    class Live:
        def get(self, obj: Manifest) -> Manifest | None:
            found: Manifest = workloads.get(object_key(obj)) or {
                "kind": obj["kind"],
                "metadata": obj["metadata"],
            }
            return found

    record["status"] = record_status(Live(), inputs, record)  # type: ignore[arg-type]
    return record


def test_the_planner_accepts_the_written_record() -> None:
    record = records_round_trip(graph(), generation=3)
    assert record["status"]["observedGeneration"] == 3
    engine, replica, decode = planner_accepts(record, "decode")
    assert (engine, replica) == (1, 1)
    assert decode["servedModelName"] == "Qwen/Qwen3-0.6B" and decode["gpuPowerLimitWatts"] == 300
    # The counts the planner reads beside the shape are still there.
    assert decode["componentKind"] == "Deployment" and decode["readyReplicas"] == 1
    assert decode["runtimeNamespace"].startswith("ns-vllm-disagg")
    assert planner_accepts(record, "prefill")[:2] == (1, 1)


def test_the_planner_refuses_a_status_of_an_older_generation() -> None:
    record = records_round_trip(graph(), generation=3)
    record["metadata"]["generation"] = 4
    with pytest.raises(AssertionError, match="not current"):
        planner_accepts(record, "decode")


def test_the_planner_finds_no_shape_below_1_6() -> None:
    record = records_round_trip(graph(image="nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.1"), generation=2)
    assert "gpusPerEngine" not in record["status"]["components"]["decode"]
    with pytest.raises(AssertionError, match="no complete shape"):
        planner_accepts(record, "decode")


def test_the_fields_join_only_components_whose_workload_exists() -> None:
    ready = ComponentStatus(True, "DeploymentReady", "")
    status = graph_record_status(
        {"a": ready, "b": ready},
        {"a": {"kind": "Deployment", "metadata": {"name": "a"}, "status": {}}, "b": None},
        generation=7,
        planner={
            "a": {"gpusPerEngine": 2, "gpusPerReplica": 2},
            "b": {"gpusPerEngine": 1, "gpusPerReplica": 1},
        },
    )
    assert status["observedGeneration"] == 7
    assert list(status["components"]) == ["a"]
    assert status["components"]["a"]["gpusPerEngine"] == 2 and status["components"]["a"]["replicas"] == 0


@pytest.mark.parametrize("path", sorted(WHEEL_DISAGG.parent.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_profiler_template_of_the_1_6_1_wheel_gives_the_planner_its_workers(path: Path) -> None:
    d: Manifest = yaml.safe_load(path.read_text())
    record = records_round_trip(d, generation=1)
    workers = [c["name"] for c in d["spec"]["components"] if c.get("type") in ("worker", "prefill", "decode")]
    assert workers
    for name in workers:
        engine, replica, status = planner_accepts(record, name)
        assert status["servedModelName"]
        # The mocker declares no GPUs; every real backend's engine has its one GPU.
        assert (engine, replica) == ((0, 0) if path.stem.startswith("mocker") else (1, 1))


@pytest.mark.parametrize(("mode", "orchestrator"), [("IntraPod", None), ("InterPod", "grove")])
def test_gpu_memory_service_counts_the_rendered_claim_or_the_weight_servers(
    mode: str, orchestrator: str | None
) -> None:
    d = graph(decode_power=None)
    decode = d["spec"]["components"][1]
    decode["podTemplate"]["spec"]["containers"][0]["resources"]["limits"][GPUS] = "2"
    decode["experimental"] = {"gpuMemoryService": {"mode": mode}}
    options: Manifest = {"dra": {"enabled": True}}
    if orchestrator:
        options["multinode"] = {"orchestrator": orchestrator}
    fields = planner_fields(d, ClusterOptions.model_validate(options))["decode"]
    # IntraPod: the main container's GPUs become the rendered ResourceClaimTemplate's 2 devices.
    # InterPod (Grove): the engine's GPUs are shared with its weight server through Grove's resource
    # sharing, and the operator adds the engine's GPUs to the replica's.
    assert (fields["gpusPerEngine"], fields["gpusPerReplica"]) == (2, 2)


def test_the_components_annotation_is_the_same_whether_numbers_arrive_as_ints_or_floats() -> None:
    """Pulumi hands the records provider every number as a float: the annotation `up` writes equals the
    one `dynamo-infra render` prints (no drift reported on a 1.6 graph's record)."""
    ints = {"decode": {"plannerStatus": {"gpusPerEngine": 0, "gpusPerReplica": 2}, "replicas": "graph"}}
    floats = {"decode": {"plannerStatus": {"gpusPerEngine": 0.0, "gpusPerReplica": 2.0}, "replicas": "graph"}}
    assert components_annotation(floats) == components_annotation(ints)
    assert '"gpusPerEngine":0,' in components_annotation(floats)
