"""DynamoModel (LoRA) decisions as the operator's DynamoModel controller makes them (render/runtime/lora.py)."""

from __future__ import annotations

from typing import Any

import pytest

from dynamo_infra.render.runtime import lora

BASE = "Qwen/Qwen3-0.6B"
HASH = lora.model_hash(BASE)
NOW, LATER = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def model(
    model_type: str = "lora", generation: int = 3, status: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoModel",
        "metadata": {"name": "my-lora", "namespace": "ns", "generation": generation, "uid": "m-1"},
        "spec": {
            "modelName": "org/my-lora",
            "baseModelName": BASE,
            "modelType": model_type,
            "source": {"uri": "hf://org/my-lora@abc"},
        },
        **({"status": status} if status else {}),
    }


def endpoint(ip: str, pod: str, ready: bool | None = True, kind: str = "Pod") -> dict[str, Any]:
    ep: dict[str, Any] = {"addresses": [ip], "targetRef": {"kind": kind, "name": pod, "uid": f"uid-{pod}"}}
    if ready is not None:
        ep["conditions"] = {"ready": ready}
    return ep


def slice_of(*endpoints: dict[str, Any], service: str = f"dynamo-model-{HASH}") -> dict[str, Any]:
    return {"metadata": {"labels": {lora.SLICE_SERVICE_LABEL: service}}, "endpoints": list(endpoints)}


def pod(
    name: str, *, ready: bool = True, sub_type: str = "", command: str = "python3 -m dynamo.vllm"
) -> dict[str, Any]:
    labels = {"nvidia.com/dynamo-graph-deployment-name": "g", "nvidia.com/dynamo-component-type": "worker"}
    if sub_type:
        labels["nvidia.com/dynamo-sub-component-type"] = sub_type
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "main", "command": command.split()}]},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_a_slice_names_the_models_of_its_base_model_hash() -> None:
    assert lora.models_of([model(), {"spec": {"baseModelName": "other"}}], HASH) == [model()]


def test_candidates_are_pods_with_an_address_once_each_on_the_system_port() -> None:
    slices = [
        slice_of(endpoint("10.0.0.1", "w-0"), endpoint("10.0.0.2", "w-1", ready=False)),
        # The same pod in a second slice, ready there: ready.
        slice_of(endpoint("10.0.0.2", "w-1"), endpoint("10.0.0.3", "n", kind="Node"), {"addresses": []}),
        slice_of(endpoint("fd00::4", "w-2", ready=None), service="other"),
    ]
    found, services = lora.candidates(slices)
    assert [(c.address, c.pod, c.kubernetes_ready) for c in found] == [
        ("http://10.0.0.1:9090", "w-0", True),
        ("http://10.0.0.2:9090", "w-1", True),
        ("http://[fd00::4]:9090", "w-2", False),
    ]
    assert services == {f"dynamo-model-{HASH}", "other"}


def test_a_vllm_prefill_pod_may_be_covered_by_its_graph() -> None:
    c = lora.Candidate("http://10.0.0.1:9090", "p-0", kubernetes_ready=False)
    prefill = lora.identified(c, pod("p-0", sub_type="prefill"))
    assert (prefill.kubernetes_ready, prefill.allow_unavailable, prefill.fallback_group) == (
        True,
        True,
        "graph:g",
    )
    decode = lora.identified(c, pod("d-0", sub_type="decode"))
    assert (decode.kubernetes_ready, decode.allow_unavailable) == (True, False)
    sglang = lora.identified(c, pod("p-0", sub_type="prefill", command="python3 -m dynamo.sglang"))
    assert not sglang.allow_unavailable
    assert lora.identified(c, pod("p-0", ready=False)).kubernetes_ready is False
    assert lora.identified(lora.Candidate("a", "gone", kubernetes_ready=True), None).kubernetes_ready is False


def test_request_bodies_and_paths() -> None:
    assert lora.load_request(model()) == {
        "lora_name": "org/my-lora",
        "source": {"uri": "hf://org/my-lora@abc"},
    }
    assert lora.unload_path("org/my-lora") == "/v1/loras/org%2Fmy-lora"


@pytest.mark.parametrize(
    ("status", "body", "unavailable"),
    [
        (500, "LoRA management not available: no 'load_lora' handler is registered", True),
        (500, "endpoint 'load_lora' not found in local registry", True),
        (404, "LoRA management not available", False),
        (500, "out of memory", False),
    ],
)
def test_failures_say_whether_the_worker_has_no_lora_management(
    status: int, body: str, unavailable: bool
) -> None:
    out = lora.failure("load", status, body)
    assert not out.loaded and out.unavailable is unavailable
    assert out.error == f"load LoRA failed with status {status}: {body}"


