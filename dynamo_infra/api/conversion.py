"""v1alpha1 ⇄ v1beta1 conversion (v1beta1 is the hub) of DGD, DCD, DGDSA and DGDR, by the operator's rules.

Each direction maps every field the other version can represent (the operator's native mapping:
`services` map ⇄ `components` list, ten flat pod fields ⇄ `podTemplate`, `experimental.*`, ...).
What the target cannot represent is kept, as in the operator, in one private spec annotation and
one status annotation per kind (`nvidia.com/dgd-spec`, `nvidia.com/dgd-status`, `nvidia.com/dcd-*`,
`nvidia.com/dgdr-*`): a sparse JSON copy, in the source version's wire shape, of each field whose
native round trip differs (`null` marks a field the source did not have).

Restoring follows the operator's invariants: live fields are the source of truth; preserved data is
applied only where it is consistent with them (the restored object converts back to exactly the
live object, checked per component, matched by name), so a stale annotation never overrides an edit.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any, TypeVar

from dynamo_infra.api import v1alpha1, v1beta1
from dynamo_infra.api.base import Resource
from dynamo_infra.api.common import MAIN_CONTAINER
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.api.merge import merge_override

R = TypeVar("R", bound=Resource)

# Default Kubernetes GPU resource name for Dynamo's `gpu` shorthand.
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
# Container name the operator gives a v1alpha1 `frontendSidecar`.
FRONTEND_SIDECAR_CONTAINER = "sidecar-frontend"
# v1alpha1 shared memory `disabled: true` is v1beta1 `sharedMemorySize: "0"`.
SHM_DISABLED = "0"
ANN_DGD_SPEC = "nvidia.com/dgd-spec"
ANN_DGD_STATUS = "nvidia.com/dgd-status"
ANN_DCD_SPEC = "nvidia.com/dcd-spec"
ANN_DCD_STATUS = "nvidia.com/dcd-status"
ANN_DGDR_SPEC = "nvidia.com/dgdr-spec"
ANN_DGDR_STATUS = "nvidia.com/dgdr-status"
_HUB_TYPES = frozenset({"frontend", "worker", "prefill", "decode", "planner", "epp"})
_WORKER_SUBTYPES = frozenset({"prefill", "decode"})


# --------------------------------------------------------------------------------------------
# Sparse preservation: diff, overlay, consistency-checked restore
# --------------------------------------------------------------------------------------------

# How a spec keeps its named entries: "map" (v1alpha1 services) or "list" (v1beta1 components).
Keyed = dict[str, str]


def sparse_diff(orig: Manifest, back: Manifest, keyed: Keyed | None = None) -> Manifest:
    """Fields of `orig` whose native round trip (`back`) differs; `None` marks a field `orig` lacked."""
    keyed = keyed or {}
    out: Manifest = {}
    for key in sorted(set(orig) | set(back)):
        a, b = orig.get(key), back.get(key)
        if a == b:
            continue
        if key in keyed and isinstance(a, dict | list) and isinstance(b, dict | list):
            entries = _entries_diff(a, b, keyed[key])
            if entries:
                out[key] = entries
            continue
        out[key] = copy.deepcopy(a)
    return out


def _entries_diff(a: Any, b: Any, shape: str) -> Any:
    if shape == "map":
        out_map: Manifest = {}
        for name in sorted(set(a) | set(b)):
            d = sparse_diff(a.get(name) or {}, b.get(name) or {}) if name in a and name in b else a.get(name)
            if d or name not in b:
                out_map[name] = d
        return out_map
    by_name = {e.get("name"): e for e in b if isinstance(e, dict)}
    names = [str(e.get("name")) for e in a if isinstance(e, dict)]
    ordered = names != sorted(names)
    out_list: list[Manifest] = []
    for entry in a:
        other = by_name.get(entry.get("name"))
        d = sparse_diff(entry, other) if other is not None else copy.deepcopy(entry)
        d.pop("name", None)
        if d or ordered:
            out_list.append({"name": entry.get("name"), **d})
    return out_list


def overlay(base: Manifest, saved: Manifest, keyed: Keyed | None = None) -> Manifest:
    """`base` with the preserved fields of `saved` applied."""
    keyed = keyed or {}
    out = copy.deepcopy(base)
    for key, value in saved.items():
        if value is None:
            out.pop(key, None)
        elif key in keyed and keyed[key] == "map" and isinstance(value, dict):
            entries = dict(out.get(key) or {})
            for name, d in value.items():
                if name in entries and isinstance(d, dict):
                    entries[name] = overlay(entries[name], d)
            out[key] = entries
        elif key in keyed and keyed[key] == "list" and isinstance(value, list):
            out[key] = _overlay_list(out.get(key) or [], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _overlay_list(live: list[Manifest], saved: list[Manifest]) -> list[Manifest]:
    by_name = {e.get("name"): e for e in live}
    restored = {s.get("name"): overlay(by_name[s["name"]], s) for s in saved if s.get("name") in by_name}
    order = [s.get("name") for s in saved if s.get("name") in by_name]
    if len(order) == len(live):  # the saved entries record the full original order
        return [restored.get(n) or by_name[n] for n in order]
    return [restored.get(e.get("name")) or e for e in live]


def restore(
    native: Manifest,
    saved: Manifest | None,
    live: Manifest,
    back: Callable[[Manifest], Manifest],
    keyed: Keyed | None = None,
) -> Manifest:
    """`native` with `saved` applied where the result still converts `back` to `live`.

    Tried for the whole spec, then per named entry (a stale entry is skipped), then natively.
    """
    if not saved:
        return native
    candidate = overlay(native, saved, keyed)
    if back(candidate) == live:
        return candidate
    keyed = keyed or {}
    out = native
    for key, value in saved.items():
        trial = overlay(out, {key: value}, keyed)
        if key in keyed and isinstance(value, dict | list):
            entries = value.items() if isinstance(value, dict) else [(e.get("name"), e) for e in value]
            for name, entry in entries:
                one = {name: entry} if isinstance(value, dict) else [entry]
                trial = overlay(out, {key: one}, keyed)
                if _entry_consistent(back(trial), live, key, name):
                    out = trial
        elif back(trial) == live:
            out = trial
    return out


def _entry_consistent(converted: Manifest, live: Manifest, key: str, name: Any) -> bool:
    def pick(d: Manifest) -> Any:
        coll = d.get(_other_key(key)) if _other_key(key) in d else d.get(key)
        if isinstance(coll, dict):
            return coll.get(name)
        return next((e for e in coll or [] if isinstance(e, dict) and e.get("name") == name), None)

    rest_a = {k: v for k, v in converted.items() if k not in (key, _other_key(key))}
    rest_b = {k: v for k, v in live.items() if k not in (key, _other_key(key))}
    return pick(converted) == pick(live) and rest_a == rest_b


def _other_key(key: str) -> str:
    return {"services": "components", "components": "services"}.get(key, key)


def _load_saved(annotations: dict[str, str], key: str) -> Manifest | None:
    raw = annotations.get(key)
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None  # a corrupt payload is ignored, as the operator does
    return value if isinstance(value, dict) else None


def _annotations(obj: Resource, drop: tuple[str, ...], add: dict[str, Manifest]) -> dict[str, str]:
    out = {k: v for k, v in (obj.metadata.annotations or {}).items() if k not in drop}
    for key, payload in add.items():
        if key and payload:
            out[key] = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    return out


def _convert(
    src: Resource,
    dst_model: type[R],
    spec_fn: Callable[[Manifest], Manifest],
    back_spec_fn: Callable[[Manifest], Manifest],
    status_fn: Callable[[Manifest], Manifest],
    back_status_fn: Callable[[Manifest], Manifest],
    ann: tuple[str, str],
    keyed_src: Keyed,
    keyed_dst: Keyed,
) -> R:
    """Shared driver: native mapping, restore of `dst`-only fields, save of `src`-only fields."""
    annotations = src.metadata.annotations or {}
    wire = src.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    spec_src: Manifest = wire.get("spec") or {}
    spec = restore(spec_fn(spec_src), _load_saved(annotations, ann[0]), spec_src, back_spec_fn, keyed_dst)
    spec_save = sparse_diff(spec_src, back_spec_fn(spec), keyed_src)
    out: Manifest = {"apiVersion": dst_model.API_VERSION, "kind": dst_model.KIND, "spec": spec}
    status_save: Manifest = {}
    if "status" in wire:
        status_src: Manifest = wire["status"]
        status = restore(status_fn(status_src), _load_saved(annotations, ann[1]), status_src, back_status_fn)
        status_save = sparse_diff(status_src, back_status_fn(status))
        out["status"] = status
    meta = src.metadata.to_wire()
    meta.pop("annotations", None)
    new_annotations = _annotations(src, ann, {ann[0]: spec_save, ann[1]: status_save})
    if new_annotations:
        meta["annotations"] = new_annotations
    out["metadata"] = meta
    # Kubernetes sub-objects were checked when `src` was loaded; conversion only moves them.
    return dst_model.parse(out, kube_schema=False)


# --------------------------------------------------------------------------------------------
# Component (shared spec): v1alpha1 flat fields ⇄ v1beta1 podTemplate and experimental block
# --------------------------------------------------------------------------------------------


def resources_to_kube(res: Manifest | None) -> Manifest:
    """Dynamo `resources` shorthand -> Kubernetes ResourceRequirements."""
    out: Manifest = {}
    for key in ("requests", "limits"):
        item = (res or {}).get(key)
        if not item:
            continue
        values: dict[str, Any] = {}
        if item.get("cpu"):
            values["cpu"] = item["cpu"]
        if item.get("memory"):
            values["memory"] = item["memory"]
        if item.get("gpu"):
            values[item.get("gpuType") or DEFAULT_GPU_RESOURCE] = item["gpu"]
        values.update(item.get("custom") or {})
        if values:
            out[key] = values
    if (res or {}).get("claims"):
        out["claims"] = copy.deepcopy(res["claims"])  # type: ignore[index]
    return out


def resources_from_kube(res: Manifest) -> Manifest | None:
    """Kubernetes ResourceRequirements -> Dynamo `resources` shorthand (None when empty)."""
    out: Manifest = {}
    for key in ("requests", "limits"):
        values = res.get(key) or {}
        if not values:
            continue
        item: Manifest = {}
        for name, q in values.items():
            text = str(q)
            if name == "cpu":
                item["cpu"] = text
            elif name == "memory":
                item["memory"] = text
            elif name == DEFAULT_GPU_RESOURCE:
                item["gpu"] = text
            else:
                item.setdefault("custom", {})[name] = text
        out[key] = item
    if res.get("claims"):
        out["claims"] = copy.deepcopy(res["claims"])
    return out or None


def merge_env_ordered(base: list[Manifest] | None, override: list[Manifest] | None) -> list[Manifest]:
    """The conversion's env merge: base order kept, same-name entries replaced, new ones appended."""
    out = [copy.deepcopy(e) for e in base or []]
    index = {e.get("name"): i for i, e in enumerate(out)}
    for e in override or []:
        if e.get("name") in index:
            out[index[e.get("name")]] = copy.deepcopy(e)
        else:
            index[e.get("name")] = len(out)
            out.append(copy.deepcopy(e))
    return out


