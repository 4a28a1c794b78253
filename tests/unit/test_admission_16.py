"""The validating webhook's rules added between our pin and the Dynamo 1.6.0 cut, on fields our
models already have: each denied with the webhook's message at our field path (v1beta1 and, where
it differs, v1alpha1), the neighbouring valid case allowed, on create and on update."""

from __future__ import annotations

import copy
from typing import Any

from dynamo_infra.api import Resource, admission, v1alpha1, v1beta1
from dynamo_infra.api.admission import OperatorFeatures, Review

IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.0"
POWER = "dynamo.nvidia.com/gpu-power-limit"
PROVIDER = "nvidia.com/workload-provider"
ELASTIC_ARGS = ["python3 -m dynamo.vllm --enable-elastic-ep --data-parallel-backend ray"]
ELASTIC_EP_REQUIRED = (
    "Required value: elastic expert parallelism (--enable-elastic-ep with --data-parallel-backend ray) "
    "requires an explicit container command; the operator starts the single-pod Ray head by wrapping that "
    "command and cannot start it from the image ENTRYPOINT"
)


def main(**fields: Any) -> dict[str, Any]:
    return {"name": "main", "image": IMAGE, "resources": {"limits": {"nvidia.com/gpu": 1}}, **fields}


def worker(
    name: str = "w", *, containers: list[dict[str, Any]] | None = None, **fields: Any
) -> dict[str, Any]:
    pod: dict[str, Any] = {"spec": {"containers": containers or [main()]}}
    return {"name": name, "type": "worker", "podTemplate": pod, **fields}


def graph(
    *components: dict[str, Any], annotations: dict[str, str] | None = None, backend: str = "vllm"
) -> Resource:
    meta: dict[str, Any] = {"name": "g", "namespace": "ns"}
    if annotations:
        meta["annotations"] = annotations
    spec = {"backendFramework": backend, "components": list(components) or [worker()]}
    doc = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": meta,
        "spec": spec,
    }
    return v1beta1.DynamoGraphDeployment.parse(doc)


def alpha_graph(service: dict[str, Any], backend: str = "vllm") -> Resource:
    doc = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"backendFramework": backend, "services": {"w": service}},
    }
    return v1alpha1.DynamoGraphDeployment.parse(doc)


def dcd(spec: dict[str, Any]) -> Resource:
    doc = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": spec,
    }
    return v1beta1.DynamoComponentDeployment.parse(doc)


def causes(review: Review) -> list[str]:
    return [str(p) for p in review.problems]


def create(doc: Resource) -> list[str]:
    return causes(admission.review(doc))


def update(old: Resource, new: Resource, features: OperatorFeatures | None = None) -> list[str]:
    return causes(admission.review_update(old, new, features or OperatorFeatures()))


# --- GPU memory service extra client containers (PR #12580) ---


def gms_worker(clients: list[str], mode: str = "IntraPod") -> dict[str, Any]:
    sidecar = {"name": "c", "image": IMAGE}
    gms = {"mode": mode, "extraClientContainers": clients}
    return worker(containers=[main(), sidecar], experimental={"gpuMemoryService": gms})


def test_gms_extra_clients_must_name_distinct_pod_containers() -> None:
    at = "spec.components[w].experimental.gpuMemoryService.extraClientContainers"
    assert create(graph(gms_worker(["c", "c", "x"]))) == [
        f'{at}[1]: Duplicate value: "c"',
        f'{at}[2]: Invalid value: "x": does not name a container in podTemplate.spec.containers',
    ]
    assert create(graph(gms_worker(["c"]))) == []
    # On an update the new graph is checked the same way.
    assert update(graph(gms_worker(["c"])), graph(gms_worker(["x"]))) == [
        f'{at}[0]: Invalid value: "x": does not name a container in podTemplate.spec.containers'
    ]


def test_gms_extra_clients_at_their_v1alpha1_and_dcd_paths() -> None:
    service = {
        "componentType": "worker",
        "resources": {"limits": {"gpu": "1"}},
        "extraPodSpec": {"mainContainer": {"image": IMAGE}},
        "gpuMemoryService": {"enabled": True, "extraClientContainers": ["x"]},
    }
    assert create(alpha_graph(service)) == [
        'spec.services.w.gpuMemoryService.extraClientContainers[0]: Invalid value: "x": does not name a '
        "container in podTemplate.spec.containers"
    ]
    component = gms_worker(["c", "c"])
    del component["name"]
    assert create(dcd(component)) == [
        'spec.experimental.gpuMemoryService.extraClientContainers[1]: Duplicate value: "c"'
    ]


# --- Elastic EP needs an explicit command ---


def elastic(**fields: Any) -> dict[str, Any]:
    return worker(containers=[main(args=ELASTIC_ARGS, **fields)])


