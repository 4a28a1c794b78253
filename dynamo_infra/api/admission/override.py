"""The webhook's rules for provider overrides (`providerOverride` on the graph, a component and a
multinode role: a sparse Grove fragment) and `experimental.grove.forceScalingGroup`.

Overrides are Grove only (`grove.io/v1alpha1`), only in a DGD, with the one target of their location
(graph: `PodCliqueSet`; component: `PodCliqueScalingGroupConfig` when it renders as a scaling group,
else `PodCliqueTemplateSpec`; role: `PodCliqueTemplateSpec`), writing only `topologyConstraint`
(`spec.template.topologyConstraint` for the graph) and never together with the typed topology API.
An omitted target is the location's (the operator's defaulting webhook persists it). Their
apiVersion and target, and a forced scaling group, are fixed once created.

The workload provider is the one the operator's defaulting webhook selects on create: `grove` on the
Grove pathway, else `component`; unknown at load (`None`), when the rules that need it wait.

Ported from 1.6-era `deploy/operator/internal/webhook/validation/shared_v1beta1.go` and
`dynamographdeployment.go` (michaelfeil/dynamo@80b177f2c87c3c80dec88524bb0cda666cc3effc:
`validateProviderOverride`, `validateGroveSpec`, `validateProviderOverrideUpdate`,
`validateGroveSpecUpdate`, `groveTopologyOverrideCompositionErrors`) and `internal/provideroverride`
as upstream main 2a6da14c8 (Aug 21) holds it (`ExpectedTarget`, `ValidateValue`, `WritesGroveTopology`;
role scopes named as its multinode leader/worker scopes). Left out: the check of known fields against
Grove's Go types (`validateKnownGroveShape`, whose messages are Go's JSON decoder errors)."""

from __future__ import annotations

from typing import Any, Final

from dynamo_infra.api import v1beta1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.field import Text
from dynamo_infra.api.admission.paths import At
from dynamo_infra.api.common import (
    GROVE_PROVIDER_API_VERSION,
    PROVIDER_TARGET_CLIQUE,
    PROVIDER_TARGET_GRAPH,
    PROVIDER_TARGET_SCALING_GROUP,
    ProviderOverride,
)
from dynamo_infra.api.errors import Problem

GROVE: Final = "grove"
COMPONENT: Final = "component"
# Provider-override scopes (`provideroverride.Scope`), by where the override sits.
SCOPE_ROOT: Final = "root"
SCOPE_COMPONENT: Final = "component"
ROLE_SCOPES: Final = {"leader": "multinode.leader", "worker": "multinode.worker"}
INTER_POD: Final = "InterPod"
TOPOLOGY: Final = "topologyConstraint"
DCD_UNSUPPORTED: Final = (
    "provider overrides are supported only for components embedded in a DynamoGraphDeployment"
)
OWNED: Final = "is Dynamo-owned or not enabled for provider override"
GROVE_ONLY: Final = "is currently supported only for Grove-backed DynamoGraphDeployment components"
TOPOLOGY_TWICE: Final = (
    "cannot be combined with spec.topologyConstraint or components[].topologyConstraint; use either the "
    "typed topology API or provider-native Grove topology overrides"
)
# `apivalidation.FieldImmutableErrorMsg`.
FIELD_IMMUTABLE: Final = "field is immutable"


def uses_scaling_group(c: v1beta1.ComponentFields) -> bool:
    """Grove renders the component as a PodCliqueScalingGroup (`UsesPCSG`)."""
    gms = c.experimental.gpu_memory_service if c.experimental else None
    grove = c.experimental.grove if c.experimental else None
    multinode = c.multinode is not None and c.multinode.node_count > 1
    return (
        multinode or (gms is not None and gms.mode == INTER_POD) or bool(grove and grove.force_scaling_group)
    )


def expected_target(scope: str, c: v1beta1.ComponentFields | None) -> tuple[str, str]:
    """The one target of a location, or why it has none (`ExpectedTarget` for Grove)."""
    if scope == SCOPE_ROOT or c is None:
        return PROVIDER_TARGET_GRAPH, ""
    if scope == SCOPE_COMPONENT:
        return (PROVIDER_TARGET_SCALING_GROUP if uses_scaling_group(c) else PROVIDER_TARGET_CLIQUE), ""
    if c.multinode is None or c.multinode.node_count <= 1:
        return "", f"scope {field.go_quote(scope)} requires a multinode component"
    gms = c.experimental.gpu_memory_service if c.experimental else None
    if gms is not None and gms.mode == INTER_POD:
        return "", f"scope {field.go_quote(scope)} is not supported for inter-pod GMS components"
    return PROVIDER_TARGET_CLIQUE, ""


