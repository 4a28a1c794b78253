"""DynamoModel (LoRA adapters) as the operator's DynamoModel controller handles them (pure).

A DynamoModel names a base model; its endpoints are the pods behind the base model's headless
Service (`dynamo-model-<hash>`, rendered with each component that has a `modelRef`), found through
that Service's EndpointSlices (label `nvidia.com/dynamo-base-model-hash`). A LoRA model is loaded
into each endpoint's Dynamo system port: POST `/v1/loras` `{"lora_name", "source": {"uri"}}`, and
unloaded with DELETE `/v1/loras/<name>` when the DynamoModel is deleted. Its status lists every
endpoint with whether the adapter is loaded there, and two conditions (`ServicesFound`,
`EndpointsReady`). This module decides; the agent (`dynamo_infra.agent.lora`) does the I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import quote

from dynamo_infra.api.errors import DynamoValidationError
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import names
from dynamo_infra.render.backends.table import detect
from dynamo_infra.render.runtime.records import with_transition_times

MODEL_API_VERSION = "nvidia.com/v1alpha1"
MODEL_KIND = "DynamoModel"
# The finalizer the operator puts on every DynamoModel (its controllers' common finalizer).
FINALIZER = "nvidia.com/finalizer"
# `spec.modelType` of an adapter loaded at run time (compared case-insensitively, as the operator does).
LORA = "lora"
# The Dynamo system port of a worker, where `/v1/loras` is served (the operator's DynamoSystemPort).
SYSTEM_PORT = 9090
# Path of the runtime's adapter API on the system port.
LORAS_PATH = "/v1/loras"
# The Service name label the EndpointSlice controller puts on each slice.
SLICE_SERVICE_LABEL = "kubernetes.io/service-name"
# The container the operator reads a pod's backend from.
MAIN_CONTAINER = "main"
# Component types whose pods may be a legacy vLLM prefill (LoRA fallback coverage).
PREFILL = "prefill"
WORKER = "worker"
VLLM = "vllm"
# An error body longer than this is cut in status messages (the operator reads at most 64 KiB).
MAX_ERROR_CHARS = 512

# The agent's permissions for DynamoModels, in each namespace it watches (RBAC PolicyRules).
RULES: tuple[Manifest, ...] = (
    # Watch the DynamoModels, read one before reconciling it, JSON-patch its finalizer in and out.
    {"apiGroups": ["nvidia.com"], "resources": ["dynamomodels"], "verbs": ["get", "list", "watch", "patch"]},
    # Server-side apply of its status.
    {"apiGroups": ["nvidia.com"], "resources": ["dynamomodels/status"], "verbs": ["patch"]},
    # Watch and list the base models' EndpointSlices (where the workers are, and when they are ready).
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
    # Read the pod of an endpoint that has no LoRA management (a vLLM prefill another may cover?).
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
)

CONDITION_SERVICES_FOUND = "ServicesFound"
CONDITION_ENDPOINTS_READY = "EndpointsReady"


def model_hash(base_model: str) -> str:
    """The base-model-hash label value of a base model name."""
    return names.model_hash(base_model)


def is_lora(model: Manifest) -> bool:
    return str((model.get("spec") or {}).get("modelType") or "").lower() == LORA


def source_uri(model: Manifest) -> str:
    return str(((model.get("spec") or {}).get("source") or {}).get("uri") or "")


@dataclass(frozen=True)
class Candidate:
    """One pod behind the base model's Service: where its system port is, and how it may be treated."""

    address: str
    pod: str
    uid: str = ""
    kubernetes_ready: bool = False
    # A legacy vLLM prefill may answer "LoRA management not available" and still count as serving,
    # when another prefill of its group loaded the adapter.
    allow_unavailable: bool = False
    fallback_group: str = ""


@dataclass(frozen=True)
class Outcome:
    """What loading the adapter into one endpoint gave: loaded, or the error (and whether the worker
    said it has no LoRA management at all)."""

    loaded: bool
    error: str = ""
    unavailable: bool = False


