"""The webhook's rules for an update: what may not change once an object exists (component set,
node topology, topology constraints, inter-pod GPU memory service, backend framework, a DynamoModel's
base model and type), replicas owned by a scaling adapter, and the runtime version, checked only
when the image or override changes.

Left out: the restart id during a rolling update (needs the live status)."""

from __future__ import annotations

from typing import Any

from dynamo_infra.api import conversion, v1alpha1, v1beta1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.checkpoint import checkpoint_review
from dynamo_infra.api.admission.component import RUNTIME_VERSION_OVERRIDE_REQUIRED, main_image
from dynamo_infra.api.admission.features import OperatorFeatures
from dynamo_infra.api.admission.field import Text
from dynamo_infra.api.admission.graph import graph_review
from dynamo_infra.api.admission.multinode import node_count_update, removes_unsupported_multinode
from dynamo_infra.api.admission.override import (
    SCOPE_ROOT,
    component_overrides_update,
    force_scaling_group_update,
    override_update,
)
from dynamo_infra.api.admission.paths import At, Paths
from dynamo_infra.api.admission.power import power_limit_update
from dynamo_infra.api.admission.provider import workload_provider_update
from dynamo_infra.api.admission.resources import (
    DGDR_OVERRIDE_REQUIRED,
    dcd_review,
    hardware_required,
    model_review,
    needs_hardware,
    request_override_required,
    search_incompatible,
    search_invalid,
)
from dynamo_infra.api.admission.review import Review
from dynamo_infra.api.admission.roles import has_role_pod_templates, role_override_required, roles_update
from dynamo_infra.api.admission.runtimeversion import runtime_version_override_required
from dynamo_infra.api.base import Resource
from dynamo_infra.api.errors import Problem

GRAPH = "DynamoGraphDeployment"
COMPONENT = "DynamoComponentDeployment"
INTER_POD = "InterPod"
# Replicas of a component without `replicas` (the defaulting webhook's value).
DEFAULT_REPLICAS = 1
IMMUTABLE = "is immutable and cannot be changed after creation"
BACKEND_CHANGE_WARNING = "Changing spec.backendFramework may cause unexpected behavior"
SCALED_BY_ADAPTER = (
    "cannot be modified directly when scaling adapter is enabled; scale or update the related "
    "DynamoGraphDeploymentScalingAdapter instead"
)
# DGDR phases in which its spec may no longer change.
DGDR_FROZEN_PHASES = ("Profiling", "Deploying", "Ready", "Deployed")


def _recreate(what: str, owner: str) -> str:
    return (
        "is immutable and cannot be added, removed, or changed after creation; delete and recreate the "
        f"{owner} to change {what}"
    )


def update_review(
    old: Resource, new: Resource, features: OperatorFeatures | None, namespace: str | None
) -> Review:
    if conversion.convertible(new) and type(old) is not type(new):
        old = conversion.convert_to(old, type(new))
    if isinstance(new, v1alpha1.DynamoGraphDeployment | v1beta1.DynamoGraphDeployment):
        # The webhook checks what may change only once the new graph itself is valid.
        old_spec = _hub(old, v1beta1.DynamoGraphDeployment).spec
        base = graph_review(new, features, namespace, creating=False, old=old_spec)
        return base if base.problems else base + _graph_update(old, new)
    if isinstance(new, v1alpha1.DynamoComponentDeployment | v1beta1.DynamoComponentDeployment):
        old_dcd = _hub(old, v1beta1.DynamoComponentDeployment).spec
        return dcd_review(new, features, namespace, creating=False, old=old_dcd) + _dcd_update(old, new)
    if isinstance(new, v1alpha1.DynamoModel) and isinstance(old, v1alpha1.DynamoModel):
        return model_review(new) + _model_update(old, new)
    if isinstance(new, v1alpha1.DynamoCheckpoint):
        return checkpoint_review(new, features)
    if isinstance(new, v1alpha1.DynamoGraphDeploymentRequest | v1beta1.DynamoGraphDeploymentRequest):
        return _request_update(old, new, features)
    return Review()


def _hub(obj: Any, model: type[Resource]) -> Any:
    return obj if isinstance(obj, model) else conversion.convert_to(obj, model)