def _target(o: ProviderOverride, scope: str, c: v1beta1.ComponentFields | None) -> str:
    """The override's target, defaulted from its location as the defaulting webhook does."""
    if o.target:
        return o.target
    expected, error = expected_target(scope, c)
    return "" if error or o.api_version != GROVE_PROVIDER_API_VERSION else expected


def override_problems(
    o: ProviderOverride,
    at: At,
    provider: str | None,
    scope: str,
    c: v1beta1.ComponentFields | None,
    *,
    supported: bool = True,
) -> list[Problem]:
    """One override at `at(...)` (its parts under `providerOverride`)."""
    if not supported:
        return [field.forbidden(at(), DCD_UNSUPPORTED)]
    if provider is None:
        return []
    if provider != GROVE:
        detail = (
            f"requires workload provider {field.go_quote(GROVE)}, but {field.go_quote(provider)} is selected"
        )
        return [field.forbidden(at(), detail)]
    if not o.api_version:
        return [field.required(at("apiVersion"), "is required")]
    if o.api_version != GROVE_PROVIDER_API_VERSION:
        return [field.not_supported(at("apiVersion"), Text(o.api_version), [GROVE_PROVIDER_API_VERSION])]
    expected, error = expected_target(scope, c)
    if error:
        return [field.forbidden(at(), error)]
    target = _target(o, scope, c)
    if target != expected:
        detail = f"must match the provider-context target {field.go_quote(expected)}"
        return [field.invalid(at("target"), Text(target), detail)]
    return [
        field.forbidden(at("value", *path), detail)
        if owned
        else field.invalid(at("value", *path), None, detail)
        for path, detail, owned in value_errors(target, o.value)
    ]


def value_errors(target: str, value: Any) -> list[tuple[tuple[str, ...], str, bool]]:
    """Paths the value writes that the target does not delegate to Grove, and missing ones:
    (path, detail, whether it is an ownership violation)."""
    if not isinstance(value, dict):
        return [((), "must be a JSON object", False)]
    if target == PROVIDER_TARGET_GRAPH:
        out = _unknown(value, (), "spec")
        spec = value.get("spec")
        if not isinstance(spec, dict):
            return [*out, (("spec",), "is required" if spec is None else "must be a JSON object", False)]
        out += _unknown(spec, ("spec",), "template")
        template = spec.get("template")
        if not isinstance(template, dict):
            problem = "is required" if template is None else "must be a JSON object"
            return [*out, (("spec", "template"), problem, False)]
        return out + _topology_owner(template, ("spec", "template"))
    if target in (PROVIDER_TARGET_CLIQUE, PROVIDER_TARGET_SCALING_GROUP):
        return _topology_owner(value, ())
    return [((), f"target {field.go_quote(target)} has no registered ownership policy", False)]


def _unknown(
    obj: dict[str, Any], at: tuple[str, ...], *allowed: str
) -> list[tuple[tuple[str, ...], str, bool]]:
    return [((*at, key), OWNED, True) for key in sorted(obj) if key not in allowed]


def _topology_owner(obj: dict[str, Any], at: tuple[str, ...]) -> list[tuple[tuple[str, ...], str, bool]]:
    out = _unknown(obj, at, TOPOLOGY)
    if TOPOLOGY not in obj:
        out.append(((*at, TOPOLOGY), "is required", False))
    elif not isinstance(obj[TOPOLOGY], dict):
        out.append(((*at, TOPOLOGY), "must be a JSON object", False))
    return out


def writes_topology(o: ProviderOverride | None, scope: str, c: v1beta1.ComponentFields | None) -> bool:
    """The override sets Grove's topology constraint (`WritesGroveTopology`)."""
    if o is None or not isinstance(o.value, dict):
        return False
    target = _target(o, scope, c)
    if target == PROVIDER_TARGET_GRAPH:
        spec = o.value.get("spec")
        template = spec.get("template") if isinstance(spec, dict) else None
        return isinstance(template, dict) and TOPOLOGY in template
    return target in (PROVIDER_TARGET_CLIQUE, PROVIDER_TARGET_SCALING_GROUP) and TOPOLOGY in o.value