def candidates(slices: Sequence[Manifest], port: int = SYSTEM_PORT) -> tuple[list[Candidate], set[str]]:
    """ExtractCandidates: one candidate per pod (by UID) with an address, `http://<ip>:<port>`, ready when
    any of its slice entries is; and the names of the Services the slices belong to."""
    found: list[Candidate] = []
    index: dict[str, int] = {}
    services: set[str] = set()
    for s in slices:
        service = ((s.get("metadata") or {}).get("labels") or {}).get(SLICE_SERVICE_LABEL)
        if service:
            services.add(service)
        for ep in s.get("endpoints") or []:
            ref = ep.get("targetRef") or {}
            if not ep.get("addresses") or ref.get("kind") != "Pod":
                continue
            key = ref.get("uid") or ref.get("name", "")
            ready = (ep.get("conditions") or {}).get("ready") is True
            if key in index:
                if ready:
                    found[index[key]] = replace(found[index[key]], kubernetes_ready=True)
                continue
            index[key] = len(found)
            host = ep["addresses"][0]
            host = f"[{host}]" if ":" in host else host
            found.append(Candidate(f"http://{host}:{port}", ref.get("name", ""), ref.get("uid", ""), ready))
    return found, services


def identified(candidate: Candidate, pod: Manifest | None) -> Candidate:
    """withPodIdentity: readiness from the pod itself; a vLLM prefill pod gets its fallback group (its
    graph, else its workload). A pod that is gone is not ready."""
    if pod is None:
        return replace(candidate, kubernetes_ready=False)
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    out = replace(candidate, kubernetes_ready=ready)
    component_type = labels.get(names.LABEL_COMPONENT_TYPE, "")
    if component_type == WORKER:
        component_type = labels.get(names.LABEL_SUB_COMPONENT_TYPE, "")
    if component_type != PREFILL:
        return out
    main = next(
        (c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == MAIN_CONTAINER), None
    )
    if main is None:
        return out
    try:
        backend = detect(list(main.get("command") or []), list(main.get("args") or []), "pod")
    except DynamoValidationError:
        return out
    if backend != VLLM:
        return out
    workload = labels.get(names.LABEL_SELECTOR) or next(
        (o.get("name", "") for o in meta.get("ownerReferences") or [] if o.get("controller")), ""
    )
    graph = labels.get(names.LABEL_GRAPH, "")
    group = f"graph:{graph}" if graph else (f"workload:{workload}" if workload else "")
    return replace(out, fallback_group=group, allow_unavailable=bool(group))


def load_request(model: Manifest) -> Manifest:
    """The body POSTed to `<address>/v1/loras`."""
    return {"lora_name": str(model["spec"]["modelName"]), "source": {"uri": source_uri(model)}}


def unload_path(model_name: str) -> str:
    """The path DELETEd to unload an adapter (its name as one path segment)."""
    return f"{LORAS_PATH}/{quote(model_name, safe='')}"


def failure(operation: str, status: int, body: str) -> Outcome:
    """A non-2xx answer of the adapter API, as the operator words it; "unavailable" when the worker has no
    LoRA handler at all (HTTP 500 saying so)."""
    text = body if len(body) <= MAX_ERROR_CHARS else body[:MAX_ERROR_CHARS] + "..."
    lowered = body.lower()
    missing = "lora management not available" in lowered or (
        f"endpoint '{operation}_lora' not found in local registry" in lowered
    )
    return Outcome(
        loaded=False,
        error=f"{operation} LoRA failed with status {status}: {text}",
        unavailable=status == 500 and missing,
    )


def endpoint_infos(found: Sequence[Candidate], outcomes: Sequence[Outcome]) -> list[Manifest]:
    """The status's `endpoints`, in candidate order: `ready` where the adapter is loaded; a legacy vLLM
    prefill without LoRA management is `loraFallbackCovered` when another prefill of its group loaded it."""
    fallback = [
        bool(o.error and c.allow_unavailable and o.unavailable) for c, o in zip(found, outcomes, strict=True)
    ]
    capable = {
        c.fallback_group
        for c, o, used in zip(found, outcomes, fallback, strict=True)
        if not used and c.allow_unavailable and c.fallback_group and o.loaded
    }
    out = []
    for c, o, used in zip(found, outcomes, fallback, strict=True):
        info: Manifest = {"address": c.address, "podName": c.pod, "ready": o.loaded and not used}
        if not c.pod:
            del info["podName"]
        if used and c.fallback_group in capable and c.kubernetes_ready:
            info["loraFallbackCovered"] = True
        out.append(info)
    return out