def _graph_update(old: Any, new: Any) -> Review:
    alpha = isinstance(new, v1alpha1.DynamoGraphDeployment)
    paths = Paths(alpha)
    new_spec = _hub(new, v1beta1.DynamoGraphDeployment).spec
    old_spec = _hub(old, v1beta1.DynamoGraphDeployment).spec
    old_components = {c.name: c for c in old_spec.components or []}
    new_names = {c.name for c in new_spec.components or []}
    added, removed = sorted(new_names - set(old_components)), sorted(set(old_components) - new_names)
    problems = workload_provider_update(
        dict(new.metadata.annotations or {}), dict(old.metadata.annotations or {})
    )
    problems += override_update(
        new_spec.provider_override,
        old_spec.provider_override,
        lambda *p: paths.spec("providerOverride", *p),
        SCOPE_ROOT,
    )
    if added or removed:
        detail = "component topology is immutable and cannot be modified after creation"
        parts = ([f"components added: {field.go_list(added)}"] if added else []) + (
            [f"components removed: {field.go_list(removed)}"] if removed else []
        )
        problems.append(field.forbidden(paths.spec("components"), f"{detail}: {', '.join(parts)}"))
    for c in new_spec.components or []:
        if c.name in old_components:
            at = paths.component(c.name)
            problems += component_update(
                c, old_components[c.name], at, owner=GRAPH, runtime_version=not alpha
            )
            problems += power_limit_update(c, old_components[c.name], at)
    review = _backend_update(
        old_spec.backend_framework, new_spec.backend_framework, paths.spec("backendFramework")
    )
    problems += _spec_topology_update(old_spec, new_spec, paths)
    problems += _kv_policy_update(old_spec, new_spec, paths)
    if alpha:
        old_services = old.spec.services or {}
        for name, s in sorted((new.spec.services or {}).items()):
            if name in old_services:
                problems += _legacy_runtime_update(old_services[name], s, paths.legacy_component(name), False)
    return Review(tuple(problems)) + review


def _dcd_update(old: Any, new: Any) -> Review:
    alpha = isinstance(new, v1alpha1.DynamoComponentDeployment)
    paths = Paths(alpha)
    new_spec = _hub(new, v1beta1.DynamoComponentDeployment).spec
    old_spec = _hub(old, v1beta1.DynamoComponentDeployment).spec
    review = _backend_update(
        old_spec.backend_framework, new_spec.backend_framework, paths.dcd()("backendFramework")
    )
    problems = _legacy_runtime_update(old.spec, new.spec, paths.legacy_dcd(), True) if alpha else []
    problems += component_update(
        new_spec,
        old_spec,
        paths.dcd(),
        owner=COMPONENT,
        runtime_version=not alpha,
        can_modify_replicas=True,
        allow_missing_override=True,
    )
    return review + Review(tuple(problems))


def _backend_update(old: str | None, new: str | None, at: str) -> Review:
    if (old or "") == (new or ""):
        return Review()
    return Review((field.invalid(at, Text(new or ""), IMMUTABLE),), (BACKEND_CHANGE_WARNING,))


def _is_inter_pod(feature: Any) -> bool:
    return feature is not None and feature.mode == INTER_POD