def test_no_endpoints() -> None:
    status = lora.model_status(model(), [], set(), [], now=NOW)
    msg = f"No endpoint slices found for base model {BASE}"
    assert status == {
        "readyEndpoints": 0,
        "totalEndpoints": 0,
        "conditions": [
            {"type": "ServicesFound", "status": "False", "observedGeneration": 3, "reason": "NoServicesFound",
             "message": msg, "lastTransitionTime": NOW},
            {"type": "EndpointsReady", "status": "False", "observedGeneration": 3, "reason": "NoEndpoints",
             "message": msg, "lastTransitionTime": NOW},
        ],
    }  # fmt: skip


def test_all_loaded_then_one_fails_with_the_workers_answer_in_the_message() -> None:
    found = [
        lora.Candidate("http://10.0.0.1:9090", "w-0", "u0", True),
        lora.Candidate("http://10.0.0.2:9090", "w-1", "u1", True),
    ]
    services = {f"dynamo-model-{HASH}"}
    ok = lora.model_status(model(), found, services, [lora.Outcome(True), lora.Outcome(True)], now=NOW)
    assert ok["endpoints"] == [
        {"address": "http://10.0.0.1:9090", "podName": "w-0", "ready": True},
        {"address": "http://10.0.0.2:9090", "podName": "w-1", "ready": True},
    ]
    assert (ok["readyEndpoints"], ok["totalEndpoints"], "loraFallbackCoveredEndpoints" in ok) == (2, 2, False)
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in ok["conditions"]] == [
        ("ServicesFound", "True", "ServicesFound", "Found 1 service(s)"),
        (
            "EndpointsReady",
            "True",
            "AllEndpointsReady",
            "All 2 endpoint(s) are ready or covered by a capable prefill",
        ),
    ]
    assert not lora.needs_retry(model(), [lora.Outcome(True)] * 2, ok)

    failed = lora.failure("load", 500, "LoRA management not available")
    again = lora.model_status(model(status=ok), found, services, [lora.Outcome(True), failed], now=LATER)
    ready = again["conditions"][1]
    assert (ready["status"], ready["reason"], ready["lastTransitionTime"]) == ("False", "NotReady", LATER)
    assert ready["message"] == (
        "Found 1 ready endpoint(s) and 0 fallback-covered endpoint(s) out of 2 total; "
        "w-1: load LoRA failed with status 500: LoRA management not available"
    )
    # ServicesFound did not change: its transition time is kept.
    assert again["conditions"][0]["lastTransitionTime"] == NOW
    assert lora.needs_retry(model(), [lora.Outcome(True), failed], again)


def test_a_legacy_vllm_prefill_is_covered_by_a_capable_one_of_its_group() -> None:
    capable = lora.Candidate(
        "http://10.0.0.1:9090", "p-0", "u0", True, allow_unavailable=True, fallback_group="graph:g"
    )
    legacy = lora.Candidate(
        "http://10.0.0.2:9090", "p-1", "u1", True, allow_unavailable=True, fallback_group="graph:g"
    )
    unavailable = lora.failure("load", 500, "LoRA management not available")
    status = lora.model_status(model(), [capable, legacy], {"s"}, [lora.Outcome(True), unavailable], now=NOW)
    assert status["endpoints"][1] == {
        "address": "http://10.0.0.2:9090",
        "podName": "p-1",
        "ready": False,
        "loraFallbackCovered": True,
    }
    assert (status["readyEndpoints"], status["loraFallbackCoveredEndpoints"]) == (1, 1)
    assert status["conditions"][1]["reason"] == "AllEndpointsReady"
    # Without a capable prefill in its group, nothing covers it.
    alone = lora.model_status(model(), [legacy], {"s"}, [unavailable], now=NOW)
    assert alone["endpoints"] == [{"address": "http://10.0.0.2:9090", "podName": "p-1", "ready": False}]
    assert alone["conditions"][1]["reason"] == "NotReady"


def test_a_base_model_only_counts_its_endpoints() -> None:
    found = [lora.Candidate("http://10.0.0.1:9090", "w-0", "u0", True)]
    status = lora.model_status(model("base"), found, {"s"}, [lora.Outcome(False)], now=NOW)
    assert status["endpoints"] == [{"address": "http://10.0.0.1:9090", "podName": "w-0", "ready": False}]
    assert [c["reason"] for c in status["conditions"]] == ["ServicesFound", "EndpointsDiscovered"]
    assert not lora.needs_retry(model("base"), [lora.Outcome(False)], status)


def test_a_lora_without_source_has_no_endpoints_and_is_retried() -> None:
    found = [lora.Candidate("http://10.0.0.1:9090", "w-0", "u0", True)]
    status = lora.model_status(model(), found, {"s"}, None, now=NOW)
    assert (status["totalEndpoints"], status["conditions"][1]["reason"]) == (0, "NoEndpoints")
    assert lora.needs_retry(model(), None, status)
