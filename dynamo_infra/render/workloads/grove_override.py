"""Grove provider overrides: the sparse `providerOverride` fragments of a graph, its components and
their multinode roles, written into the PodCliqueSet the operator rendered.

Each fragment's `topologyConstraint` replaces (no merge) the one at its destination: the graph's
(`value.spec.template.topologyConstraint`) at `spec.template.topologyConstraint`; a component's at its
clique or scaling group (by its target) named after the component; a role's at the clique of that
role (`<component>-ldr` / `<component>-wkr`). The graph's goes first, then per component its own,
the leader's and the worker's. A destination the rendering lacks is an error.

Ported from `deploy/operator/internal/provideroverride/grove.go` (`ComposeGroveOverrides`) as upstream
main 2a6da14c8 (Aug 21) holds it, where the role fragments sat at `multinode.leader|worker`; the 1.6
API puts them on `roles[]` (1.6-era `api/v1beta1/common.go@80b177f2` ComponentRoleSpec). Identity
and value rules are admission's (`api/admission/override.py`); an omitted target is resolved here as
the defaulting webhook persists it.
"""

from __future__ import annotations

from typing import Any

from dynamo_infra.api import DynamoValidationError, Problem, v1beta1
from dynamo_infra.api.admission.override import ROLE_SCOPES, SCOPE_COMPONENT, expected_target
from dynamo_infra.api.common import (
    PROVIDER_TARGET_GRAPH,
    PROVIDER_TARGET_SCALING_GROUP,
    ROLE_LEADER,
    ProviderOverride,
)
from dynamo_infra.api.manifest import Manifest, copy_json

# The one Grove field an override may write.
TOPOLOGY = "topologyConstraint"
# Clique-name suffixes of a multinode component's roles.
ROLE_SUFFIXES = {ROLE_LEADER: "ldr", "worker": "wkr"}


def _topology(o: ProviderOverride, target: str, at: str) -> Any:
    """The override's `topologyConstraint` subtree (under `spec.template` for a PodCliqueSet)."""
    value: Any = o.value
    path = ("spec", "template", TOPOLOGY) if target == PROVIDER_TARGET_GRAPH else (TOPOLOGY,)
    for key in path:
        if not isinstance(value, dict) or key not in value:
            raise DynamoValidationError([Problem(at, f"value.{'.'.join(path)} is required")])
        value = value[key]
    return copy_json(value)


def _set_named(template: Manifest, key: str, name: str, topology: Any, at: str) -> None:
    for item in template.get(key) or []:
        if item.get("name") == name:
            item[TOPOLOGY] = topology
            return
    message = f'generated destination spec.template.{key}["{name}"] was not found'
    raise DynamoValidationError([Problem(at, message)])


def apply(dgd: v1beta1.DynamoGraphDeployment, template: Manifest) -> None:
    """ComposeGroveOverrides on the PodCliqueSet's `spec.template` (changed in place)."""
    graph = dgd.spec.provider_override
    if graph is not None:
        template[TOPOLOGY] = _topology(graph, PROVIDER_TARGET_GRAPH, "spec.providerOverride")
    for i, c in enumerate(dgd.spec.components or []):
        at = f"spec.components[{i}]"
        name = c.name.lower()
        if c.provider_override is not None:
            target = c.provider_override.target or expected_target(SCOPE_COMPONENT, c)[0]
            key = "podCliqueScalingGroups" if target == PROVIDER_TARGET_SCALING_GROUP else "cliques"
            where = f"{at}.providerOverride"
            _set_named(template, key, name, _topology(c.provider_override, target, where), where)
        for j, role in enumerate(c.roles or []):
            if role.provider_override is None or role.name not in ROLE_SCOPES:
                continue
            where = f"{at}.roles[{j}].providerOverride"
            topology = _topology(role.provider_override, "", where)
            _set_named(template, "cliques", f"{name}-{ROLE_SUFFIXES[role.name]}", topology, where)