def _mode_to_hub(mode: str | None) -> str | None:
    return None if mode is None else mode[:1].upper() + mode[1:]


def _mode_from_hub(mode: str | None) -> str | None:
    return None if mode is None else mode[:1].lower() + mode[1:]


def _main_container(s: Manifest) -> Manifest:
    main: Manifest = {"name": MAIN_CONTAINER}
    resources = resources_to_kube(s.get("resources"))
    if resources:
        main["resources"] = resources
    if s.get("envs"):
        main["env"] = copy.deepcopy(s["envs"])
    if s.get("envFromSecret"):
        main["envFrom"] = [{"secretRef": {"name": s["envFromSecret"]}}]
    for probe in ("livenessProbe", "readinessProbe"):
        if s.get(probe) is not None:
            main[probe] = copy.deepcopy(s[probe])
    # The compilation-cache mount is carried by `compilationCache` (the renderer mounts it), so hub
    # objects written by hand, which never list it, convert without a preserved pod template.
    mounts = [
        {"name": m["name"], "mountPath": m.get("mountPoint", "")}
        for m in s.get("volumeMounts") or []
        if not m.get("useAsCompilationCache")
    ]
    if mounts:
        main["volumeMounts"] = mounts
    user = (s.get("extraPodSpec") or {}).get("mainContainer")
    if user:
        user = {k: v for k, v in user.items() if k != "name"}
        env = merge_env_ordered(main.get("env"), user.get("env"))
        dedicated_mounts = main.get("volumeMounts") or []
        main = merge_override(main, copy.deepcopy(user))
        if env:
            main["env"] = env
        mounts = [*(user.get("volumeMounts") or []), *dedicated_mounts]
        if mounts:
            main["volumeMounts"] = copy.deepcopy(mounts)
    return main


