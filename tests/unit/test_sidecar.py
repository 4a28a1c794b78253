"""Sidecar mode (Dynamo 1.6): a worker's `runtime` native-sidecar init container hosts Dynamo's runtime
and gets its env, ports, probes and CONTAINER_NAME; `main` is the stock engine as the user wrote it,
plus what the operator still adds to an engine (compilation cache, the backend's engine env, /dev/shm).
As component_dynamo_sidecar.go and its test at michaelfeil/dynamo@eaf61940, and the webhook's rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from dynamo_infra.api import DynamoValidationError, admission, v1beta1
from dynamo_infra.api.loader import load_yaml
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph
from dynamo_infra.render.features.pullsecrets import PullSecret
from tests.conftest import CORPUS

SIDECAR = CORPUS / "graphs-1.6" / "sidecar"
NAMESPACE = "ns"
# Env only Dynamo's runtime gets (never the engine).
DYNAMO_ENV = {
    "DYN_NAMESPACE",
    "DYN_COMPONENT",
    "DYN_PARENT_DGD_K8S_NAME",
    "DYN_PARENT_DGD_K8S_NAMESPACE",
    "POD_NAME",
    "POD_NAMESPACE",
    "POD_UID",
    "DYN_DISCOVERY_BACKEND",
    "DYN_SYSTEM_ENABLED",
    "DYN_SYSTEM_PORT",
    "DYN_NAMESPACE_WORKER_SUFFIX",
}
# Worker env of the combined (non-sidecar) container that stays with the engine's health, not the runtime.
ENGINE_HEALTH_ENV = {
    "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS",
    "DYN_HEALTH_CHECK_ENABLED",
    "NIXL_TELEMETRY_ENABLE",
    "DYN_FORWARDPASS_METRIC_PORT",
}
GRAPH = """
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  backendFramework: vllm
  env: [{name: GLOBAL, value: graph}, {name: SHARED, value: graph}]
  components:
  - name: worker
    type: worker
    compilationCache: {pvcName: cache}
    podTemplate:
      metadata:
        annotations: {nvidia.com/dynamo-kube-discovery-mode: container}
      spec:
        initContainers:
        - {name: setup, image: 'setup:latest'}
        - name: runtime
          image: 'dynamo-sidecar:1.6.0'
          restartPolicy: Always
          env: [{name: GLOBAL, value: runtime}, {name: NATS_SERVER, value: 'nats://user:4222'}]
          startupProbe: {exec: {command: ['true']}}
        containers:
        - name: main
          image: 'vllm/vllm-openai:v0.28.0'
          command: [vllm-rs]
          args: [serve, model]
          env: [{name: GLOBAL, value: engine}]
          resources: {limits: {nvidia.com/gpu: '1'}}
"""
INFRA = {"infrastructure": {"natsAddress": "nats://nats:4222", "etcdAddress": "http://etcd:2379"}}


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def pod(doc: Any, component: str, options: ClusterOptions | None = None) -> dict[str, Any]:
    """The pod spec of `component`'s Deployment (or its Grove clique)."""
    rendered = render_graph(doc, options, NAMESPACE)
    for obj in rendered.components[component].objects:
        if obj["kind"] == "Deployment":
            return obj["spec"]["template"]["spec"]  # type: ignore[no-any-return]
    for pcs in rendered.workloads:
        for clique in pcs["spec"]["template"]["cliques"]:
            if clique["name"] == component.lower():
                return clique["spec"]["podSpec"]  # type: ignore[no-any-return]
    raise AssertionError(f"no pod spec for {component}")


def example(path: str) -> v1beta1.DynamoGraphDeployment:
    """The DynamoGraphDeployment of one stored example (admitted at load)."""
    docs = [d for d in load_yaml(SIDECAR / path).documents if isinstance(d, v1beta1.DynamoGraphDeployment)]
    assert len(docs) == 1
    return docs[0]


def written_spec(doc: v1beta1.DynamoGraphDeployment, component: str) -> dict[str, Any]:
    """The pod spec a component's template holds as the user wrote it."""
    components = doc.to_manifest()["spec"]["components"]
    return next(c for c in components if c["name"] == component)["podTemplate"]["spec"]  # type: ignore[no-any-return]


def graph(text: str = GRAPH, **edits: Any) -> Any:
    data = yaml.safe_load(text)
    worker = data["spec"]["components"][0]
    for key, value in edits.items():
        worker[key] = value
    return load_yaml(yaml.safe_dump(data), admission=False).documents[0]