def test_elastic_ep_on_ray_needs_an_explicit_command() -> None:
    at = "spec.components[w].podTemplate.spec.containers[0].command"
    assert create(graph(elastic())) == [f"{at}: {ELASTIC_EP_REQUIRED}"]
    assert create(graph(elastic(command=["/bin/sh", "-c"]))) == []
    # Only vLLM, only the Ray backend (both spellings of the flag count).
    assert create(graph(elastic(), backend="sglang")) == []
    mp = worker(containers=[main(args=["--enable-elastic-ep", "--data-parallel-backend", "mp"])])
    assert create(graph(mp)) == []
    short = worker(containers=[main(args=["--enable-elastic-ep", "-dpb=ray"])])
    assert create(graph(short)) == [f"{at}: {ELASTIC_EP_REQUIRED}"]
    assert update(graph(elastic(command=["python3"])), graph(elastic())) == [f"{at}: {ELASTIC_EP_REQUIRED}"]


def test_elastic_ep_at_its_v1alpha1_and_dcd_paths() -> None:
    service = {
        "componentType": "worker",
        "extraPodSpec": {"mainContainer": {"image": IMAGE, "args": ELASTIC_ARGS}},
    }
    assert create(alpha_graph(service)) == [
        f"spec.services.w.extraPodSpec.mainContainer.command: {ELASTIC_EP_REQUIRED}"
    ]
    spec = {**elastic(), "backendFramework": "vllm"}
    del spec["name"]
    assert create(dcd(spec)) == [f"spec.podTemplate.spec.containers[0].command: {ELASTIC_EP_REQUIRED}"]
    assert create(dcd({**spec, "backendFramework": "trtllm"})) == []


# --- GPU power limit ---


def powered(value: str | None, gpus: Any = 1, **fields: Any) -> dict[str, Any]:
    c = worker(containers=[main(resources={"limits": {"nvidia.com/gpu": gpus}})], **fields)
    if value is not None:
        c["podTemplate"]["metadata"] = {"annotations": {POWER: value}}
    return c


def test_power_limit_is_a_positive_decimal_integer() -> None:
    at = f"spec.components[w].podTemplate.metadata.annotations[{POWER}]"
    assert create(graph(powered("300"))) == []
    assert create(graph(powered("300W"))) == [f'{at}: Invalid value: "300W": must be a decimal integer']
    assert create(graph(powered("0"))) == [f'{at}: Invalid value: "0": must be greater than zero']
    assert create(graph(powered("99999999999999999999"))) == [
        f'{at}: Invalid value: "99999999999999999999": must be a decimal integer'
    ]


def test_power_limit_is_refused_with_dra_devices() -> None:
    detail = (
        f'Forbidden: cannot be combined with annotation "{POWER}": power-aware planning does not support '
        "DRA-backed device allocation"
    )
    with_gms = powered("300", experimental={"gpuMemoryService": {"mode": "IntraPod"}})
    assert create(graph(with_gms)) == [f"spec.components[w].experimental.gpuMemoryService: {detail}"]
    claimed = powered("300")
    claimed["podTemplate"]["spec"]["containers"].append(
        {"name": "side", "image": IMAGE, "resources": {"claims": [{"name": "gpu"}]}}
    )
    claimed["podTemplate"]["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    assert create(graph(claimed)) == [
        f"spec.components[w].podTemplate.spec.containers[1].resources.claims: {detail}"
    ]
    # Without the annotation, DRA devices are fine.
    unpowered = copy.deepcopy(claimed)
    del unpowered["podTemplate"]["metadata"]
    assert create(graph(unpowered)) == []


def test_power_limit_and_its_gpu_count_are_immutable() -> None:
    at = f"spec.components[w].podTemplate.metadata.annotations[{POWER}]"
    gpus_at = "spec.components[w].podTemplate.spec.containers[0].resources.limits[nvidia.com/gpu]"
    assert update(graph(powered(None)), graph(powered("300"))) == [
        f'{at}: Invalid value: "300": field is immutable'
    ]
    assert update(graph(powered("300")), graph(powered(None))) == [
        f"{at}: Invalid value: null: field is immutable"
    ]
    assert update(graph(powered("300")), graph(powered("350"))) == [
        f'{at}: Invalid value: "350": field is immutable'
    ]
    assert update(graph(powered("300")), graph(powered("300", gpus=2))) == [
        f'{gpus_at}: Invalid value: "2": field is immutable'
    ]
    assert update(graph(powered("300")), graph(powered("300", gpus="1"))) == []
    # Without a power limit the GPU count may change.
    assert update(graph(powered(None)), graph(powered(None, gpus=2))) == []


# --- The controller-owned workload provider annotation ---