def _condition(kind: str, status: bool, reason: str, message: str, generation: int) -> Manifest:
    return {
        "type": kind,
        "status": "True" if status else "False",
        "observedGeneration": generation,
        "reason": reason,
        "message": message,
    }


def model_status(
    model: Manifest,
    found: Sequence[Candidate],
    services: set[str],
    outcomes: Sequence[Outcome] | None,
    *,
    now: str,
) -> Manifest:
    """The DynamoModel status the operator writes after a reconcile (`outcomes`: one per candidate;
    None when nothing could be tried, a LoRA without source). Where the operator only posts an
    event (disabled here), the failures are appended to the `EndpointsReady` message."""
    base = str(model["spec"].get("baseModelName", ""))
    generation = int((model.get("metadata") or {}).get("generation") or 0)
    previous = list(((model.get("status") or {}).get("conditions")) or [])
    if not found:
        msg = f"No endpoint slices found for base model {base}"
        conditions = [
            _condition(CONDITION_SERVICES_FOUND, False, "NoServicesFound", msg, generation),
            _condition(CONDITION_ENDPOINTS_READY, False, "NoEndpoints", msg, generation),
        ]
        return {
            "readyEndpoints": 0,
            "totalEndpoints": 0,
            "conditions": with_transition_times(conditions, previous, now),
        }
    endpoints = endpoint_infos(found, outcomes) if outcomes is not None else []
    total = len(endpoints)
    ready = sum(1 for e in endpoints if e["ready"])
    covered = sum(1 for e in endpoints if e.get("loraFallbackCovered"))
    if services:
        services_found = _condition(
            CONDITION_SERVICES_FOUND, True, "ServicesFound", f"Found {len(services)} service(s)", generation
        )
    else:
        services_found = _condition(
            CONDITION_SERVICES_FOUND,
            False,
            "NoServicesFound",
            "No services associated with endpoint slices",
            generation,
        )
    if total == 0:
        ready_condition = _condition(
            CONDITION_ENDPOINTS_READY, False, "NoEndpoints", "No endpoints found", generation
        )
    elif not is_lora(model):
        ready_condition = _condition(
            CONDITION_ENDPOINTS_READY,
            True,
            "EndpointsDiscovered",
            f"Found {total} endpoint(s) for base model",
            generation,
        )
    elif ready + covered == total:
        ready_condition = _condition(
            CONDITION_ENDPOINTS_READY,
            True,
            "AllEndpointsReady",
            f"All {total} endpoint(s) are ready or covered by a capable prefill",
            generation,
        )
    else:
        message = (
            f"Found {ready} ready endpoint(s) and {covered} fallback-covered endpoint(s) out of {total} total"
        )
        errors = [
            f"{c.pod or c.address}: {o.error}"
            for c, o, e in zip(found, outcomes or [], endpoints, strict=False)
            if o.error and not e["ready"] and not e.get("loraFallbackCovered")
        ]
        if errors:
            message += "; " + "; ".join(errors)
        ready_condition = _condition(CONDITION_ENDPOINTS_READY, False, "NotReady", message, generation)
    status: Manifest = {}
    if endpoints:
        status["endpoints"] = endpoints
    status["readyEndpoints"] = ready
    if covered:
        status["loraFallbackCoveredEndpoints"] = covered
    status["totalEndpoints"] = total
    status["conditions"] = with_transition_times([services_found, ready_condition], previous, now)
    return status


def needs_retry(model: Manifest, outcomes: Sequence[Outcome] | None, status: Manifest) -> bool:
    """Whether the operator would reconcile again after its requeue delay: a LoRA model with an endpoint
    not serving it (or nothing tried)."""
    if not is_lora(model):
        return False
    if outcomes is None:
        return True
    endpoints = status.get("endpoints") or []
    return any(not (e["ready"] or e.get("loraFallbackCovered")) for e in endpoints)


def models_of(models: Sequence[Manifest], base_hash: str) -> list[Manifest]:
    """The DynamoModels whose base model has this base-model-hash label value."""
    return [m for m in models if model_hash(str((m.get("spec") or {}).get("baseModelName", ""))) == base_hash]