def by_name(containers: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(c for c in containers if c["name"] == name)


def test_vllm_example_injects_dynamo_into_the_runtime_sidecar_only() -> None:
    doc = example("vllm/agg.yaml")
    spec = pod(doc, "worker")
    user = written_spec(doc, "worker")
    runtime = by_name(spec["initContainers"], "runtime")
    assert DYNAMO_ENV - {"DYN_NAMESPACE_WORKER_SUFFIX"} <= env(runtime).keys()
    assert env(runtime)["DYN_COMPONENT"] == "worker" and env(runtime)["DYN_NAMESPACE_WORKER_SUFFIX"]
    assert not ENGINE_HEALTH_ENV & env(runtime).keys()
    assert runtime["ports"] == [{"name": "system", "containerPort": 9090, "protocol": "TCP"}]
    assert runtime["startupProbe"] == {
        "httpGet": {"path": "/live", "port": "system"},
        "periodSeconds": 2,
        "timeoutSeconds": 1,
        "failureThreshold": 30,
    }
    assert runtime["livenessProbe"]["failureThreshold"] == 3
    assert runtime["readinessProbe"]["httpGet"] == {"path": "/health", "port": "system"}
    assert runtime["command"] == ["dynamo-vllm-sidecar"] and runtime["restartPolicy"] == "Always"
    # The engine is the user's container, with /dev/shm and nothing of Dynamo's.
    main = by_name(spec["containers"], "main")
    written = by_name(user["containers"], "main")
    assert {k: v for k, v in main.items() if k != "volumeMounts"} == written
    assert main["volumeMounts"] == [{"name": "shared-memory", "mountPath": "/dev/shm"}]
    assert "CONTAINER_NAME" not in env(runtime)


def test_vllm_disagg_prefill_and_decode_are_sidecar_mode_too() -> None:
    doc = example("vllm/disagg.yaml")
    for name in ("prefill", "decode"):
        spec = pod(doc, name)
        runtime = by_name(spec["initContainers"], "runtime")
        main = by_name(spec["containers"], "main")
        assert env(runtime)["DYN_COMPONENT"] == name
        assert not DYNAMO_ENV & env(main).keys() and "ports" not in main
        assert main["startupProbe"]["grpc"] == {"port": 50051, "service": ""}
        assert {e["name"] for e in main["env"]} == {
            "VLLM_NIXL_SIDE_CHANNEL_HOST",
            *(f"UCX_{k}" for k in ("TLS", "NET_DEVICES", "IB_ADDR_TYPE", "RNDV_SCHEME", "RNDV_THRESH")),
        }
        assert by_name(spec["volumes"], "shared-memory")["emptyDir"]["sizeLimit"] == "10Gi"
        assert main["securityContext"]["capabilities"]["add"] == ["IPC_LOCK", "SYS_RESOURCE"]


@pytest.mark.parametrize(("backend", "component"), [("sglang", "SGLangWorker"), ("trtllm", "TRTLLMWorker")])
def test_engine_as_another_native_sidecar_is_not_sidecar_mode(backend: str, component: str) -> None:
    """The 1.6-era SGLang and TRT-LLM examples keep Dynamo in `main`: their init containers stay as written."""
    doc = example(f"{backend}/agg.yaml")
    spec = pod(doc, component)
    written = written_spec(doc, component)
    assert spec["initContainers"] == written["initContainers"]
    main = by_name(spec["containers"], "main")
    assert env(main).keys() >= DYNAMO_ENV and main["ports"][0]["name"] == "system"


def test_runtime_gets_infrastructure_graph_env_and_its_own_overrides() -> None:
    spec = pod(graph(), "worker", ClusterOptions.parse(INFRA))
    runtime = by_name(spec["initContainers"], "runtime")
    main = by_name(spec["containers"], "main")
    assert env(runtime)["CONTAINER_NAME"] == "runtime"
    assert env(runtime)["DYN_KUBE_DISCOVERY_MODE"] == "container"
    assert env(runtime)["NATS_SERVER"] == "nats://user:4222"
    assert env(runtime)["ETCD_ENDPOINTS"] == "http://etcd:2379"
    assert env(runtime)["GLOBAL"] == "runtime" and env(runtime)["SHARED"] == "graph"
    names = [e["name"] for e in runtime["env"]]
    assert names == sorted(set(names))
    # A user probe replaces Dynamo's whole; the others stay.
    assert runtime["startupProbe"] == {"exec": {"command": ["true"]}}
    assert runtime["readinessProbe"]["httpGet"]["path"] == "/health"
    assert "command" not in runtime
    # The engine keeps its launch and resources, gets the graph env and the cache, nothing of Dynamo's.
    assert main["command"] == ["vllm-rs"] and main["args"] == ["serve", "model"]
    assert main["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert env(main)["GLOBAL"] == "engine" and env(main)["SHARED"] == "graph"
    assert "VLLM_CACHE_ROOT" in env(main) and "VLLM_CACHE_ROOT" not in env(runtime)
    assert {"NATS_SERVER", "ETCD_ENDPOINTS", "CONTAINER_NAME", *DYNAMO_ENV}.isdisjoint(env(main))
    assert not {k for k in main if k.endswith("Probe")} and "ports" not in main
    assert any(m["name"] == "cache" for m in main["volumeMounts"])
    assert not any(m["name"] == "cache" for m in runtime.get("volumeMounts") or [])
    # Other init containers are untouched and keep their place.
    assert spec["initContainers"][0] == {"name": "setup", "image": "setup:latest"}


def test_grove_pathway_renders_the_same_sidecar() -> None:
    options = ClusterOptions.parse({"multinode": {"orchestrator": "grove"}})
    spec = pod(graph(), "worker", options)
    assert env(by_name(spec["initContainers"], "runtime"))["DYN_SYSTEM_ENABLED"] == "true"
    assert "DYN_SYSTEM_ENABLED" not in env(by_name(spec["containers"], "main"))


def test_older_runtime_keeps_todays_rendering() -> None:
    """A `runtime` init container of a runtime before 1.6.0 is an ordinary init container (gate RuntimeSidecar)."""
    text = GRAPH.replace("dynamo-sidecar:1.6.0", "dynamo-sidecar:1.5.1")
    spec = pod(graph(text), "worker")
    written = yaml.safe_load(text)["spec"]["components"][0]["podTemplate"]["spec"]["initContainers"]
    assert spec["initContainers"] == written
    assert env(by_name(spec["containers"], "main"))["DYN_SYSTEM_ENABLED"] == "true"
    # The same graph without the init container renders main identically (but for its worker hash).
    plain = yaml.safe_load(text)
    del plain["spec"]["components"][0]["podTemplate"]["spec"]["initContainers"]
    other = pod(load_yaml(yaml.safe_dump(plain), admission=False).documents[0], "worker")
    assert unhashed(by_name(other["containers"], "main")) == unhashed(by_name(spec["containers"], "main"))


def unhashed(container: dict[str, Any]) -> dict[str, Any]:
    kept = [e for e in container["env"] if e["name"] != "DYN_NAMESPACE_WORKER_SUFFIX"]
    return {**container, "env": kept}


def test_runtime_version_override_selects_the_release() -> None:
    text = GRAPH.replace("dynamo-sidecar:1.6.0", "dynamo-sidecar:latest")
    assert "DYN_SYSTEM_ENABLED" in env(by_name(pod(graph(text), "worker")["containers"], "main"))
    spec = pod(graph(text, runtimeVersionOverride="1.6.0"), "worker")
    assert "DYN_SYSTEM_ENABLED" in env(by_name(spec["initContainers"], "runtime"))


# --- the webhook's rules (ValidateDynamoSidecar), one per test --------------------------------------

DETAIL = 'component "worker" with a runtime init container'
PLANNED = f"is not currently supported for {DETAIL}; support is planned for a future release"
AT = "spec.components[worker]."


def problems(doc: Any) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in admission.review(doc).problems]


def test_example_graphs_are_admitted() -> None:
    for path in sorted(SIDECAR.rglob("*.yaml")):
        for doc in load_yaml(path).documents:
            assert admission.review(doc).allowed, path


def test_only_worker_types_may_have_a_runtime_sidecar() -> None:
    doc = graph(type="frontend")
    want = (
        AT + "podTemplate.spec.initContainers[1].name",
        "Forbidden: is supported only for worker, prefill, and decode components",
    )
    assert want in problems(doc)
    with pytest.raises(DynamoValidationError) as e:
        render_graph(doc, None, NAMESPACE)
    assert ("components[worker].podTemplate.spec.initContainers[1].name", want[1]) in [
        (p.path, p.message) for p in e.value.problems
    ]


def test_runtime_sidecar_restarts_always() -> None:
    data = yaml.safe_load(GRAPH)
    del data["spec"]["components"][0]["podTemplate"]["spec"]["initContainers"][1]["restartPolicy"]
    doc = load_yaml(yaml.safe_dump(data), admission=False).documents[0]
    assert problems(doc) == [
        (
            AT + "podTemplate.spec.initContainers[1].restartPolicy",
            f'Invalid value: "": must be Always for {DETAIL}',
        )
    ]


def test_engine_main_container_and_image_are_required() -> None:
    data = yaml.safe_load(GRAPH)
    spec = data["spec"]["components"][0]["podTemplate"]["spec"]
    no_image = copy.deepcopy(data)
    del no_image["spec"]["components"][0]["podTemplate"]["spec"]["containers"][0]["image"]
    assert (
        AT + "podTemplate.spec.containers[0].image",
        f"Required value: engine image is required for {DETAIL}",
    ) in (problems(load_yaml(yaml.safe_dump(no_image), admission=False).documents[0]))
    spec["containers"][0]["name"] = "engine"
    assert (
        AT + "podTemplate.spec.containers",
        f"Required value: main engine container is required for {DETAIL}",
    ) in (problems(load_yaml(yaml.safe_dump(data), admission=False).documents[0]))


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        ({"multinode": {"nodeCount": 2}}, "multinode"),
        (
            {"experimental": {"checkpoint": {"enabled": True, "mode": "Auto"}}},
            "experimental.checkpoint.enabled",
        ),
        ({"experimental": {"gpuMemoryService": {"mode": "IntraPod"}}}, "experimental.gpuMemoryService"),
        ({"experimental": {"failover": {"mode": "IntraPod"}}}, "experimental.failover"),
    ],
)
def test_not_with_multinode_checkpoint_gms_or_failover(edit: dict[str, Any], path: str) -> None:
    assert (AT + path, f"Forbidden: {PLANNED}") in problems(graph(**edit))


