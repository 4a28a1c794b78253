"""The field table of v1alpha1 ⇄ v1beta1 conversion, by the operator's native mapping: one rule per
field, read one way to convert to the hub and the other way back.

`services` map ⇄ `components` list, component type and subtype ⇄ `type`, ten flat pod fields ⇄
`podTemplate`, `gpuMemoryService`/`failover`/`checkpoint` ⇄ `experimental.*`, `serviceName` ⇄
`componentName`, ... What a table cannot map travels in the preservation annotations.
"""

from __future__ import annotations

from typing import Any

from dynamo_infra.api import v1alpha1
from dynamo_infra.api.conversion.podtemplate import pod_template_from_hub, pod_template_to_hub
from dynamo_infra.api.conversion.table import ABSENT, Codec, Custom, Field, Table, from_hub, same, to_hub
from dynamo_infra.api.manifest import Manifest, copy_json

# v1alpha1 shared memory `disabled: true` is v1beta1 `sharedMemorySize: "0"`.
SHM_DISABLED = "0"
# Component types v1beta1 has (v1alpha1 types outside it have no hub `type`).
_HUB_TYPES = frozenset({"frontend", "worker", "prefill", "decode", "planner", "epp"})
# v1alpha1 worker subtypes that are v1beta1 types of their own.
_WORKER_SUBTYPES = frozenset({"prefill", "decode"})
# DGD topology constraint: v1alpha1 key -> v1beta1 key (other keys are not mapped).
_TOPOLOGY_KEYS = {"topologyProfile": "clusterTopologyName", "packDomain": "packDomain"}


def _drop_none(d: Manifest) -> Manifest:
    return {k: v for k, v in d.items() if v is not None}


def _not_none(value: Any) -> Any:
    return ABSENT if value is None else value


def _rename(d: Manifest, old: str, new: str) -> Manifest:
    return {(new if k == old else k): v for k, v in d.items()}


def _type_to_hub(s: Manifest, out: Manifest) -> None:
    ctype, sub = s.get("componentType"), s.get("subComponentType")
    if ctype == "worker" and sub in _WORKER_SUBTYPES:
        out["type"] = sub
    elif ctype in _HUB_TYPES:
        out["type"] = ctype


def _type_from_hub(c: Manifest, out: Manifest) -> None:
    t = c.get("type")
    if t in _WORKER_SUBTYPES:
        out["componentType"], out["subComponentType"] = "worker", t
    elif t is not None:
        out["componentType"] = t


def _shm_to_hub(shm: Any) -> Any:
    if shm is None:
        return ABSENT
    if shm.get("disabled"):
        return SHM_DISABLED
    return ABSENT if shm.get("size") is None else shm["size"]


def _shm_from_hub(size: Any) -> Manifest:
    return {"disabled": True} if v1alpha1.quantity_sign(size) == 0 else {"size": size}


def _cache_to_hub(mounts: Any) -> Any:
    """The compilation-cache volume mount -> `compilationCache` (the other mounts go to the pod template)."""
    cache = next((m for m in mounts or [] if m.get("useAsCompilationCache")), None)
    if cache is None:
        return ABSENT
    return {
        "pvcName": cache["name"],
        **({"mountPath": cache["mountPoint"]} if cache.get("mountPoint") else {}),
    }


def _cache_from_hub(cache: Any) -> Any:
    if cache is None:
        return ABSENT
    mount: Manifest = {"name": cache["pvcName"], "useAsCompilationCache": True}
    if cache.get("mountPath"):
        mount["mountPoint"] = cache["mountPath"]
    return [mount]


def _switch_to_hub(feature: Any) -> Any:
    """An `enabled` feature (GPU memory service, failover) -> its hub block; mode `intraPod` -> `IntraPod`."""
    if not feature or not feature.get("enabled"):
        return ABSENT
    mode = feature.get("mode")
    return _drop_none(
        {
            **{k: v for k, v in feature.items() if k not in ("enabled", "mode")},
            "mode": None if mode is None else mode[:1].upper() + mode[1:],
        }
    )


def _switch_from_hub(feature: Any) -> Manifest:
    mode = feature.get("mode")
    return _drop_none(
        {
            "enabled": True,
            **{k: v for k, v in feature.items() if k != "mode"},
            "mode": None if mode is None else mode[:1].lower() + mode[1:],
        }
    )


def _keys(mapping: dict[str, str]) -> Codec:
    """A codec keeping the keys of `mapping`, renamed, with their non-null values."""
    return lambda d: ABSENT if d is None else _drop_none({new: d.get(old) for old, new in mapping.items()})