def component_update(
    new: v1beta1.ComponentFields,
    old: v1beta1.ComponentFields,
    at: At,
    *,
    owner: str,
    runtime_version: bool,
    can_modify_replicas: bool = False,
    allow_missing_override: bool = False,
) -> list[Problem]:
    """A component that exists before and after the update (`runtime_version`: the document is v1beta1)."""
    out: list[Problem] = []
    adapted = new.scaling_adapter is not None or old.scaling_adapter is not None
    replicas = (new.replicas, old.replicas)
    if (
        adapted
        and not can_modify_replicas
        and len({r if r is not None else DEFAULT_REPLICAS for r in replicas}) > 1
    ):
        out.append(field.forbidden(at("replicas"), SCALED_BY_ADAPTER))
    multinode = [c.multinode is not None and c.multinode.node_count > 1 for c in (new, old)]
    out += component_overrides_update(new, old, at)
    if multinode[0] == multinode[1]:
        out += node_count_update(new, old, at)
        out += roles_update(new, old, at)
    elif not removes_unsupported_multinode(new, old):
        value = {"nodeCount": new.multinode.node_count} if new.multinode else None
        out.append(
            field.invalid(
                at("multinode"),
                value,
                "cannot change node topology between single-node and multi-node after creation",
            )
        )
    tc, old_tc = new.topology_constraint, old.topology_constraint
    if (tc is None) != (old_tc is None) or (tc and old_tc and tc.pack_domain != old_tc.pack_domain):
        pack = {"packDomain": tc.pack_domain} if tc else None
        out.append(field.invalid(at("topologyConstraint"), pack, _recreate("topology constraints", owner)))
    out += _experimental_update(new.experimental, old.experimental, at, owner)
    out += force_scaling_group_update(new, old, at, owner)
    if runtime_version and has_role_pod_templates(new):
        if not allow_missing_override and role_override_required(new, old):
            out.append(field.required(at("runtimeVersionOverride"), RUNTIME_VERSION_OVERRIDE_REQUIRED))
    elif runtime_version:
        (image, image_at), (old_image, _) = main_image(new, at), main_image(old, at)
        changed = image != old_image or new.runtime_version_override != old.runtime_version_override
        if not image and old_image:
            out.append(field.required(image_at, "is required"))
        elif (
            not allow_missing_override
            and runtime_version_override_required(image, new.runtime_version_override)
            and changed
        ):
            out.append(field.required(at("runtimeVersionOverride"), RUNTIME_VERSION_OVERRIDE_REQUIRED))
    return out


def _experimental_update(
    new: v1beta1.ComponentExperimental | None, old: v1beta1.ComponentExperimental | None, at: At, owner: str
) -> list[Problem]:
    gms, old_gms = (new.gpu_memory_service if new else None), (old.gpu_memory_service if old else None)
    failover, old_failover = (new.failover if new else None), (old.failover if old else None)
    out = []
    if _is_inter_pod(gms) != _is_inter_pod(old_gms):
        mode = None if new is None else (gms.mode if gms else "")
        out.append(
            field.invalid(
                at("experimental", "gpuMemoryService", "mode"),
                mode,
                f"the inter-pod GMS layout cannot be toggled after creation; delete and recreate the {owner}",
            )
        )
    if _is_inter_pod(failover) != _is_inter_pod(old_failover):
        value = {"mode": failover.mode, "numShadows": failover.num_shadows} if failover else None
        out.append(
            field.invalid(
                at("experimental", "failover"),
                value,
                f"inter-pod GMS failover cannot be toggled after creation; delete and recreate the {owner}",
            )
        )
    elif (
        failover
        and old_failover
        and _is_inter_pod(failover)
        and failover.num_shadows != old_failover.num_shadows
    ):
        out.append(
            field.invalid(
                at("experimental", "failover", "numShadows"),
                failover.num_shadows,
                f"is immutable for inter-pod GMS failover; delete and recreate the {owner} to change it",
            )
        )
    return out


def _spec_topology_update(
    old: v1beta1.DynamoGraphDeploymentSpec, new: v1beta1.DynamoGraphDeploymentSpec, paths: Paths
) -> list[Problem]:
    tc, old_tc = new.topology_constraint, old.topology_constraint
    same = (tc is None and old_tc is None) or (
        tc is not None
        and old_tc is not None
        and (tc.cluster_topology_name, tc.pack_domain or "")
        == (old_tc.cluster_topology_name, old_tc.pack_domain or "")
    )
    if same:
        return []
    value = None
    if tc is not None:
        value = {
            "clusterTopologyName": tc.cluster_topology_name,
            **({"packDomain": tc.pack_domain} if tc.pack_domain else {}),
        }
    return [field.invalid(paths.spec("topologyConstraint"), value, _recreate("topology constraints", GRAPH))]


