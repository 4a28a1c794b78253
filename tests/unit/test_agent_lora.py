"""The agent's LoRA reconcile against a fake API server and fake workers: which endpoints it asks,
what it writes (agent/lora.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import kopf

from dynamo_infra.agent.lora import FIELD_MANAGER, LoraAgent, register
from dynamo_infra.kube.connection import Connection
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.render.runtime import lora

BASE = "base/model"
HASH = lora.model_hash(BASE)
UNAVAILABLE = "LoRA management not available: no 'load_lora' handler is registered"


class FakeKube:
    """A namespace's DynamoModel, EndpointSlices and Pods; records writes."""

    def __init__(self) -> None:
        self.model: dict[str, Any] | None = {
            "apiVersion": lora.MODEL_API_VERSION,
            "kind": lora.MODEL_KIND,
            "metadata": {
                "name": "m",
                "namespace": "ns",
                "uid": "m-uid",
                "generation": 1,
                "resourceVersion": "7",
            },
            "spec": {
                "modelName": "my-lora",
                "baseModelName": BASE,
                "modelType": "lora",
                "source": {"uri": "file:///a"},
            },
        }
        self.pods: dict[str, bool] = {}
        self.writes: list[tuple[str, Any, str]] = []
        self.selectors: list[str | None] = []

    def __enter__(self) -> FakeKube:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def add_pod(self, name: str, ready: bool = True) -> None:
        self.pods[name] = ready

    def get(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        if obj["kind"] == lora.MODEL_KIND:
            return copy.deepcopy(self.model)
        name = obj["metadata"]["name"]
        if name not in self.pods:
            return None
        return {"metadata": {"name": name, "labels": {}}, "spec": {"containers": []},
                "status": {"conditions": [{"type": "Ready", "status": str(self.pods[name])}]}}  # fmt: skip

    def list(
        self, api_version: str, kind: str, namespace: str, label_selector: str | None = None
    ) -> list[Any]:
        if kind == lora.MODEL_KIND:
            return [copy.deepcopy(self.model)] if self.model else []
        self.selectors.append(label_selector)
        endpoints = [
            {"addresses": [f"10.0.0.{i}"], "conditions": {"ready": ready},
             "targetRef": {"kind": "Pod", "name": name, "uid": f"uid-{name}"}}
            for i, (name, ready) in enumerate(sorted(self.pods.items()))
        ]  # fmt: skip
        return [
            {
                "metadata": {"labels": {lora.SLICE_SERVICE_LABEL: f"dynamo-model-{HASH}"}},
                "endpoints": endpoints,
            }
        ]

    def apply(
        self, obj: dict[str, Any], *, subresource: str | None = None, manager: str = ""
    ) -> dict[str, Any]:
        assert self.model is not None
        self.writes.append(("apply/" + str(subresource), obj, manager))
        self.model["status"] = obj["status"]
        return obj

    def patch(self, obj: dict[str, Any], ops: list[dict[str, Any]], *, manager: str = "") -> dict[str, Any]:
        assert self.model is not None
        self.writes.append(("patch", ops, manager))
        meta = self.model["metadata"]
        for op in ops:
            if op["op"] == "add" and op["path"] == "/metadata/finalizers":
                meta["finalizers"] = list(op["value"])
            elif op["op"] == "remove":
                meta["finalizers"].pop(int(op["path"].rsplit("/", 1)[1]))
        return self.model


def workers(answers: dict[str, tuple[int, str]], calls: list[tuple[str, str, Any]]) -> httpx.Client:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        calls.append((request.method, str(request.url), body))
        status, text = answers.get(request.url.host, (200, "{}"))
        return httpx.Response(status, text=text)

    return httpx.Client(transport=httpx.MockTransport(handle))


def test_loads_into_each_ready_endpoint_once_and_again_into_a_new_one() -> None:
    kube = FakeKube()
    calls: list[tuple[str, str, Any]] = []
    agent = LoraAgent(lambda: kube, http=workers({"10.0.0.1": (500, UNAVAILABLE)}, calls), requeue_after=3600)  # type: ignore[arg-type,return-value]
    kube.add_pod("w-a")
    kube.add_pod("w-b")
    kube.add_pod("w-c", ready=False)
    try:
        agent.reconcile("ns", "m")
        body = {"lora_name": "my-lora", "source": {"uri": "file:///a"}}
        # Ready endpoints only; w-b answers that it has no LoRA management.
        assert sorted(calls) == [
            ("POST", "http://10.0.0.0:9090/v1/loras", body),
            ("POST", "http://10.0.0.1:9090/v1/loras", body),
        ]
        assert kube.selectors == [f"nvidia.com/dynamo-base-model-hash={HASH},dynamo-infra.io/inventory"]
        assert kube.model is not None
        assert kube.model["metadata"]["finalizers"] == [lora.FINALIZER]
        status = kube.model["status"]
        assert [(e["podName"], e["ready"]) for e in status["endpoints"]] == [
            ("w-a", True),
            ("w-b", False),
            ("w-c", False),
        ]
        assert f"w-b: load LoRA failed with status 500: {UNAVAILABLE}" in status["conditions"][1]["message"]
        assert {manager for _, _, manager in kube.writes} == {FIELD_MANAGER}
        assert ("apply/status", FIELD_MANAGER) in {(w, m) for w, _, m in kube.writes}
        # A retry asks only where the adapter is not loaded; w-c became ready and is asked too.
        calls.clear()
        kube.add_pod("w-c")
        agent.reconcile("ns", "m")
        assert sorted(url for _, url, _ in calls) == [
            "http://10.0.0.1:9090/v1/loras",
            "http://10.0.0.2:9090/v1/loras",
        ]
        assert [e["ready"] for e in kube.model["status"]["endpoints"]] == [True, False, True]
        # A status write alone (same generation) is not reconciled again.
        calls.clear()
        agent.on_model("MODIFIED", kube.model)
        assert calls == []
        # Deletion: unload everywhere, then let the object go.
        kube.model["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        agent.on_model("MODIFIED", kube.model)
        assert sorted((m, u) for m, u, _ in calls) == [
            ("DELETE", f"http://10.0.0.{i}:9090/v1/loras/my-lora") for i in range(3)
        ]
        assert kube.model["metadata"]["finalizers"] == []
        assert "m-uid" not in agent.loaded
    finally:
        agent.close()


def test_an_api_failure_is_retried_after_the_requeue_delay() -> None:
    kube = FakeKube()
    kube.add_pod("w-a")

    def refuse(*_: Any, **__: Any) -> None:
        raise KubeError("PATCH status: 403 forbidden", 403)

    kube.apply = refuse  # type: ignore[assignment,method-assign]
    agent = LoraAgent(lambda: kube, http=workers({}, []), requeue_after=3600)  # type: ignore[arg-type,return-value]
    try:
        agent.reconcile("ns", "m")
        # Not remembered as reconciled (its next event is reconciled again), and a retry is waiting.
        assert "m-uid" not in agent.seen
        assert ("ns", "m") in agent._timers
    finally:
        agent.close()


def test_registered_handlers_are_level_based_watches_only() -> None:
    """Event handlers only: no create/update/delete handlers, daemons or timers, which would keep kopf's
    progress, diff base or finalizer in the objects. (kopf's registry has no public listing.)"""
    registry = kopf.OperatorRegistry()
    agent = register(registry, connect=lambda: Connection(server="https://127.0.0.1:1"))
    try:
        watched = {
            (h.selector.group, h.selector.version, h.selector.any_name): h.labels
            for h in registry._watching.get_all_handlers()
        }
        assert watched == {
            ("nvidia.com", "v1alpha1", "dynamomodels"): None,
            ("discovery.k8s.io", "v1", "endpointslices"): {
                "nvidia.com/dynamo-base-model-hash": kopf.PRESENT,
                "dynamo-infra.io/inventory": kopf.PRESENT,
            },
        }
        assert registry._changing.get_all_handlers() == []
        assert registry._spawning.get_all_handlers() == []
    finally:
        agent.close()
