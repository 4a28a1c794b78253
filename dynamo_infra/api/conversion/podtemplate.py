"""The ten flat pod fields of a v1alpha1 component ⇄ the v1beta1 `podTemplate` (and the sidecar)."""

from __future__ import annotations

from typing import Any

from dynamo_infra.api.common import MAIN_CONTAINER
from dynamo_infra.api.manifest import Manifest, copy_json
from dynamo_infra.api.merge import merge_override

# Default Kubernetes GPU resource name for Dynamo's `gpu` shorthand.
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
# Container name the operator gives a v1alpha1 `frontendSidecar`.
FRONTEND_SIDECAR_CONTAINER = "sidecar-frontend"


def pod_template_to_hub(s: Manifest, out: Manifest) -> None:
    """Write `podTemplate` (and `frontendSidecar`, the sidecar's container name) of shared spec `s`."""
    template = _pod_template_to_hub(s)
    if template is not None:
        out["podTemplate"] = template
        if s.get("frontendSidecar") is not None:
            out["frontendSidecar"] = FRONTEND_SIDECAR_CONTAINER


def pod_template_from_hub(c: Manifest, out: Manifest) -> None:
    """Write the flat pod fields (resources, envs, probes, mounts, extraPodSpec, ...) of component `c`."""
    if c.get("podTemplate") is not None:
        _decompose_pod_template(c, out)


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
        out["claims"] = copy_json(res["claims"])  # type: ignore[index]
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
        out["claims"] = copy_json(res["claims"])
    return out or None


def merge_env_ordered(base: list[Manifest] | None, override: list[Manifest] | None) -> list[Manifest]:
    """The conversion's env merge: base order kept, same-name entries replaced, new ones appended."""
    out = [copy_json(e) for e in base or []]
    index = {e.get("name"): i for i, e in enumerate(out)}
    for e in override or []:
        if e.get("name") in index:
            out[index[e.get("name")]] = copy_json(e)
        else:
            index[e.get("name")] = len(out)
            out.append(copy_json(e))
    return out


def _main_container(s: Manifest) -> Manifest:
    main: Manifest = {"name": MAIN_CONTAINER}
    resources = resources_to_kube(s.get("resources"))
    if resources:
        main["resources"] = resources
    if s.get("envs"):
        main["env"] = copy_json(s["envs"])
    if s.get("envFromSecret"):
        main["envFrom"] = [{"secretRef": {"name": s["envFromSecret"]}}]
    for probe in ("livenessProbe", "readinessProbe"):
        if s.get(probe) is not None:
            main[probe] = copy_json(s[probe])
    # Every flat mount, the compilation-cache one included and in place (buildMainContainerFromDedicated,
    # cdf9267d api/v1alpha1/shared_spec_conversion.go): the worker hash and the pod's mount order see it.
    mounts = [{"name": m["name"], "mountPath": m.get("mountPoint", "")} for m in s.get("volumeMounts") or []]
    if mounts:
        main["volumeMounts"] = mounts
    user = (s.get("extraPodSpec") or {}).get("mainContainer")
    if user:
        user = {k: v for k, v in user.items() if k != "name"}
        env = merge_env_ordered(main.get("env"), user.get("env"))
        dedicated_mounts = main.get("volumeMounts") or []
        main = merge_override(main, copy_json(user))
        if env:
            main["env"] = env
        mounts = [*(user.get("volumeMounts") or []), *dedicated_mounts]
        if mounts:
            main["volumeMounts"] = copy_json(mounts)
    return main


def _has_pod_content(s: Manifest) -> bool:
    """hasPodTemplateContent (cdf9267d): `resources` and `envFromSecret` count when present, even empty."""
    eps = s.get("extraPodSpec") or {}
    return bool(
        s.get("resources") is not None
        or s.get("envs")
        or s.get("envFromSecret") is not None
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
    pod_spec = {k: copy_json(v) for k, v in (s.get("extraPodSpec") or {}).items() if k != "mainContainer"}
    others = [c for c in pod_spec.get("containers") or [] if c.get("name") != MAIN_CONTAINER]
    containers = [_main_container(s), *others]
    sidecar = s.get("frontendSidecar")
    if sidecar is not None and not any(c.get("name") == FRONTEND_SIDECAR_CONTAINER for c in containers):
        c: Manifest = {"name": FRONTEND_SIDECAR_CONTAINER, "image": sidecar.get("image", "")}
        if sidecar.get("args"):
            c["args"] = list(sidecar["args"])
        if sidecar.get("envs"):
            c["env"] = copy_json(sidecar["envs"])
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


def _decompose_pod_template(c: Manifest, out: Manifest) -> None:
    template = copy_json(c.get("podTemplate") or {})
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
