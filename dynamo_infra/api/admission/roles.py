"""The webhook's rules for a component's `roles` (1.6: the multinode `leader` and `worker`, each with
an optional complete pod template of its own): only on multinode components, both roles named once,
replicas as the node count gives them, every role template with a `main` container and image and no
power limit, role templates not with a component template nor with GMS or failover, their runtime
version, and a planner of the graph at 1.6.0 or later (the gate `PLANNER_DGD_COMPONENT_STATUS`).

Ported from 1.6-era `deploy/operator/internal/webhook/validation/shared_v1beta1.go`
(michaelfeil/dynamo@80b177f2c87c3c80dec88524bb0cda666cc3effc: `validateComponentRoles`,
`validateComponentRoleSpec`, `validateComponentPodTemplateMode`, `validateSharedExperimentalSpec`,
`validateRolePodTemplateRuntimeVersion`, `validateComponentRolesUpdate`) and
`planner_runtime_features.go` (`validateRolePodTemplatesPlannerRuntime`). Left out: the annotation
syntax check of role templates (`ValidateAnnotations`); sidecar and init container images and the
vLLM backend annotation of a role template are refused by the model at load, before admission."""

from __future__ import annotations

from typing import Final

from dynamo_infra.api import v1beta1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.field import Text
from dynamo_infra.api.admission.paths import At
from dynamo_infra.api.admission.power import ANNOTATION_GPU_POWER_LIMIT
from dynamo_infra.api.admission.runtimeversion import image_tag, runtime_version_override_required
from dynamo_infra.api.common import MAIN_CONTAINER, ROLE_LEADER, ROLE_WORKER
from dynamo_infra.api.errors import Problem
from dynamo_infra.api.releases import PLANNER_DGD_COMPONENT_STATUS, RuntimeVersion, image_version

MULTINODE_ROLES: Final = (ROLE_LEADER, ROLE_WORKER)
# Pods of the leader role (the worker role has the other nodeCount - 1).
LEADER_REPLICAS: Final = 1
ROLES_UNSUPPORTED: Final = (
    "roles are supported only for component shapes that define a role schema; this release supports "
    "multinode and LPX components"
)
ROLE_TEMPLATE_REQUIRED: Final = "is required on every role when role-specific PodTemplates are used"
ROLE_POWER_LIMIT: Final = "role-specific power limits are not supported by power-aware planning"
MAIN_REQUIRED: Final = f"must contain a container named {field.go_quote(MAIN_CONTAINER)}"
ONE_TEMPLATE_MODE: Final = (
    "cannot be combined with roles[].podTemplate; choose one complete PodTemplate source mode"
)
OPERATOR_LAUNCH: Final = (
    "cannot be combined with role PodTemplates because this layout requires operator-managed launch wiring"
)
ROLE_MODEL_CHANGE: Final = (
    "cannot switch between implicit and explicit roles while changing the resolved role model; make the "
    "equivalent role structure explicit first"
)
ROLE_NAMES_IMMUTABLE: Final = "role names are immutable after creation"
PLANNER_TYPE: Final = "planner"


def has_role_pod_templates(c: v1beta1.ComponentFields) -> bool:
    """The component's pods come from its roles' templates (`dynamo.HasRolePodTemplates`)."""
    return any(r.pod_template is not None for r in c.roles or [])


def role_problems(c: v1beta1.ComponentFields, at: At) -> list[Problem]:
    """A component's roles and its template mode (creating, or the new state of an update)."""
    out = []
    if c.pod_template is not None and has_role_pod_templates(c):
        out.append(field.forbidden(at("podTemplate"), ONE_TEMPLATE_MODE))
    if c.roles is None:
        return out
    if c.multinode is None:
        return [*out, field.forbidden(at("roles"), ROLES_UNSUPPORTED)]
    templated, seen = has_role_pod_templates(c), set()
    for i, role in enumerate(c.roles):
        if templated and role.pod_template is None:
            out.append(field.required(at("roles", i, "podTemplate"), ROLE_TEMPLATE_REQUIRED))
        known = role.name in MULTINODE_ROLES
        if not known:
            out.append(field.not_supported(at("roles", i, "name"), Text(role.name), MULTINODE_ROLES))
        elif role.name in seen:
            out.append(field.duplicate(at("roles", i, "name"), Text(role.name)))
        else:
            seen.add(role.name)
        if known and role.replicas is not None:
            expected = LEADER_REPLICAS if role.name == ROLE_LEADER else c.multinode.node_count - 1
            if role.replicas != expected:
                detail = f"must equal {expected} for multinode role {field.go_quote(role.name)}"
                out.append(field.invalid(at("roles", i, "replicas"), role.replicas, detail))
        if known and role.pod_template is not None:
            out += _role_template_problems(
                role.pod_template, lambda *p, i=i: at("roles", i, "podTemplate", *p)
            )
    for name in MULTINODE_ROLES:
        if name not in seen:
            out.append(field.required(at("roles"), f"must contain the {field.go_quote(name)} role"))
    return out