def _has_pod_content(s: Manifest) -> bool:
    eps = s.get("extraPodSpec") or {}
    return bool(
        s.get("resources")
        or s.get("envs")
        or s.get("envFromSecret")
        or any(not m.get("useAsCompilationCache") for m in s.get("volumeMounts") or [])
        # a compilation-cache mount alone is carried by `compilationCache`, not the pod template
        or s.get("livenessProbe") is not None
        or s.get("readinessProbe") is not None
        or any(v not in (None, {}, []) for v in eps.values())
        or s.get("extraPodMetadata") is not None
        or s.get("frontendSidecar") is not None
    )


def _pod_template_to_hub(s: Manifest) -> Manifest | None:
    if not _has_pod_content(s):
        return None
    pod_spec = {k: copy.deepcopy(v) for k, v in (s.get("extraPodSpec") or {}).items() if k != "mainContainer"}
    others = [c for c in pod_spec.get("containers") or [] if c.get("name") != MAIN_CONTAINER]
    containers = [_main_container(s), *others]
    sidecar = s.get("frontendSidecar")
    if sidecar is not None and not any(c.get("name") == FRONTEND_SIDECAR_CONTAINER for c in containers):
        c: Manifest = {"name": FRONTEND_SIDECAR_CONTAINER, "image": sidecar.get("image", "")}
        if sidecar.get("args"):
            c["args"] = list(sidecar["args"])
        if sidecar.get("envs"):
            c["env"] = copy.deepcopy(sidecar["envs"])
        if sidecar.get("envFromSecret"):
            c["envFrom"] = [{"secretRef": {"name": sidecar["envFromSecret"]}}]
        containers.append(c)
    pod_spec["containers"] = containers
    template: Manifest = {}
    meta = {k: dict(v) for k, v in (s.get("extraPodMetadata") or {}).items() if v}
    if meta:
        template["metadata"] = meta
    template["spec"] = pod_spec
    return template


