"""Multinode roles as the 1.6 operator renders them: role-specific pod templates (a role's complete
`podTemplate` stands in for the component's when its leader or worker pods are built, and owns the
role's launch command: the backends then generate no leader/worker launch, see `vllm`, `sglang`,
`trtllm`), and the portable topology aliases `DYNAMO_RANK` / `DYNAMO_LEADER_ADDRESS` in the main
container of new multinode graphs (also used by the generated vLLM mp and SGLang flags).

Ported from 1.6-era `deploy/operator/internal/dynamo/graph.go` (tu-kim/dynamo@3f3d3dfa22e790642d10c1ffcf5d72750f4f91a8:
`EnsureComponentPodTemplates`, `buildCliqueForRole` (EffectiveComponentForRole, role launch ownership),
`addMultinodeTopologyEnvVars`, `usesMultinodeTopologyAliases`), `lws.go` and `grove.go` (`GetPodRank`)
at the same commit, and the doc `docs/fern/pages/kubernetes/installation/multinode-orchestration.md`
there ("Role-Specific Pod Templates", "Portable Topology Environment Variables"). Neither is gated on
the runtime version: role templates exist only when `roles[].podTemplate` is set (no pre-1.6 graph
has it), the aliases follow the DGD's operator origin version (the `compatibility` gates).
"""

from __future__ import annotations

import dataclasses
import re

from dynamo_infra.api import v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.api.merge import merge_env
from dynamo_infra.render import names
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.multinode import Placement, Role

# Operator-owned env of multinode main containers: the leader's DNS name and this pod's rank.
LEADER_ADDRESS_ENV = "DYNAMO_LEADER_ADDRESS"
RANK_ENV = "DYNAMO_RANK"
LEADER_ADDRESS_REF = f"$({LEADER_ADDRESS_ENV})"
RANK_REF = f"$({RANK_ENV})"
# First operator release whose new DGDs get the aliases (`compatibility.MultinodeTopologyAliases`;
# the doc: "create the DGD with Dynamo Operator 1.6.0 or later").
TOPOLOGY_ALIASES_MIN_ORIGIN_VERSION = (1, 6, 0)
# Roles that have a template of their own (the multinode leader and worker).
TEMPLATE_ROLES = (Role.LEADER, Role.WORKER)
# Masterminds/semver as the compatibility gates parse the origin version (`v`, missing parts allowed).
_SEMVER = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


def has_role_pod_templates(spec: Manifest) -> bool:
    """`HasRolePodTemplates`: the component's pods come from its roles' complete templates."""
    return any(isinstance(r, dict) and r.get("podTemplate") is not None for r in spec.get("roles") or [])


def role_pod_templates(spec: Manifest) -> list[Manifest]:
    """The roles' templates (the sources `EnsureComponentPodTemplates` returns in role mode)."""
    return [r["podTemplate"] for r in spec.get("roles") or [] if r.get("podTemplate") is not None]


def role_template(spec: Manifest, role: Role) -> Manifest | None:
    for r in spec.get("roles") or []:
        if r.get("name") == role.value:
            template = r.get("podTemplate")
            return None if template is None else dict(template)
    return None


def for_role(ctx: ComponentContext, role: Role) -> ComponentContext:
    """EffectiveComponentForRole: the context whose pod template is the role's own. The roles stay in
    the spec, so the backends see that the authored template owns the role's launch command."""
    if role not in TEMPLATE_ROLES or not has_role_pod_templates(ctx.spec):
        return ctx
    return dataclasses.replace(ctx, spec={**ctx.spec, "podTemplate": role_template(ctx.spec, role) or {}})


def component_for_role(c: v1beta1.Component, role: Role) -> v1beta1.Component:
    """The DGD component as its role's pods see it (the role's template as the component's)."""
    if role not in TEMPLATE_ROLES or not any(r.pod_template is not None for r in c.roles or []):
        return c
    template = next((r.pod_template for r in c.roles or [] if r.name == role.value), None)
    return c.model_copy(update={"pod_template": template})


def _with_label(template: Manifest, key: str, value: str) -> Manifest:
    meta = dict(template.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), key: value}
    return {**template, "metadata": meta}


def with_template_label(c: v1beta1.Component, key: str, value: str) -> v1beta1.Component:
    """The component with a label on every pod template source (`EnsureComponentPodTemplates`: the
    roles' templates when they carry them, else the component's, created when absent)."""
    wire = c.to_wire()
    if has_role_pod_templates(wire):
        wire["roles"] = [
            {**r, "podTemplate": _with_label(r["podTemplate"], key, value)}
            if r.get("podTemplate") is not None
            else r
            for r in wire["roles"]
        ]
        return v1beta1.Component.parse(wire)
    return v1beta1.Component.parse(
        {**wire, "podTemplate": _with_label(dict(wire.get("podTemplate") or {}), key, value)}
    )


def _semver(text: str) -> tuple[tuple[int, int, int], bool] | None:
    m = _SEMVER.match(text.strip())
    if not m:
        return None
    return (int(m[1]), int(m[2] or 0), int(m[3] or 0)), bool(m[4])


def uses_topology_aliases(annotations: dict[str, str]) -> bool:
    """The DGD's operator origin version is 1.6.0 or later (absent or invalid: off; a pre-release of
    1.6.0 is below it, as semver orders them)."""
    parsed = _semver(annotations.get(names.ANNOTATION_ORIGIN_VERSION) or "")
    if parsed is None:
        return False
    version, prerelease = parsed
    if version == TOPOLOGY_ALIASES_MIN_ORIGIN_VERSION:
        return not prerelease
    return version > TOPOLOGY_ALIASES_MIN_ORIGIN_VERSION


def with_topology_env(ctx: ComponentContext, container: Manifest, where: Placement) -> Manifest:
    """addMultinodeTopologyEnvVars: the aliases over same-named template env (MergeEnvs, sorted).

    Role pod templates are 1.6 API: only an operator of 1.6.0 or later (which stamps its origin
    version on the DGD) ever admitted such a graph, so they get the aliases whatever origin version our
    cluster options stamp (`operatorOriginVersion` defaults to the pin's 1.4.0).
    """
    aliased = uses_topology_aliases(ctx.template_annotations) or has_role_pod_templates(ctx.spec)
    if not where.multinode or not aliased:
        return container
    aliases = [
        {"name": LEADER_ADDRESS_ENV, "value": where.deployer.leader_hostname(ctx.name)},
        {"name": RANK_ENV, "value": where.deployer.pod_rank()},
    ]
    return {**container, "env": merge_env(container.get("env"), aliases)}