def _role_template_problems(template: v1beta1.PodTemplate, at: At) -> list[Problem]:
    out = []
    annotations = (template.metadata or {}).get("annotations") or {}
    if isinstance(annotations, dict) and ANNOTATION_GPU_POWER_LIMIT in annotations:
        annotation_at = f"{at('metadata', 'annotations')}[{ANNOTATION_GPU_POWER_LIMIT}]"
        out.append(field.forbidden(annotation_at, ROLE_POWER_LIMIT))
    containers = (template.spec or {}).get("containers") or []
    main = next((i for i, x in enumerate(containers) if x.get("name") == MAIN_CONTAINER), None)
    if main is None:
        out.append(field.required(at("spec", "containers"), MAIN_REQUIRED))
    elif not containers[main].get("image"):
        out.append(field.required(at("spec", "containers", main, "image"), "is required"))
    return out


def role_experimental_problems(c: v1beta1.ComponentFields, at: At) -> list[Problem]:
    """GMS and failover need the operator's launch wiring, which role templates replace."""
    if c.experimental is None or not has_role_pod_templates(c):
        return []
    out = []
    if c.experimental.gpu_memory_service is not None:
        out.append(field.forbidden(at("experimental", "gpuMemoryService"), OPERATOR_LAUNCH))
    if c.experimental.failover is not None:
        out.append(field.forbidden(at("experimental", "failover"), OPERATOR_LAUNCH))
    return out


def role_main_image(role: v1beta1.ComponentRole | None) -> str:
    template = role.pod_template if role is not None else None
    main = template.container(MAIN_CONTAINER) if template is not None else None
    return str((main or {}).get("image") or "")


def role_override_required(c: v1beta1.ComponentFields, old: v1beta1.ComponentFields | None = None) -> bool:
    """A role template's main image names no runtime version and there is no override (on an update:
    only when that role's image or the override changed)."""
    if c.runtime_version_override:
        return False
    old_images = {r.name: role_main_image(r) for r in (old.roles or [])} if old is not None else {}
    for role in c.roles or []:
        image = role_main_image(role)
        if not image or not runtime_version_override_required(image, c.runtime_version_override):
            continue
        if old is None or image != old_images.get(role.name) or old.runtime_version_override:
            return True
    return False


def _resolve_error(image: str, override: str | None) -> tuple[RuntimeVersion | None, str]:
    """`runtimeversion.Resolve`: the version, or the operator's reason it has none."""
    if override:
        explicit = RuntimeVersion.parse(override)
        return (explicit, "") if explicit else (None, 'must be a semantic version such as "1.1.0"')
    tag = image_tag(image)
    if not tag:
        return None, f"image {field.go_quote(image.strip())} does not contain a tag"
    numbers = image_version(image)
    if numbers is None:
        return None, f'image tag {field.go_quote(tag)} must contain a semantic version such as "1.1.0"'
    return RuntimeVersion(*numbers), ""


def planner_runtime_problems(
    spec: v1beta1.DynamoGraphDeploymentSpec, component_at: dict[str, At]
) -> list[Problem]:
    """Role templates need every planner of the graph at the release whose planner reads component
    status (a pre-1.6 planner finds workers by their pod templates)."""
    templated = [c.name for c in spec.components or [] if has_role_pod_templates(c)]
    if not templated:
        return []
    minimum = PLANNER_DGD_COMPONENT_STATUS.since
    detail = ""
    for c in spec.components or []:
        if c.type != PLANNER_TYPE:
            continue
        main = c.pod_template.container(MAIN_CONTAINER) if c.pod_template else None
        version, error = _resolve_error(str((main or {}).get("image") or ""), c.runtime_version_override)
        prefix = f"role-specific PodTemplates require every planner component to use Dynamo runtime {minimum} or later"
        if version is None:
            detail = f"{prefix}; planner component {field.go_quote(c.name)} has no resolvable runtime version: {error}"
        elif not PLANNER_DGD_COMPONENT_STATUS.enabled(version):
            detail = f"{prefix}; planner component {field.go_quote(c.name)} resolves to {version}"
        if detail:
            break
    if not detail:
        return []
    return [field.forbidden(component_at[name]("roles"), detail) for name in templated]


def roles_update(new: v1beta1.ComponentFields, old: v1beta1.ComponentFields, at: At) -> list[Problem]:
    """Role names are fixed; implicit and explicit roles may be swapped only for the same role model."""
    if (new.roles is None) != (old.roles is None):
        explicit, implicit = (new, old) if new.roles is not None else (old, new)
        if explicit.multinode is not None and implicit.multinode is not None and _matches_implicit(explicit):
            return []
        return [field.forbidden(at("roles"), ROLE_MODEL_CHANGE)]
    new_names = [r.name for r in new.roles or []]
    old_names = {r.name for r in old.roles or []}
    if len(set(new_names)) != len(old_names) or set(new_names) != old_names:
        value = [r.to_wire() for r in new.roles or []]
        return [field.invalid(at("roles"), value, ROLE_NAMES_IMMUTABLE)]
    return []


def _matches_implicit(c: v1beta1.ComponentFields) -> bool:
    """Explicit roles that say what the implicit ones mean: leader 1 and worker nodeCount - 1, and
    nothing else but templates (`dynamo.ExplicitMultinodeRolesMatchImplicit`)."""
    nodes = c.multinode.node_count if c.multinode else 0
    wanted = {ROLE_LEADER: LEADER_REPLICAS, ROLE_WORKER: nodes - 1}
    roles = c.roles or []
    return (
        len(roles) == len(wanted)
        and {r.name for r in roles} == set(wanted)
        and all(r.replicas in (None, wanted[r.name]) and r.provider_override is None for r in roles)
    )