def component_to_hub(s: Manifest, name: str | None = None) -> Manifest:
    """A v1alpha1 shared spec (wire dict) -> v1beta1 component fields (native mapping only)."""
    out: Manifest = {}
    if name is not None:
        out["name"] = name
    ctype, sub = s.get("componentType"), s.get("subComponentType")
    if ctype == "worker" and sub in _WORKER_SUBTYPES:
        out["type"] = sub
    elif ctype in _HUB_TYPES:
        out["type"] = ctype
    for key in ("replicas", "minAvailable", "globalDynamoNamespace", "runtimeVersionOverride"):
        if key in s:
            out[key] = s[key]
    for key in ("multinode", "modelRef", "topologyConstraint", "eppConfig"):
        if key in s:
            out[key] = copy.deepcopy(s[key])
    shm = s.get("sharedMemory")
    if shm is not None:
        if shm.get("disabled"):
            out["sharedMemorySize"] = SHM_DISABLED
        elif shm.get("size") is not None:
            out["sharedMemorySize"] = shm["size"]
    cache = next((m for m in s.get("volumeMounts") or [] if m.get("useAsCompilationCache")), None)
    if cache is not None:
        out["compilationCache"] = {
            "pvcName": cache["name"],
            **({"mountPath": cache["mountPoint"]} if cache.get("mountPoint") else {}),
        }
    if (s.get("scalingAdapter") or {}).get("enabled"):
        out["scalingAdapter"] = {}
    experimental: Manifest = {}
    gms = s.get("gpuMemoryService")
    if gms and gms.get("enabled"):
        experimental["gpuMemoryService"] = _drop_none(
            {
                **{k: v for k, v in gms.items() if k not in ("enabled", "mode")},
                "mode": _mode_to_hub(gms.get("mode")),
            }
        )
    failover = s.get("failover")
    if failover and failover.get("enabled"):
        experimental["failover"] = _drop_none(
            {
                **{k: v for k, v in failover.items() if k not in ("enabled", "mode")},
                "mode": _mode_to_hub(failover.get("mode")),
            }
        )
    if s.get("checkpoint") is not None:
        experimental["checkpoint"] = {"enabled": False, **copy.deepcopy(s["checkpoint"])}
    if experimental:
        out["experimental"] = experimental
    template = _pod_template_to_hub(s)
    if template is not None:
        out["podTemplate"] = template
        if s.get("frontendSidecar") is not None:
            out["frontendSidecar"] = FRONTEND_SIDECAR_CONTAINER
    return out