# The shared spec of a component (v1alpha1 service / DCD spec ⇄ v1beta1 component).
COMPONENT = Table(
    (
        Custom(_type_to_hub, _type_from_hub),
        *same("replicas", "minAvailable", "globalDynamoNamespace", "runtimeVersionOverride"),
        *same("multinode", "modelRef", "topologyConstraint", "eppConfig"),
        # Same shape in both versions (1.6-era `api/v1alpha1/shared_spec_conversion.go@86e34d1e`).
        *same("roles", "providerOverride"),
        Field("sharedMemory", "sharedMemorySize", _shm_to_hub, _shm_from_hub),
        # Before the pod template: its mounts follow the compilation-cache mount.
        Field("volumeMounts", "compilationCache", _cache_to_hub, _cache_from_hub),
        Field(
            "scalingAdapter",
            "scalingAdapter",
            lambda a: {} if (a or {}).get("enabled") else ABSENT,
            lambda a: {"enabled": True},
        ),
        Field("gpuMemoryService", "experimental.gpuMemoryService", _switch_to_hub, _switch_from_hub),
        Field("failover", "experimental.failover", _switch_to_hub, _switch_from_hub),
        Field(
            "checkpoint",
            "experimental.checkpoint",
            lambda c: ABSENT if c is None else {"enabled": False, **copy_json(c)},
        ),
        Custom(pod_template_to_hub, pod_template_from_hub),
    )
)


def component_to_hub(s: Manifest, name: str) -> Manifest:
    """A v1alpha1 service named `name` -> a v1beta1 component."""
    return {"name": name, **to_hub(COMPONENT, s)}


DGD_SPEC = Table(
    (
        Field(
            "services",
            "components",
            lambda m: ABSENT if m is None else [component_to_hub(m[n] or {}, n) for n in sorted(m)],
            lambda cs: ABSENT if cs is None else {c["name"]: from_hub(COMPONENT, c) for c in cs},
        ),
        Field("envs", "env"),
        *same("backendFramework", "annotations", "labels", "priorityClassName", "restart", "experimental"),
        *same("providerOverride"),
        Field(
            "topologyConstraint",
            "topologyConstraint",
            _keys(_TOPOLOGY_KEYS),
            _keys({new: old for old, new in _TOPOLOGY_KEYS.items()}),
        ),
    )
)


def _replica_status_to_hub(r: Manifest) -> Manifest:
    out = {k: copy_json(v) for k, v in r.items() if k != "componentName"}
    if not out.get("componentNames") and r.get("componentName"):
        out["componentNames"] = [r["componentName"]]
    return out


def _replica_status_from_hub(r: Manifest) -> Manifest:
    out: Manifest = copy_json(r)
    names = r.get("componentNames") or []
    out["componentName"] = names[-1] if names else ""
    return out


DGD_STATUS = Table(
    (
        Field(
            "services",
            "components",
            lambda m: {n: _replica_status_to_hub(r) for n, r in m.items()},
            lambda m: {n: _replica_status_from_hub(r) for n, r in m.items()},
        ),
        Field(
            "rollingUpdate",
            "rollingUpdate",
            lambda u: _rename(copy_json(u), "updatedServices", "updatedComponents"),
            lambda u: _rename(copy_json(u), "updatedComponents", "updatedServices"),
        ),
    ),
    keep_rest=True,
)

DCD_SPEC = Table(
    (
        Field("serviceName", "name", _not_none, _not_none),
        *COMPONENT.rules,
        *same("backendFramework"),
    )
)

DCD_STATUS = Table(
    (
        Field("service", "component", _replica_status_to_hub, _replica_status_from_hub),
        Field("podSelector", None),
        Field("conditions", "conditions", alpha_default=[]),
    ),
    keep_rest=True,
)


def _dgd_ref(old: str, new: str) -> Codec:
    return lambda ref: _rename(copy_json(ref), old, new) if isinstance(ref, dict) else copy_json(ref)


# DGDSA: `dgdRef.serviceName` ⇄ `dgdRef.componentName`; the hub status always has `replicas`.
DGDSA_SPEC = Table(
    (
        Field(
            "dgdRef",
            "dgdRef",
            _dgd_ref("serviceName", "componentName"),
            _dgd_ref("componentName", "serviceName"),
        ),
    ),
    keep_rest=True,
)
DGDSA_STATUS = Table((Field("replicas", "replicas", hub_default=0),), keep_rest=True)


def _truthy(value: Any) -> Any:
    return value if value else ABSENT


# DGDR: the v1alpha1 profiling request maps onto the v1beta1 fields it shares; the rest (and the
# whole status) travels in the preservation annotations.
DGDR_SPEC = Table(
    (
        Field("model", "model", alpha_default="", hub_default=""),
        Field("backend", "backend", alpha_default="auto"),
        Field("profilingConfig", None, alpha_default={"profilerImage": ""}),
        *same("autoApply", "runtimeVersionOverride"),
        Field("deploymentOverrides.workersImage", "image", _truthy, _truthy),
        Field("useMocker", "features.mocker.enabled", from_hub=_not_none),
    )
)
DGDR_STATUS = Table(())