def _kv_policy_update(
    old: v1beta1.DynamoGraphDeploymentSpec, new: v1beta1.DynamoGraphDeploymentSpec, paths: Paths
) -> list[Problem]:
    policy = new.experimental.kv_transfer_policy if new.experimental else None
    old_policy = old.experimental.kv_transfer_policy if old.experimental else None
    if policy is None and old_policy is None:
        return []

    def key(p: Any) -> tuple[Any, ...]:
        return (p.cluster_topology_name or "", p.label_key or "", p.domain, p.enforcement, p.preferred_weight)

    if policy is not None and old_policy is not None and key(policy) == key(old_policy):
        return []
    value = None
    if policy is not None:
        value = {
            k: v
            for k, v in {
                "clusterTopologyName": policy.cluster_topology_name,
                "labelKey": policy.label_key,
                "domain": policy.domain,
                "enforcement": policy.enforcement,
                "preferredWeight": policy.preferred_weight,
            }.items()
            if v or k == "domain"
        }
    return [
        field.invalid(
            paths.spec("experimental", "kvTransferPolicy"), value, _recreate("the KV transfer policy", GRAPH)
        )
    ]


def _legacy_runtime_update(
    old: v1alpha1.ComponentSpec, new: v1alpha1.ComponentSpec, at: At, allow_missing_override: bool
) -> list[Problem]:
    def image(s: v1alpha1.ComponentSpec) -> str:
        return str(((s.extra_pod_spec or {}).get("mainContainer") or {}).get("image") or "")

    new_image, old_image = image(new), image(old)
    changed = new_image != old_image or new.runtime_version_override != old.runtime_version_override
    if not new_image and old_image:
        return [field.required(at("extraPodSpec", "mainContainer", "image"), "is required")]
    if (
        not allow_missing_override
        and runtime_version_override_required(new_image, new.runtime_version_override)
        and changed
    ):
        return [field.required(at("runtimeVersionOverride"), RUNTIME_VERSION_OVERRIDE_REQUIRED)]
    return []


def _model_update(old: v1alpha1.DynamoModel, new: v1alpha1.DynamoModel) -> Review:
    problems, warnings = [], []
    if new.spec.base_model_name != old.spec.base_model_name:
        warnings.append("Changing spec.baseModelName will break endpoint discovery")
        problems.append(field.invalid("spec.baseModelName", Text(new.spec.base_model_name), IMMUTABLE))
    if new.spec.model_type != old.spec.model_type:
        warnings.append("Changing spec.modelType may cause unexpected behavior")
        problems.append(field.invalid("spec.modelType", Text(new.spec.model_type), IMMUTABLE))
    return Review(tuple(problems), tuple(warnings))


def _request_update(old: Any, new: Any, features: OperatorFeatures | None) -> Review:
    """DGDR: its create rules, each only when the update newly breaks it; a frozen spec once profiling started."""
    spec = _hub(new, v1beta1.DynamoGraphDeploymentRequest).spec
    old_spec = _hub(old, v1beta1.DynamoGraphDeploymentRequest).spec
    out = []
    if needs_hardware(spec, features) and not needs_hardware(old_spec, features):
        out.append(hardware_required())
    if search_incompatible(spec) and not search_incompatible(old_spec):
        out.append(search_invalid(spec))
    auto_apply_on = old_spec.auto_apply is False and spec.auto_apply is not False
    changed = (
        spec.image != old_spec.image or spec.runtime_version_override != old_spec.runtime_version_override
    )
    if request_override_required(spec) and (changed or auto_apply_on):
        out.append(field.required("spec.runtimeVersionOverride", DGDR_OVERRIDE_REQUIRED))
    phase = str((old.status or {}).get("phase") or "")
    if phase in DGDR_FROZEN_PHASES and spec != old_spec and not _deferred_update(spec, old_spec, phase):
        out.append(
            field.forbidden(
                "spec",
                f"updates are forbidden while the resource is in phase {field.go_quote(phase)}; delete and recreate "
                "the resource to change its spec",
            )
        )
    return Review(tuple(out))


def _deferred_update(spec: Any, old_spec: Any, phase: str) -> bool:
    """Choosing the runtime version (and turning autoApply on once Ready) before the DGD is created."""
    if old_spec.auto_apply is not False or phase not in ("Profiling", "Ready"):
        return False
    if spec.auto_apply is not False and phase != "Ready":
        return False
    kept = {"auto_apply": old_spec.auto_apply, "runtime_version_override": old_spec.runtime_version_override}
    return bool(spec.model_copy(update=kept) == old_spec)