def _drop_none(d: Manifest) -> Manifest:
    return {k: v for k, v in d.items() if v is not None}


def _decompose_pod_template(c: Manifest, out: Manifest) -> None:
    template = copy.deepcopy(c.get("podTemplate") or {})
    meta = template.get("metadata") or {}
    extra_meta = {k: meta[k] for k in ("annotations", "labels") if meta.get(k)}
    if extra_meta:
        out["extraPodMetadata"] = extra_meta
    spec = template.get("spec") or {}
    containers = spec.get("containers") or []
    main = next((x for x in containers if x.get("name") == MAIN_CONTAINER), None)
    others = [x for x in containers if x is not main]
    sidecar_name = c.get("frontendSidecar")
    if sidecar_name == FRONTEND_SIDECAR_CONTAINER:
        sidecar = next((x for x in others if x.get("name") == sidecar_name), None)
        if sidecar is not None and sidecar.get("image"):
            fs: Manifest = {"image": sidecar["image"]}
            if sidecar.get("args"):
                fs["args"] = sidecar["args"]
            if sidecar.get("env"):
                fs["envs"] = sidecar["env"]
            secret = _single_secret(sidecar.get("envFrom"))
            if secret:
                fs["envFromSecret"] = secret
            out["frontendSidecar"] = fs
            others = [x for x in others if x is not sidecar]
    if main is not None:
        main = dict(main)
        main.pop("name", None)
        resources = resources_from_kube(main.pop("resources", None) or {})
        if resources:
            out["resources"] = resources
        if main.get("env"):
            out["envs"] = main.pop("env")
        secret = _single_secret(main.get("envFrom"))
        if secret:
            out["envFromSecret"] = secret
            main.pop("envFrom")
        for probe in ("livenessProbe", "readinessProbe"):
            if main.get(probe) is not None:
                out[probe] = main.pop(probe)
        mounts = main.pop("volumeMounts", None) or []
        flat = list(out.get("volumeMounts") or [])
        for m in mounts:
            if not any(
                f["name"] == m.get("name") and f.get("mountPoint", "") == m.get("mountPath") for f in flat
            ):
                flat.append({"name": m.get("name"), "mountPoint": m.get("mountPath")})
        if flat:
            out["volumeMounts"] = flat
        main = {k: v for k, v in main.items() if v not in (None, [], {})}
    pod_spec = {k: v for k, v in spec.items() if k != "containers"}
    if others:
        pod_spec["containers"] = others
    if main:
        pod_spec["mainContainer"] = main
    if pod_spec:
        out["extraPodSpec"] = pod_spec


def _single_secret(env_from: Any) -> str | None:
    if isinstance(env_from, list) and len(env_from) == 1 and set(env_from[0]) == {"secretRef"}:
        ref = env_from[0]["secretRef"]
        if isinstance(ref, dict) and set(ref) == {"name"}:
            return str(ref["name"])
    return None