def test_workload_provider_names_a_workload_program() -> None:
    at = f"metadata.annotations[{PROVIDER}]"
    assert create(graph(annotations={PROVIDER: "grove"})) == []
    assert create(graph(annotations={PROVIDER: "lws"})) == [
        f'{at}: Unsupported value: "lws": supported values: "component", "grove"'
    ]


def test_workload_provider_is_the_operators_and_immutable() -> None:
    at = f"metadata.annotations[{PROVIDER}]"
    plain, grove = graph(), graph(annotations={PROVIDER: "grove"})
    assert update(plain, grove) == [f"{at}: Forbidden: may only be materialized by the Dynamo operator"]
    assert update(grove, graph(annotations={PROVIDER: "component"})) == [
        f'{at}: Invalid value: "component": field is immutable'
    ]
    assert update(grove, plain) == [f"{at}: Invalid value: null: field is immutable"]
    assert update(grove, graph(annotations={PROVIDER: "grove"})) == []
    assert update(plain, graph()) == []


# --- Multinode only for workers; node count fixed ---


def frontend(**fields: Any) -> dict[str, Any]:
    return {"name": "f", "type": "frontend", "podTemplate": {"spec": {"containers": [main()]}}, **fields}


def test_multinode_only_for_worker_components() -> None:
    detail = "Forbidden: multinode is supported only for worker, prefill, or decode components"
    assert create(graph(frontend(multinode={"nodeCount": 2}))) == [f"spec.components[f].multinode: {detail}"]
    assert create(graph(worker(multinode={"nodeCount": 2}))) == []
    # A multinode EPP keeps the pin's own message ("EPP component cannot be multinode"); a native
    # (>= 1.5.0) EPP has no eppConfig.
    epp = {
        "name": "e",
        "type": "epp",
        "podTemplate": {"spec": {"containers": [main()]}},
    }
    assert create(graph({**epp, "multinode": {"nodeCount": 2}})) == [
        "spec.components[e].multinode: Forbidden: EPP component cannot be multinode"
    ]
    # An update keeps an unchanged legacy violation and may drop it; changing it is denied.
    legacy = graph(frontend(multinode={"nodeCount": 2}))
    assert update(legacy, graph(frontend(multinode={"nodeCount": 2}))) == []
    assert update(legacy, graph(frontend())) == []
    assert update(legacy, graph(frontend(multinode={"nodeCount": 3}))) == [
        f"spec.components[f].multinode: {detail}"
    ]


def test_multinode_node_count_is_immutable() -> None:
    old = graph(worker(multinode={"nodeCount": 2}))
    assert update(old, graph(worker(multinode={"nodeCount": 3}))) == [
        "spec.components[w].multinode.nodeCount: Invalid value: 3: field is immutable"
    ]
    assert update(old, graph(worker(multinode={"nodeCount": 2}))) == []


# --- Checkpoints: explicit worker types only, not with inter-pod GMS or failover ---


def checkpointed(**experimental: Any) -> dict[str, Any]:
    return worker(experimental={"checkpoint": {"enabled": True, "checkpointRef": "snap"}, **experimental})


def test_checkpoints_only_on_explicit_worker_components() -> None:
    at = "spec.components[w].experimental.checkpoint"
    assert create(graph(checkpointed())) == []
    untyped = checkpointed()
    del untyped["type"]
    assert create(graph(untyped)) == [
        f"{at}: Forbidden: checkpoint functionality requires component type to be explicitly set to worker, "
        "prefill, or decode"
    ]
    assert create(graph({**checkpointed(), "type": "frontend"})) == [
        f"{at}: Forbidden: checkpoint functionality is supported only for worker, prefill, and decode components"
    ]
    disabled = worker(experimental={"checkpoint": {"enabled": False, "checkpointRef": "snap"}})
    assert create(graph({**disabled, "type": "frontend"})) == []
    gated = OperatorFeatures(checkpoint=True)
    assert update(graph(checkpointed()), graph({**checkpointed(), "type": "frontend"}), gated) == [
        f"{at}: Forbidden: checkpoint functionality is supported only for worker, prefill, and decode components"
    ]


def test_checkpoints_are_refused_with_inter_pod_gms_and_failover() -> None:
    at = "spec.components[w].experimental.checkpoint"
    inter_pod = checkpointed(gpuMemoryService={"mode": "InterPod"})
    assert f"{at}: Forbidden: Snapshot with gpuMemoryService.mode=InterPod is unsupported" in create(
        graph(inter_pod)
    )
    failover = checkpointed(gpuMemoryService={"mode": "IntraPod"}, failover={"mode": "IntraPod"})
    assert f"{at}: Forbidden: Snapshot with active/passive failover is temporarily unsupported" in create(
        graph(failover)
    )
    assert not any(
        "Snapshot with" in c for c in create(graph(checkpointed(gpuMemoryService={"mode": "IntraPod"})))
    )
