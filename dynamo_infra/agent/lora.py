"""LoRA adapters of DynamoModels, loaded into every ready worker of their base model (kopf handlers).

As the operator's DynamoModel controller: a DynamoModel is reconciled when it changes (generation,
deletion) and whenever an EndpointSlice of its base model changes (a pod became ready, a pod went
away), and again `REQUEUE_AFTER_S` after a reconcile that left an endpoint without the adapter. It
keeps the operator's finalizer on each DynamoModel and unloads the adapter from every endpoint
before letting it go. Only the base-model Services we rendered (our inventory label, which the
EndpointSlice controller copies onto their slices) are looked at.

Unlike the operator, which POSTs the adapter to every endpoint on every reconcile, an endpoint that
took the adapter is not asked again while it stays ready (the agent remembers which pod, by UID,
took which generation of which model; a restarted agent asks every ready endpoint once), and an
endpoint that is not ready is not asked until it is.

HTTP requests to the workers honour the standard proxy variables (HTTP_PROXY, NO_PROXY).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import UTC, datetime
from typing import Any

import httpx
import kopf

from dynamo_infra import __version__
from dynamo_infra.agent.errors import named
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import KubeClient, stub
from dynamo_infra.kube.connection import Connection, from_environment
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.reconcile.ownership import INVENTORY_LABEL
from dynamo_infra.render import names
from dynamo_infra.render.runtime import lora
from dynamo_infra.render.runtime.agent import AGENT_NAME

# Field manager of everything the agent writes.
FIELD_MANAGER = AGENT_NAME
# User agent of the LoRA handlers' API requests.
USER_AGENT = f"{AGENT_NAME}-lora/{__version__}"
# Seconds before a model with an endpoint not serving its adapter is reconciled again (the operator's).
REQUEUE_AFTER_S = 30.0
# Endpoints asked at once, per request and overall time limits (the operator's).
MAX_CONCURRENT = 10
REQUEST_TIMEOUT_S = 15.0
TOTAL_TIMEOUT_S = 30.0

SLICE_API = ("discovery.k8s.io", "v1", "endpointslices")
MODEL_API = ("nvidia.com", "v1alpha1", "dynamomodels")

log = logging.getLogger(__name__)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class LoraAgent:
    """Reconciles DynamoModels; one lock per model, so model, slice and retry events never overlap."""

    def __init__(
        self,
        kube: Callable[[], KubeClient],
        *,
        requeue_after: float = REQUEUE_AFTER_S,
        http: httpx.Client | None = None,
    ) -> None:
        self.kube = kube
        self.requeue_after = requeue_after
        self.http = http or httpx.Client(timeout=REQUEST_TIMEOUT_S, follow_redirects=False, trust_env=True)
        self._pool = ThreadPoolExecutor(MAX_CONCURRENT, thread_name_prefix="lora")
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()
        self._timers: dict[tuple[str, str], threading.Timer] = {}
        # Per model UID: the endpoints (pod UID, address) that took the adapter, and of which generation.
        self.loaded: dict[str, dict[tuple[str, str], int]] = {}
        # Per model UID: the generation last reconciled (status writes alone are not reconciled again).
        self.seen: dict[str, int] = {}

    def close(self) -> None:
        with self._guard:
            for timer in self._timers.values():
                timer.cancel()
            self._timers.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.http.close()

    def _lock(self, key: tuple[str, str]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    # --- events -------------------------------------------------------------------------------

    def on_model(self, event_type: str | None, body: Manifest) -> None:
        """A DynamoModel event: reconcile on a new generation, on deletion and on the initial listing."""
        meta = body.get("metadata") or {}
        uid = meta.get("uid", "")
        if event_type == "DELETED":
            self.forget(meta.get("namespace", ""), meta.get("name", ""), uid)
            return
        generation = int(meta.get("generation") or 0)
        if event_type is not None and self.seen.get(uid) == generation and not meta.get("deletionTimestamp"):
            return
        self.reconcile(meta["namespace"], meta["name"])

    def on_slice(self, namespace: str, base_hash: str) -> None:
        """An EndpointSlice of a base model changed: reconcile that base model's DynamoModels."""
        with self.kube() as kube:
            models = kube.list(lora.MODEL_API_VERSION, lora.MODEL_KIND, namespace)
        for model in lora.models_of(models, base_hash):
            self.reconcile(namespace, model["metadata"]["name"])

    def forget(self, namespace: str, name: str, uid: str) -> None:
        self.loaded.pop(uid, None)
        self.seen.pop(uid, None)
        with self._guard:
            timer = self._timers.pop((namespace, name), None)
        if timer is not None:
            timer.cancel()

    def requeue(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        timer = threading.Timer(self.requeue_after, self._retry, key)
        timer.daemon = True
        with self._guard:
            old = self._timers.pop(key, None)
            self._timers[key] = timer
        if old is not None:
            old.cancel()
        timer.start()

    def _retry(self, namespace: str, name: str) -> None:
        self.reconcile(namespace, name)

    # --- one model ----------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> None:
        """Reconcile one DynamoModel; an API failure is retried after the requeue delay."""
        try:
            self._reconcile(namespace, name)
        except KubeError as e:
            log.error(
                "DynamoModel %s/%s: %s (retrying in %.0fs)", namespace, name, named(e), self.requeue_after
            )
            self.requeue(namespace, name)

    def _reconcile(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        with self._lock(key), self.kube() as kube:
            with self._guard:
                timer = self._timers.pop(key, None)
            if timer is not None:
                timer.cancel()
            model = kube.get(stub(lora.MODEL_API_VERSION, lora.MODEL_KIND, namespace, name))
            if model is None:
                return
            uid = model["metadata"]["uid"]
            if model["metadata"].get("deletionTimestamp"):
                self.finalize(kube, model)
                self.forget(namespace, name, uid)
                return
            # Status writes of this reconcile come back as events of the same generation: not reconciled.
            self.seen[uid] = int(model["metadata"].get("generation") or 0)
            try:
                self.ensure_finalizer(kube, model)
                self.write_status(kube, model)
            except KubeError:
                self.seen.pop(uid, None)
                raise

    def write_status(self, kube: KubeClient, model: Manifest) -> None:
        """Load the adapter where it is missing and write the status; retried later if it is not everywhere."""
        namespace, name = model["metadata"]["namespace"], model["metadata"]["name"]
        found, services = self.endpoints(kube, model)
        outcomes = self.load(model, found) if found else []
        found = self.identify(kube, model, found, outcomes)
        status = lora.model_status(model, found, services, outcomes, now=now())
        kube.apply(
            {
                "apiVersion": lora.MODEL_API_VERSION,
                "kind": lora.MODEL_KIND,
                "metadata": {"name": name, "namespace": namespace},
                "status": status,
            },
            subresource="status",
            manager=FIELD_MANAGER,
        )
        log.info(
            "DynamoModel %s/%s: %d of %d endpoint(s) ready",
            namespace,
            name,
            status["readyEndpoints"],
            status["totalEndpoints"],
        )
        if found and lora.needs_retry(model, outcomes, status):
            self.requeue(namespace, name)

    def endpoints(self, kube: KubeClient, model: Manifest) -> tuple[list[lora.Candidate], set[str]]:
        """The pods behind the base model's Services we rendered (ready as their EndpointSlices say)."""
        ns = model["metadata"]["namespace"]
        selector = f"{names.LABEL_BASE_MODEL_HASH}={lora.model_hash(model['spec']['baseModelName'])},{INVENTORY_LABEL}"
        slices = kube.list("discovery.k8s.io/v1", "EndpointSlice", ns, label_selector=selector)
        return lora.candidates(slices)

    def identify(
        self,
        kube: KubeClient,
        model: Manifest,
        found: list[lora.Candidate],
        outcomes: Sequence[lora.Outcome] | None,
    ) -> list[lora.Candidate]:
        """The endpoints that answered "LoRA management not available", identified by their pod (its
        readiness, and whether it is a vLLM prefill another prefill of its graph may cover), as the
        operator identifies every endpoint: the only answer where the pod changes the outcome."""
        if outcomes is None:
            return found
        ns = model["metadata"]["namespace"]
        return [
            lora.identified(c, kube.get(stub("v1", "Pod", ns, c.pod))) if o.unavailable else c
            for c, o in zip(found, outcomes, strict=True)
        ]

    def load(self, model: Manifest, found: Sequence[lora.Candidate]) -> list[lora.Outcome] | None:
        """Load the adapter where it is not yet (ready endpoints only); one outcome per candidate. None
        for a LoRA without a source (nothing to load); not-loaded outcomes for other model types."""
        if not lora.is_lora(model):
            return [lora.Outcome(loaded=False) for _ in found]
        if not lora.source_uri(model):
            log.error("DynamoModel %s: source URI is required for LoRA models", model["metadata"]["name"])
            return None
        uid, generation = model["metadata"]["uid"], int(model["metadata"].get("generation") or 0)
        took = self.loaded.setdefault(uid, {})
        outcomes: dict[int, lora.Outcome] = {}
        asks = {}
        for i, c in enumerate(found):
            if not c.kubernetes_ready:
                took.pop((c.uid, c.address), None)
                outcomes[i] = lora.Outcome(loaded=False)
            elif took.get((c.uid, c.address)) == generation:
                outcomes[i] = lora.Outcome(loaded=True)
            else:
                asks[i] = self._pool.submit(self.post, c.address, lora.load_request(model))
        done, _ = wait(asks.values(), timeout=TOTAL_TIMEOUT_S)
        for i, future in asks.items():
            outcome = future.result() if future in done else lora.Outcome(False, "load LoRA timed out")
            outcomes[i] = outcome
            if outcome.loaded:
                took[(found[i].uid, found[i].address)] = generation
        alive = {(c.uid, c.address) for c in found}
        for gone in set(took) - alive:
            del took[gone]
        return [outcomes[i] for i in range(len(found))]

    def post(self, address: str, body: Manifest) -> lora.Outcome:
        try:
            resp = self.http.post(address + lora.LORAS_PATH, json=body)
        except httpx.HTTPError as e:
            return lora.Outcome(False, f"failed to call load LoRA endpoint: {type(e).__name__}: {e}")
        if 200 <= resp.status_code < 300:
            return lora.Outcome(True)
        return lora.failure("load", resp.status_code, resp.text)

    def finalize(self, kube: KubeClient, model: Manifest) -> None:
        """FinalizeResource: unload a LoRA from every endpoint (failures logged, never blocking), then
        drop the finalizer."""
        finalizers = list(model["metadata"].get("finalizers") or [])
        if lora.FINALIZER not in finalizers:
            return
        if lora.is_lora(model):
            try:
                found, _ = self.endpoints(kube, model)
            except KubeError as e:
                found = []
                log.warning(
                    "DynamoModel %s: endpoints unknown, not unloading: %s", model["metadata"]["name"], e
                )
            path = lora.unload_path(str(model["spec"]["modelName"]))
            asks = [self._pool.submit(self.delete, c, path) for c in found]
            wait(asks, timeout=TOTAL_TIMEOUT_S)
        at = finalizers.index(lora.FINALIZER)
        kube.patch(
            model,
            [
                {"op": "test", "path": f"/metadata/finalizers/{at}", "value": lora.FINALIZER},
                {"op": "remove", "path": f"/metadata/finalizers/{at}"},
            ],
            manager=FIELD_MANAGER,
        )

    def delete(self, candidate: lora.Candidate, path: str) -> lora.Outcome:
        try:
            resp = self.http.delete(candidate.address + path)
        except httpx.HTTPError as e:
            outcome = lora.Outcome(False, f"failed to call unload LoRA endpoint: {type(e).__name__}: {e}")
        else:
            ok = 200 <= resp.status_code < 300
            outcome = lora.Outcome(True) if ok else lora.failure("unload", resp.status_code, resp.text)
        if outcome.error and not (candidate.allow_unavailable and outcome.unavailable):
            log.warning("unload LoRA from %s (pod %s): %s", candidate.address, candidate.pod, outcome.error)
        return outcome

    def ensure_finalizer(self, kube: KubeClient, model: Manifest) -> None:
        finalizers = model["metadata"].get("finalizers")
        if finalizers is not None and lora.FINALIZER in finalizers:
            return
        op: Manifest = (
            {"op": "add", "path": "/metadata/finalizers/-", "value": lora.FINALIZER}
            if finalizers is not None
            else {"op": "add", "path": "/metadata/finalizers", "value": [lora.FINALIZER]}
        )
        test = {
            "op": "test",
            "path": "/metadata/resourceVersion",
            "value": model["metadata"]["resourceVersion"],
        }
        kube.patch(model, [test, op], manager=FIELD_MANAGER)


def register(
    registry: kopf.OperatorRegistry,
    *,
    connect: Callable[[], Connection] = from_environment,
    requeue_after: float = REQUEUE_AFTER_S,
) -> LoraAgent:
    """Register the DynamoModel and EndpointSlice handlers in `registry`; the agent they drive."""
    agent = LoraAgent(lambda: KubeClient(connect(), USER_AGENT), requeue_after=requeue_after)

    @kopf.on.event(*MODEL_API, registry=registry)
    def dynamo_model(event: kopf.RawEvent, body: kopf.Body, **_: Any) -> None:
        agent.on_model(event.get("type"), dict(body))

    @kopf.on.event(
        *SLICE_API,
        labels={names.LABEL_BASE_MODEL_HASH: kopf.PRESENT, INVENTORY_LABEL: kopf.PRESENT},
        registry=registry,
    )
    def endpoint_slice(body: kopf.Body, namespace: str | None, **_: Any) -> None:
        if namespace:
            agent.on_slice(namespace, body.metadata.labels[names.LABEL_BASE_MODEL_HASH])

    @kopf.on.cleanup(registry=registry)
    def stop(**_: Any) -> None:
        agent.close()

    return agent