def component_from_hub(c: Manifest, *, service_name: bool = False) -> Manifest:
    """v1beta1 component fields (wire dict) -> a v1alpha1 shared spec (native mapping only)."""
    out: Manifest = {}
    t = c.get("type")
    if t in _WORKER_SUBTYPES:
        out["componentType"], out["subComponentType"] = "worker", t
    elif t is not None:
        out["componentType"] = t
    if service_name and c.get("name") is not None:
        out["serviceName"] = c["name"]
    for key in ("replicas", "minAvailable", "globalDynamoNamespace", "runtimeVersionOverride"):
        if key in c:
            out[key] = c[key]
    for key in ("multinode", "modelRef", "topologyConstraint", "eppConfig"):
        if key in c:
            out[key] = copy.deepcopy(c[key])
    if "sharedMemorySize" in c:
        size = c["sharedMemorySize"]
        out["sharedMemory"] = {"disabled": True} if v1alpha1.quantity_sign(size) == 0 else {"size": size}
    if "scalingAdapter" in c:
        out["scalingAdapter"] = {"enabled": True}
    cache = c.get("compilationCache")
    if cache is not None:
        mount: Manifest = {"name": cache["pvcName"], "useAsCompilationCache": True}
        if cache.get("mountPath"):
            mount["mountPoint"] = cache["mountPath"]
        out["volumeMounts"] = [mount]
    experimental = c.get("experimental") or {}
    if "gpuMemoryService" in experimental:
        gms = experimental["gpuMemoryService"]
        out["gpuMemoryService"] = _drop_none(
            {
                "enabled": True,
                **{k: v for k, v in gms.items() if k != "mode"},
                "mode": _mode_from_hub(gms.get("mode")),
            }
        )
    if "failover" in experimental:
        fo = experimental["failover"]
        out["failover"] = _drop_none(
            {
                "enabled": True,
                **{k: v for k, v in fo.items() if k != "mode"},
                "mode": _mode_from_hub(fo.get("mode")),
            }
        )
    if "checkpoint" in experimental:
        out["checkpoint"] = copy.deepcopy(experimental["checkpoint"])
    if c.get("podTemplate") is not None:
        _decompose_pod_template(c, out)
    return out


# --------------------------------------------------------------------------------------------
# DynamoGraphDeployment
# --------------------------------------------------------------------------------------------

_DGD_COMMON = ("backendFramework", "annotations", "labels", "priorityClassName", "restart", "experimental")


def dgd_spec_to_hub(s: Manifest) -> Manifest:
    out: Manifest = {}
    services = s.get("services")
    if services is not None:
        out["components"] = [component_to_hub(services[n] or {}, n) for n in sorted(services)]
    if "envs" in s:
        out["env"] = copy.deepcopy(s["envs"])
    for key in _DGD_COMMON:
        if key in s:
            out[key] = copy.deepcopy(s[key])
    tc = s.get("topologyConstraint")
    if tc is not None:
        out["topologyConstraint"] = _drop_none(
            {"clusterTopologyName": tc.get("topologyProfile"), "packDomain": tc.get("packDomain")}
        )
    return out


def dgd_spec_from_hub(s: Manifest) -> Manifest:
    out: Manifest = {}
    components = s.get("components")
    if components is not None:
        out["services"] = {c["name"]: component_from_hub(c) for c in components}
    if "env" in s:
        out["envs"] = copy.deepcopy(s["env"])
    for key in _DGD_COMMON:
        if key in s:
            out[key] = copy.deepcopy(s[key])
    tc = s.get("topologyConstraint")
    if tc is not None:
        out["topologyConstraint"] = _drop_none(
            {"topologyProfile": tc.get("clusterTopologyName"), "packDomain": tc.get("packDomain")}
        )
    return out


def _replica_status_to_hub(r: Manifest) -> Manifest:
    out = {k: copy.deepcopy(v) for k, v in r.items() if k != "componentName"}
    if not out.get("componentNames") and r.get("componentName"):
        out["componentNames"] = [r["componentName"]]
    return out


def _replica_status_from_hub(r: Manifest) -> Manifest:
    out = copy.deepcopy(r)
    names = r.get("componentNames") or []
    out["componentName"] = names[-1] if names else ""
    return out


def _rename(d: Manifest, old: str, new: str) -> Manifest:
    return {(new if k == old else k): v for k, v in d.items()}


def dgd_status_to_hub(s: Manifest) -> Manifest:
    out = _rename(copy.deepcopy(s), "services", "components")
    if "components" in out:
        out["components"] = {n: _replica_status_to_hub(r) for n, r in out["components"].items()}
    if "rollingUpdate" in out:
        out["rollingUpdate"] = _rename(out["rollingUpdate"], "updatedServices", "updatedComponents")
    return out


def dgd_status_from_hub(s: Manifest) -> Manifest:
    out = _rename(copy.deepcopy(s), "components", "services")
    if "services" in out:
        out["services"] = {n: _replica_status_from_hub(r) for n, r in out["services"].items()}
    if "rollingUpdate" in out:
        out["rollingUpdate"] = _rename(out["rollingUpdate"], "updatedComponents", "updatedServices")
    return out