def graph_override_problems(
    spec: v1beta1.DynamoGraphDeploymentSpec, spec_at: At, component_at: dict[str, At], provider: str | None
) -> list[Problem]:
    """Every override of a graph, and the typed and provider-native topology APIs not used together."""
    out = []
    if spec.provider_override is not None:
        out += override_problems(
            spec.provider_override, lambda *p: spec_at("providerOverride", *p), provider, SCOPE_ROOT, None
        )
    for c in spec.components or []:
        at = component_at[c.name]
        if c.provider_override is not None:
            out += override_problems(
                c.provider_override,
                lambda *p, at=at: at("providerOverride", *p),
                provider,
                SCOPE_COMPONENT,
                c,
            )
        for i, role in enumerate(c.roles or []):
            scope = ROLE_SCOPES.get(role.name)
            if role.provider_override is not None and scope is not None:
                out += override_problems(
                    role.provider_override,
                    lambda *p, at=at, i=i: at("roles", i, "providerOverride", *p),
                    provider,
                    scope,
                    c,
                )
    typed = spec.topology_constraint is not None or any(c.topology_constraint for c in spec.components or [])
    if provider != GROVE or not typed:
        return out
    if writes_topology(spec.provider_override, SCOPE_ROOT, None):
        out.append(field.forbidden(spec_at("providerOverride", "value"), TOPOLOGY_TWICE))
    for c in spec.components or []:
        at = component_at[c.name]
        if writes_topology(c.provider_override, SCOPE_COMPONENT, c):
            out.append(field.forbidden(at("providerOverride", "value"), TOPOLOGY_TWICE))
        for i, role in enumerate(c.roles or []):
            scope = ROLE_SCOPES.get(role.name)
            if scope is not None and writes_topology(role.provider_override, scope, c):
                out.append(field.forbidden(at("roles", i, "providerOverride", "value"), TOPOLOGY_TWICE))
    return out


def force_scaling_group_problems(c: v1beta1.ComponentFields, at: At, grove: bool | None) -> list[Problem]:
    grove_spec = c.experimental.grove if c.experimental else None
    if grove is False and grove_spec is not None and grove_spec.force_scaling_group:
        return [field.forbidden(at("experimental", "grove", "forceScalingGroup"), GROVE_ONLY)]
    return []


def override_update(
    new: ProviderOverride | None,
    old: ProviderOverride | None,
    at: At,
    scope: str,
    components: tuple[v1beta1.ComponentFields | None, v1beta1.ComponentFields | None] = (None, None),
) -> list[Problem]:
    """An override present before and after keeps its apiVersion and (defaulted) target."""
    if new is None or old is None:
        return []
    out = []
    if new.api_version != old.api_version:
        out.append(field.invalid(at("apiVersion"), Text(new.api_version), FIELD_IMMUTABLE))
    target = _target(new, scope, components[0])
    if target != _target(old, scope, components[1]):
        out.append(field.invalid(at("target"), Text(target), FIELD_IMMUTABLE))
    return out


def component_overrides_update(
    new: v1beta1.ComponentFields, old: v1beta1.ComponentFields, at: At
) -> list[Problem]:
    """The component's and its roles' (matched by name) override identities."""
    out = override_update(
        new.provider_override,
        old.provider_override,
        lambda *p: at("providerOverride", *p),
        SCOPE_COMPONENT,
        (new, old),
    )
    old_roles = {r.name: r for r in old.roles or []}
    for i, role in enumerate(new.roles or []):
        scope = ROLE_SCOPES.get(role.name)
        if role.name in old_roles and scope is not None:
            out += override_update(
                role.provider_override,
                old_roles[role.name].provider_override,
                lambda *p, i=i: at("roles", i, "providerOverride", *p),
                scope,
                (new, old),
            )
    return out


def force_scaling_group_update(
    new: v1beta1.ComponentFields, old: v1beta1.ComponentFields, at: At, owner: str
) -> list[Problem]:
    grove, old_grove = (
        (new.experimental.grove if new.experimental else None),
        (old.experimental.grove if old.experimental else None),
    )
    forced, old_forced = (
        bool(grove and grove.force_scaling_group),
        bool(old_grove and old_grove.force_scaling_group),
    )
    if forced == old_forced:
        return []
    value = None if grove is None else forced
    detail = f"cannot be toggled after creation; delete and recreate the {owner} to change it"
    return [field.invalid(at("experimental", "grove", "forceScalingGroup"), value, detail)]


def dcd_override_problems(c: v1beta1.ComponentFields, at: At) -> list[Problem]:
    """A standalone DCD may carry no override (it has no graph workload to lower it into)."""
    out = []
    if c.provider_override is not None:
        out += override_problems(
            c.provider_override, lambda *p: at("providerOverride", *p), None, "", c, supported=False
        )
    for i, role in enumerate(c.roles or []):
        if role.provider_override is not None and role.name in ROLE_SCOPES:
            out.append(field.forbidden(at("roles", i, "providerOverride"), DCD_UNSUPPORTED))
    return out