def test_older_runtime_is_not_held_to_the_sidecar_rules() -> None:
    text = GRAPH.replace("dynamo-sidecar:1.6.0", "dynamo-sidecar:1.4.0").replace("restartPolicy: Always", "")
    assert not [p for p in problems(graph(text, type="frontend")) if "runtime init container" in p[1]]
    assert not [p for p in problems(graph(text, type="frontend")) if p[0].endswith("initContainers[1].name")]


def test_runtime_version_comes_from_the_sidecar_image() -> None:
    """In sidecar mode the main image is the stock engine's: the runtime version is read from `runtime`."""
    text = GRAPH.replace("vllm/vllm-openai:v0.28.0", "vllm/vllm-openai:latest")
    assert problems(graph(text)) == []


def test_kv_transfer_policy_goes_to_the_runtime_not_the_engine() -> None:
    data = yaml.safe_load(GRAPH)
    data["spec"]["experimental"] = {
        "kvTransferPolicy": {"domain": "zone", "labelKey": "topology.example/zone"}
    }
    data["spec"]["components"][0]["podTemplate"]["spec"]["initContainers"][1]["env"].append(
        {"name": "DYN_KV_TRANSFER_ENFORCEMENT", "value": "preferred"}
    )
    spec = pod(load_yaml(yaml.safe_dump(data), admission=False).documents[0], "worker")
    runtime = by_name(spec["initContainers"], "runtime")
    main = by_name(spec["containers"], "main")
    assert env(runtime)["DYN_KV_TRANSFER_ENFORCEMENT"] == "required"
    assert any(m["name"] == "topology-labels" for m in runtime["volumeMounts"])
    assert not any(m["name"] == "topology-labels" for m in main.get("volumeMounts") or [])
    assert "DYN_KV_TRANSFER_DOMAIN" not in env(main)
    assert any(v["name"] == "topology-labels" for v in spec["volumes"])


def test_runtime_sidecar_image_gets_its_pull_secret() -> None:
    text = GRAPH.replace("dynamo-sidecar:1.6.0", "registry.example/dynamo-sidecar:1.6.0")
    secrets = [PullSecret("runtime-pull", frozenset({"registry.example"}))]
    rendered = render_graph(graph(text), None, NAMESPACE, pull_secrets=secrets)
    deployment = next(o for o in rendered.components["worker"].objects if o["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "runtime-pull"}]


def test_v1alpha1_problems_name_the_field_the_user_wrote() -> None:
    text = """
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  services:
    Frontend:
      componentType: frontend
      extraPodSpec:
        initContainers: [{name: runtime, image: 'dynamo-sidecar:1.6.0', restartPolicy: Always}]
        mainContainer: {image: 'frontend:1.6.0'}
"""
    assert problems(load_yaml(text, admission=False).documents[0]) == [
        (
            "spec.services.Frontend.extraPodSpec.initContainers[0].name",
            "Forbidden: is supported only for worker, prefill, and decode components",
        )
    ]
