"""v1alpha1 -> v1beta1 conversion of DynamoGraphDeployment (v1beta1 is the hub we render from)."""

from __future__ import annotations

from typing import Any

from dynamo_infra.api import v1alpha1, v1beta1
from dynamo_infra.api.base import KubeObject
from dynamo_infra.api.merge import merge_env, merge_override

# Default Kubernetes GPU resource name for Dynamo's `gpu` shorthand.
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
# Name of the Dynamo runtime container in every pod template.
MAIN_CONTAINER = "main"
# v1alpha1 componentType values that map to v1beta1 `type` one to one.
_DIRECT_TYPES = frozenset({"frontend", "worker", "prefill", "decode", "planner", "epp"})


def resources_to_kube(res: v1alpha1.Resources | None) -> KubeObject | None:
    """Dynamo `resources` shorthand -> Kubernetes ResourceRequirements."""
    if res is None:
        return None
    out: KubeObject = {}
    for key, item in (("requests", res.requests), ("limits", res.limits)):
        if item is None:
            continue
        values: dict[str, str] = {}
        if item.cpu:
            values["cpu"] = item.cpu
        if item.memory:
            values["memory"] = item.memory
        if item.gpu:
            values[item.gpu_type or DEFAULT_GPU_RESOURCE] = item.gpu
        values.update(item.custom or {})
        if values:
            out[key] = values
    if res.claims:
        out["claims"] = [c.to_wire() for c in res.claims]
    return out


def _component_type(spec: v1alpha1.ComponentSpec) -> str | None:
    t = spec.component_type
    if t == "worker" and spec.sub_component_type in ("prefill", "decode"):
        return spec.sub_component_type
    if t in _DIRECT_TYPES:
        return t
    return None


def _main_container(spec: v1alpha1.ComponentSpec) -> KubeObject:
    main: KubeObject = {"name": MAIN_CONTAINER}
    resources = resources_to_kube(spec.resources)
    if resources:
        main["resources"] = resources
    if spec.envs:
        main["env"] = list(spec.envs)
    if spec.env_from_secret:
        main["envFrom"] = [{"secretRef": {"name": spec.env_from_secret}}]
    if spec.liveness_probe:
        main["livenessProbe"] = spec.liveness_probe
    if spec.readiness_probe:
        main["readinessProbe"] = spec.readiness_probe
    mounts = [
        {"name": m.name, "mountPath": m.mount_point}
        for m in spec.volume_mounts or []
        if m.mount_point and not m.use_as_compilation_cache
    ]
    if mounts:
        main["volumeMounts"] = mounts
    user_main = (spec.extra_pod_spec.main_container if spec.extra_pod_spec else None) or {}
    if user_main:
        env = merge_env(main.get("env"), user_main.get("env")) if (main.get("env") and user_main.get("env")) else None
        main = merge_override(main, {k: v for k, v in user_main.items() if k != "name"})
        if env is not None:
            main["env"] = env
    return main


def component_to_v1beta1(name: str, spec: v1alpha1.ComponentSpec) -> v1beta1.Component:
    pod_spec: KubeObject = spec.extra_pod_spec.pod_spec() if spec.extra_pod_spec else {}
    others = [c for c in pod_spec.get("containers") or [] if c.get("name") != MAIN_CONTAINER]
    pod_spec = {**pod_spec, "containers": [_main_container(spec), *others]}
    template: KubeObject = {"spec": pod_spec}
    if spec.extra_pod_metadata:
        template["metadata"] = spec.extra_pod_metadata
    data: dict[str, Any] = {
        "name": name,
        "podTemplate": template,
    }
    ctype = _component_type(spec)
    if ctype:
        data["type"] = ctype
    if spec.replicas is not None:
        data["replicas"] = spec.replicas
    if spec.min_available is not None:
        data["minAvailable"] = spec.min_available
    if spec.multinode is not None:
        data["multinode"] = spec.multinode.to_wire()
    if spec.scaling_adapter is not None and spec.scaling_adapter.enabled:
        data["scalingAdapter"] = {}
    if spec.shared_memory is not None:
        if spec.shared_memory.disabled:
            data["sharedMemorySize"] = "0"
        elif spec.shared_memory.size is not None:
            data["sharedMemorySize"] = spec.shared_memory.size
    cache = next((m for m in spec.volume_mounts or [] if m.use_as_compilation_cache), None)
    if cache is not None:
        data["compilationCache"] = {"pvcName": cache.name, **({"mountPath": cache.mount_point} if cache.mount_point else {})}
    for field in ("model_ref", "epp_config", "topology_constraint"):
        value = getattr(spec, field)
        if value is not None:
            data[v1beta1.Component.model_fields[field].alias or field] = value.to_wire()
    if spec.global_dynamo_namespace is not None:
        data["globalDynamoNamespace"] = spec.global_dynamo_namespace
    if spec.runtime_version_override is not None:
        data["runtimeVersionOverride"] = spec.runtime_version_override
    return v1beta1.Component.parse(data)


def dgd_to_v1beta1(dgd: v1alpha1.DynamoGraphDeployment) -> v1beta1.DynamoGraphDeployment:
    s = dgd.spec
    spec: dict[str, Any] = {
        "components": [component_to_v1beta1(n, c).to_wire() for n, c in sorted((s.services or {}).items())],
    }
    if s.envs:
        spec["env"] = s.envs
    for field in ("backend_framework", "annotations", "labels", "priority_class_name"):
        value = getattr(s, field)
        if value is not None:
            spec[v1beta1.DynamoGraphDeploymentSpec.model_fields[field].alias or field] = value
    for field in ("restart", "topology_constraint", "experimental"):
        value = getattr(s, field)
        if value is not None:
            spec[v1beta1.DynamoGraphDeploymentSpec.model_fields[field].alias or field] = value.to_wire()
    return v1beta1.DynamoGraphDeployment.parse(
        {"apiVersion": v1beta1.API_VERSION, "kind": "DynamoGraphDeployment", "metadata": dgd.metadata.to_wire(), "spec": spec}
    )