_ALPHA_KEYED: Keyed = {"services": "map"}
_HUB_KEYED: Keyed = {"components": "list"}


def dgd_to_v1beta1(dgd: v1alpha1.DynamoGraphDeployment) -> v1beta1.DynamoGraphDeployment:
    """v1alpha1 DGD -> v1beta1 (the hub)."""
    return _convert(
        dgd, v1beta1.DynamoGraphDeployment, dgd_spec_to_hub, dgd_spec_from_hub, dgd_status_to_hub, dgd_status_from_hub,
        (ANN_DGD_SPEC, ANN_DGD_STATUS), _ALPHA_KEYED, _HUB_KEYED,
    )  # fmt: skip


def dgd_to_v1alpha1(dgd: v1beta1.DynamoGraphDeployment) -> v1alpha1.DynamoGraphDeployment:
    """v1beta1 DGD -> v1alpha1 (restoring what an earlier conversion preserved)."""
    return _convert(
        dgd, v1alpha1.DynamoGraphDeployment, dgd_spec_from_hub, dgd_spec_to_hub, dgd_status_from_hub, dgd_status_to_hub,
        (ANN_DGD_SPEC, ANN_DGD_STATUS), _HUB_KEYED, _ALPHA_KEYED,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# DynamoComponentDeployment
# --------------------------------------------------------------------------------------------


def dcd_spec_to_hub(s: Manifest) -> Manifest:
    out = component_to_hub(s, s.get("serviceName"))
    if "backendFramework" in s:
        out["backendFramework"] = s["backendFramework"]
    return out


def dcd_spec_from_hub(s: Manifest) -> Manifest:
    out = component_from_hub(s, service_name=True)
    if "backendFramework" in s:
        out["backendFramework"] = s["backendFramework"]
    return out


def dcd_status_to_hub(s: Manifest) -> Manifest:
    out = {k: copy.deepcopy(v) for k, v in s.items() if k not in ("service", "podSelector")}
    if "service" in s:
        out["component"] = _replica_status_to_hub(s["service"])
    return out


def dcd_status_from_hub(s: Manifest) -> Manifest:
    out = {k: copy.deepcopy(v) for k, v in s.items() if k != "component"}
    out.setdefault("conditions", [])
    if "component" in s:
        out["service"] = _replica_status_from_hub(s["component"])
    return out


def dcd_to_v1beta1(dcd: v1alpha1.DynamoComponentDeployment) -> v1beta1.DynamoComponentDeployment:
    return _convert(
        dcd, v1beta1.DynamoComponentDeployment, dcd_spec_to_hub, dcd_spec_from_hub, dcd_status_to_hub, dcd_status_from_hub,
        (ANN_DCD_SPEC, ANN_DCD_STATUS), {}, {},
    )  # fmt: skip


def dcd_to_v1alpha1(dcd: v1beta1.DynamoComponentDeployment) -> v1alpha1.DynamoComponentDeployment:
    return _convert(
        dcd, v1alpha1.DynamoComponentDeployment, dcd_spec_from_hub, dcd_spec_to_hub, dcd_status_from_hub, dcd_status_to_hub,
        (ANN_DCD_SPEC, ANN_DCD_STATUS), {}, {},
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# DynamoGraphDeploymentScalingAdapter: `dgdRef.serviceName` ⇄ `dgdRef.componentName`
# --------------------------------------------------------------------------------------------


def _dgdsa_spec(s: Manifest, old: str, new: str) -> Manifest:
    out = copy.deepcopy(s)
    if isinstance(out.get("dgdRef"), dict):
        out["dgdRef"] = _rename(out["dgdRef"], old, new)
    return out


def dgdsa_to_v1beta1(
    a: v1alpha1.DynamoGraphDeploymentScalingAdapter,
) -> v1beta1.DynamoGraphDeploymentScalingAdapter:
    return _convert(
        a, v1beta1.DynamoGraphDeploymentScalingAdapter,
        lambda s: _dgdsa_spec(s, "serviceName", "componentName"), lambda s: _dgdsa_spec(s, "componentName", "serviceName"),
        lambda s: {"replicas": 0, **s}, dict, ("", ""), {}, {},
    )  # fmt: skip


def dgdsa_to_v1alpha1(
    a: v1beta1.DynamoGraphDeploymentScalingAdapter,
) -> v1alpha1.DynamoGraphDeploymentScalingAdapter:
    return _convert(
        a, v1alpha1.DynamoGraphDeploymentScalingAdapter,
        lambda s: _dgdsa_spec(s, "componentName", "serviceName"), lambda s: _dgdsa_spec(s, "serviceName", "componentName"),
        dict, lambda s: {"replicas": 0, **s}, ("", ""), {}, {},
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# DynamoGraphDeploymentRequest: the v1alpha1 profiling request maps onto the v1beta1 fields it
# shares; everything else travels in `nvidia.com/dgdr-spec` / `nvidia.com/dgdr-status`.
# --------------------------------------------------------------------------------------------


def dgdr_spec_to_hub(s: Manifest) -> Manifest:
    out: Manifest = {"model": s.get("model", "")}
    for key in ("backend", "autoApply", "runtimeVersionOverride"):
        if key in s:
            out[key] = s[key]
    image = (s.get("deploymentOverrides") or {}).get("workersImage")
    if image:
        out["image"] = image
    if "useMocker" in s:
        out["features"] = {"mocker": {"enabled": s["useMocker"]}}
    return out


def dgdr_spec_from_hub(s: Manifest) -> Manifest:
    out: Manifest = {
        "model": s.get("model", ""),
        "backend": s.get("backend", "auto"),
        "profilingConfig": {"profilerImage": ""},
    }
    for key in ("autoApply", "runtimeVersionOverride"):
        if key in s:
            out[key] = s[key]
    if s.get("image"):
        out["deploymentOverrides"] = {"workersImage": s["image"]}
    mocker = ((s.get("features") or {}).get("mocker") or {}).get("enabled")
    if mocker is not None:
        out["useMocker"] = mocker
    return out


def _dgdr_status(s: Manifest) -> Manifest:
    return {}


def dgdr_to_v1beta1(r: v1alpha1.DynamoGraphDeploymentRequest) -> v1beta1.DynamoGraphDeploymentRequest:
    return _convert(
        r, v1beta1.DynamoGraphDeploymentRequest, dgdr_spec_to_hub, dgdr_spec_from_hub, _dgdr_status, _dgdr_status,
        (ANN_DGDR_SPEC, ANN_DGDR_STATUS), {}, {},
    )  # fmt: skip


def dgdr_to_v1alpha1(r: v1beta1.DynamoGraphDeploymentRequest) -> v1alpha1.DynamoGraphDeploymentRequest:
    return _convert(
        r, v1alpha1.DynamoGraphDeploymentRequest, dgdr_spec_from_hub, dgdr_spec_to_hub, _dgdr_status, _dgdr_status,
        (ANN_DGDR_SPEC, ANN_DGDR_STATUS), {}, {},
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# Entry points by object
# --------------------------------------------------------------------------------------------

_TO_HUB: dict[type[Resource], Callable[[Any], Resource]] = {
    v1alpha1.DynamoGraphDeployment: dgd_to_v1beta1,
    v1alpha1.DynamoComponentDeployment: dcd_to_v1beta1,
    v1alpha1.DynamoGraphDeploymentScalingAdapter: dgdsa_to_v1beta1,
    v1alpha1.DynamoGraphDeploymentRequest: dgdr_to_v1beta1,
}
_TO_SPOKE: dict[type[Resource], Callable[[Any], Resource]] = {
    v1beta1.DynamoGraphDeployment: dgd_to_v1alpha1,
    v1beta1.DynamoComponentDeployment: dcd_to_v1alpha1,
    v1beta1.DynamoGraphDeploymentScalingAdapter: dgdsa_to_v1alpha1,
    v1beta1.DynamoGraphDeploymentRequest: dgdr_to_v1alpha1,
}


def convertible(obj: Resource) -> bool:
    """Whether `obj`'s kind exists in both versions (DynamoCheckpoint and DynamoModel do not)."""
    return type(obj) in _TO_HUB or type(obj) in _TO_SPOKE


def to_other_version(obj: Resource) -> Resource:
    """The object in the other API version (v1alpha1 ⇄ v1beta1)."""
    fn = _TO_HUB.get(type(obj)) or _TO_SPOKE.get(type(obj))
    if fn is None:
        raise TypeError(f"{obj.KIND} exists in one API version only")
    return fn(obj)
