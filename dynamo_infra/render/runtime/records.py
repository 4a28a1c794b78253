"""The graph's records in the cluster: its DynamoGraphDeployment and one DynamoGraphDeploymentScalingAdapter
per adapted component, in the hub version, with the status the operator would write (pure).

Dynamo's planner reads these: the DGD's `Ready` condition and `status.components[name]` replica
counts, the DGDSA's scale subresource (`spec.replicas`, `status.replicas`, `status.selector`); a 1.6
planner also the GPU shape, served model, runtime component and power limit of each component
(`render.runtime.planner_status`), only while `status.observedGeneration` is the record's generation.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping

from dynamo_infra.api import v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import names
from dynamo_infra.render.runtime.status import ComponentStatus, dgd_status, replica_status

DGD_KIND = "DynamoGraphDeployment"
DGDSA_KIND = "DynamoGraphDeploymentScalingAdapter"
# Records are written (and read) in the hub version: the only one the platform's CRDs serve.
RECORD_API_VERSION = v1beta1.API_VERSION
# The environment variable holding a component's Dynamo namespace (reported as `runtimeNamespace`).
RUNTIME_NAMESPACE_ENV = "DYN_NAMESPACE"
# The worker hash a worker's runtime appends to that namespace (`<namespace>-<suffix>`).
WORKER_SUFFIX_ENV = "DYN_NAMESPACE_WORKER_SUFFIX"
# A component's entry in the records' `components`: its planner status fields (render.runtime.planner_status).
PLANNER_STATUS_KEY = "plannerStatus"
# DGD record annotation the dynamo-infra agent reads: per component what it watches, the object whose
# scale subresource carries its replicas (`scaleTarget`) and who owns them (`replicas`).
COMPONENTS_ANNOTATION = "dynamo-infra.io/components"


def components_annotation(components: Mapping[str, Manifest]) -> str:
    """The COMPONENTS_ANNOTATION value: the records' `components` input as compact JSON, keys sorted;
    integral numbers as integers, however they arrive (Pulumi carries every number as a float)."""
    return json.dumps(_integral(components), sort_keys=True, separators=(",", ":"))


def _integral(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def graph_record(
    hub: Manifest,
    namespace: str,
    annotations: Mapping[str, str],
    adapter_replicas: Mapping[str, int],
    kept_replicas: Mapping[str, int] | None = None,
) -> Manifest:
    """The DGD as its users would see it: the graph as written (converted to the hub), in `namespace`,
    with the annotations the operator would store (`RenderedGraph.annotations`: its current worker hash).

    An adapted component's replicas are its adapter's (`adapter_replicas`, by component), as the
    operator's adapter controller writes them back: the adapter is their source of truth. Otherwise
    `kept_replicas` (by component) wins over the graph's: the live record's, changed at run time.
    """
    meta = hub.get("metadata") or {}
    metadata: Manifest = {
        k: copy.deepcopy(meta[k]) for k in ("name", "labels", "annotations") if meta.get(k) is not None
    }
    metadata["namespace"] = namespace
    if annotations:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    spec: Manifest = copy.deepcopy(hub.get("spec") or {})
    kept = kept_replicas or {}
    for component in spec.get("components") or []:
        name = component.get("name", "")
        replicas = adapter_replicas.get(name)
        if replicas is not None and component.get("scalingAdapter") is not None:
            component["replicas"] = replicas
        elif name in kept:
            component["replicas"] = kept[name]
    return {"apiVersion": RECORD_API_VERSION, "kind": DGD_KIND, "metadata": metadata, "spec": spec}


def adapter_record(adapter: Manifest) -> Manifest:
    """A rendered DGDSA (stored version, `dgdRef.serviceName`) in the hub version (`dgdRef.componentName`)."""
    spec = adapter["spec"]
    ref = spec["dgdRef"]
    return {
        "apiVersion": RECORD_API_VERSION,
        "kind": DGDSA_KIND,
        "metadata": copy.deepcopy(adapter["metadata"]),
        "spec": {
            "replicas": spec["replicas"],
            "dgdRef": {"name": ref["name"], "componentName": ref.get("componentName") or ref["serviceName"]},
        },
    }


def pod_selector(graph: str, component: str) -> str:
    """The adapter's `status.selector`: the component's pods, as a label selector string (keys sorted)."""
    labels = {names.LABEL_GRAPH: graph, names.LABEL_COMPONENT: component}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def adapter_status(adapter: Manifest) -> Manifest:
    """What the operator's adapter controller writes: the replicas asked for and the pods' selector."""
    ref = adapter["spec"]["dgdRef"]
    return {
        "replicas": int(adapter["spec"]["replicas"]),
        "selector": pod_selector(ref["name"], ref.get("componentName") or ref.get("serviceName", "")),
    }


def runtime_namespace(objects: tuple[Manifest, ...] | list[Manifest]) -> str | None:
    """The Dynamo namespace a component's pods run in: their DYN_NAMESPACE, with a worker's hash suffix
    (DYN_NAMESPACE_WORKER_SUFFIX) appended as its runtime does (the operator's ComponentRuntimeNamespace);
    None when no pod template of these objects sets it (Grove: the PodCliqueSet holds the pods)."""
    for obj in objects:
        spec = obj.get("spec") or {}
        templates = [spec.get("template")]
        lws = spec.get("leaderWorkerTemplate") or {}
        templates += [lws.get("leaderTemplate"), lws.get("workerTemplate")]
        for template in templates:
            for c in ((template or {}).get("spec") or {}).get("containers") or []:
                env = {e.get("name"): e.get("value") for e in c.get("env") or []}
                if env.get(RUNTIME_NAMESPACE_ENV):
                    suffix = env.get(WORKER_SUFFIX_ENV)
                    base = str(env[RUNTIME_NAMESPACE_ENV])
                    return f"{base}-{suffix}" if suffix else base
    return None


def with_transition_times(conditions: list[Manifest], previous: list[Manifest], now: str) -> list[Manifest]:
    """Conditions with `lastTransitionTime`: kept from `previous` while a condition's status is the same,
    else `now` (as the operator's SetStatusCondition does)."""
    before = {c.get("type"): c for c in previous}
    out = []
    for c in conditions:
        was = before.get(c["type"]) or {}
        kept = was.get("status") == c["status"] and was.get("lastTransitionTime")
        out.append({**c, "lastTransitionTime": kept or now})
    return out


def graph_record_status(
    components: Mapping[str, ComponentStatus],
    workloads: Mapping[str, Manifest | None],
    runtime_namespaces: Mapping[str, str] | None = None,
    generation: int | None = None,
    previous: Manifest | None = None,
    now: str = "",
    planner: Mapping[str, Manifest] | None = None,
) -> Manifest:
    """The DGD status: `state`, the `Ready` condition, `status.components` from each component's live
    workload (`workloads`; None: not created yet) with its Dynamo namespace and its planner fields
    (`planner`, by component: `render.runtime.planner_status`), and the generation it describes. With `now`
    (RFC 3339), conditions carry their transition time (`previous`: the status as it is, whose times are
    kept while a condition does not change)."""
    spaces = runtime_namespaces or {}
    fields = planner or {}
    replicas = {
        name: {**replica_status(w, spaces.get(name)), **fields.get(name, {})}
        for name, w in workloads.items()
        if w is not None
    }
    out = dgd_status(dict(components), replicas)
    if now:
        out["conditions"] = with_transition_times(
            out["conditions"], list((previous or {}).get("conditions") or []), now
        )
    if generation is not None:
        out["observedGeneration"] = generation
    return out
