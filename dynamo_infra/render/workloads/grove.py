"""Grove pathway (DGD controller): the whole graph as one PodCliqueSet. Single-node components are
cliques; multinode and inter-pod GMS components are PodCliqueScalingGroups of leader/worker (and
GMS weight-server) cliques. Also the Grove addressing of multinode pods."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from dynamo_infra.api import DynamoValidationError, Problem, v1beta1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.field import Text, go_quote
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.api.releases import RUNTIME_VERSION_IN_WORKER_HASH
from dynamo_infra.render import names
from dynamo_infra.render import roles as role_templates
from dynamo_infra.render.backends.table import Backend, component_backend
from dynamo_infra.render.components.epp import has_epp
from dynamo_infra.render.components.table import defaults_for, sub_component_type
from dynamo_infra.render.context import DISCOVERY_KUBERNETES, ComponentContext, GraphContext
from dynamo_infra.render.features import checkpoint, gms, kvtransfer
from dynamo_infra.render.multinode import Placement, Role, gpu_count, gpu_limit, with_empty_resources
from dynamo_infra.render.podspec import pod_spec
from dynamo_infra.render.workloads import capture, grove_override
from dynamo_infra.render.workloads.schedulers import scheduler_for

API_VERSION = "grove.io/v1alpha1"
KIND = "PodCliqueSet"
# Grove's PodCliqueSet webhook limit on PCS + PCSG + PCLQ name lengths together.
MAX_COMBINED_NAME_LENGTH = 45
# Shortest PCS name a truncation may produce.
MIN_PCS_NAME_LENGTH = 8
# Clique suffixes of a multinode component.
LEADER_SUFFIX = "ldr"
WORKER_SUFFIX = "wkr"
# Startup ordering of cliques: any order, or explicit `startsAfter` dependencies.
STARTUP_ANY_ORDER = "CliqueStartupTypeAnyOrder"
STARTUP_EXPLICIT = "CliqueStartupTypeExplicit"
# Values of `nvidia.com/grove-update-strategy`.
UPDATE_STRATEGIES = ("RollingRecreate", "OnDelete")
# Kinds whose readiness stands for a component, and the Grove index of the only PCS replica.
PODCLIQUE = "PodClique"
SCALING_GROUP = "PodCliqueScalingGroup"
PCS_REPLICA_INDEX = 0
# Env Grove sets in every pod of a scaling group: the pod's index across the group's cliques.
PCSG_POD_INDEX = "$(GROVE_PCSG_POD_INDEX)"


@dataclass(frozen=True)
class GroveDeployer:
    """Grove env: the PCSG replica's leader pod, rank from the clique pod index (shell arithmetic).

    In the inter-pod GMS layout every rank is its own clique, so the rank is static and the
    leader is the pod of the same index in the leader clique.
    """

    inter_pod: bool = False
    rank: int = 0

    def leader_hostname(self, component: str) -> str:
        index = "$(GROVE_PCLQ_POD_INDEX)" if self.inter_pod else "0"
        return f"$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-{component.lower()}-{LEADER_SUFFIX}-{index}.$(GROVE_HEADLESS_SERVICE)"

    def node_rank(self) -> tuple[str, bool]:
        return (str(self.rank), False) if self.inter_pod else ("$((GROVE_PCLQ_POD_INDEX + 1))", True)

    def pod_rank(self) -> str:
        """The PCSG-wide pod index (leader 0); the engine rank under inter-pod GMS, whose scaling
        group also holds weight-server cliques."""
        return str(self.rank) if self.inter_pod else PCSG_POD_INDEX

    def needs_dns_wait(self) -> bool:
        return False

    def host_names(self, component: str, nodes: int) -> list[str]:
        c, prefix, svc = (
            component.lower(),
            "$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)",
            "$(GROVE_HEADLESS_SERVICE)",
        )
        if self.inter_pod:
            workers = [
                f"{prefix}-{c}-{WORKER_SUFFIX}-{r}-$(GROVE_PCLQ_POD_INDEX).{svc}" for r in range(1, nodes)
            ]
        else:
            workers = [f"{prefix}-{c}-{WORKER_SUFFIX}-{i}.{svc}" for i in range(nodes - 1)]
        return [self.leader_hostname(component), *workers]


@dataclass(frozen=True)
class Member:
    """One component on the Grove pathway: its hub spec and its rendering context."""

    component: v1beta1.Component
    ctx: ComponentContext


def worker_hash_suffix(g: GraphContext, whash: str | None) -> str | None:
    """The worker hash Grove worker cliques carry (label and DYN_NAMESPACE_WORKER_SUFFIX), or None.

    The operator stamps it on the worker pod templates of a new PodCliqueSet, and of an existing one
    when the worker generation changes (PR #12769, 1.5.0; `dgd_grove_workload_renderer.go`
    applyGroveWorkerHashSuffix at 05f14653a). Rendering knows no PodCliqueSet, so it is taken as on
    when a worker runs runtime >= 1.5.0: the version enters the worker hash then, so that is always
    a new generation, and a graph below it keeps rendering as at our pin. Role templates carry their
    own images, so each role's runtime counts.
    """
    workers = [
        role_templates.component_for_role(c, role)
        for c in g.dgd.spec.components or []
        if c.is_worker
        for role in role_templates.TEMPLATE_ROLES
    ]
    if not whash or not any(RUNTIME_VERSION_IN_WORKER_HASH.enabled(g.runtime_version(c)) for c in workers):
        return None
    return whash


def with_worker_hash_label(c: v1beta1.Component, whash: str) -> v1beta1.Component:
    """The worker component with the worker hash on its pod template labels (as the operator sets it)."""
    return role_templates.with_template_label(c, names.LABEL_WORKER_HASH, whash)


def roles(ctx: ComponentContext) -> list[gms.CliqueRole]:
    """expandRolesForComponent: the cliques a component becomes."""
    name = ctx.name
    if ctx.inter_pod_gms:
        return gms.inter_pod_roles(name, ctx.node_count, ctx.total_engine_pods)
    if ctx.node_count > 1:
        return [
            gms.CliqueRole(f"{name}-{LEADER_SUFFIX}", Role.LEADER, 1),
            gms.CliqueRole(f"{name}-{WORKER_SUFFIX}", Role.WORKER, ctx.node_count - 1),
        ]
    if ctx.uses_scaling_group:
        # forceScalingGroup: one pod per clique; the scaling group's replicas scale it.
        return [gms.CliqueRole(name, Role.MAIN, 1)]
    replicas = ctx.spec.get("replicas")
    return [gms.CliqueRole(name, Role.MAIN, 1 if replicas is None else int(replicas))]


def pcs_name(dgd: str, members: Sequence[Member]) -> str:
    """The DGD name, truncated with a hash suffix when PCS + PCSG + clique names would be too long."""
    budget = 0
    for m in members:
        lower = m.ctx.name.lower()
        if m.ctx.uses_scaling_group:
            longest = max([lower, *(r.name.lower() for r in roles(m.ctx))], key=len)
            budget = max(budget, len(lower) + len(longest))
        else:
            budget = max(budget, len(lower))
    limit = max(MAX_COMBINED_NAME_LENGTH - budget, MIN_PCS_NAME_LENGTH)
    if len(dgd) <= limit:
        return dgd
    return f"{dgd[: limit - 5]}-{fnv32a(dgd) & 0xFFFF:04x}"


def pod_name_problems(dgd: str, members: Sequence[Member], at: Callable[[str], str]) -> list[Problem]:
    """The webhook's Grove pod-name budget: PCS + (PCSG + longest clique, or component) names may not
    exceed MAX_COMBINED_NAME_LENGTH. `at(component)` is where a component's `name` is written."""
    pcs = pcs_name(dgd, members)
    out = []
    for m in members:
        name, lower = m.component.name, m.component.name.lower()
        length, detail = len(pcs) + len(lower), "PCS name + component name"
        if m.ctx.uses_scaling_group:
            longest = max([lower, *(r.name.lower() for r in roles(m.ctx))], key=len)
            length += len(longest)
            detail = f"PCS name + PCSG name + longest PodClique name {go_quote(longest)}"
        if length > MAX_COMBINED_NAME_LENGTH:
            out.append(
                field.invalid(
                    at(name),
                    Text(name),
                    f"combined resource name length {length} exceeds the {MAX_COMBINED_NAME_LENGTH}-character "
                    f"pod-name limit ({detail}); shorten DynamoGraphDeployment name {go_quote(dgd)} or component "
                    f"name {go_quote(name)}",
                )
            )
    return out


def fnv32a(text: str) -> int:
    h = 0x811C9DC5
    for byte in text.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def topology(topology_name: str, pack_domain: str | None) -> Manifest | None:
    if not pack_domain:
        return None
    out: Manifest = {"pack": {"required": pack_domain}}
    return {"topologyName": topology_name, **out} if topology_name else out


def component_topology(g: GraphContext, c: v1beta1.Component) -> Manifest | None:
    """A component's pack domain; it names the cluster topology only when the graph packs nothing."""
    domain = c.topology_constraint.pack_domain if c.topology_constraint else None
    graph = g.dgd.spec.topology_constraint
    name = graph.cluster_topology_name if graph is not None and not graph.pack_domain else ""
    return topology(name, domain)


def _raw_template_meta(c: v1beta1.Component, key: str) -> dict[str, str]:
    meta = (c.pod_template.metadata if c.pod_template else None) or {}
    return dict(meta.get(key) or {})


def clique_labels(g: GraphContext, m: Member, role: Role) -> dict[str, str]:
    """generateLabels: system labels, user labels over them, system labels re-applied."""
    c, ctx = m.component, m.ctx

    def system() -> dict[str, str]:
        out = {
            names.LABEL_SELECTOR: names.component_base_name(g.name, c.name),
            names.LABEL_GRAPH: g.name,
            names.LABEL_COMPONENT: c.name,
        }
        if ctx.type:
            out[names.LABEL_COMPONENT_TYPE] = ctx.type
        if has_epp(g.dgd) and c.is_worker:
            out[names.LABEL_COMPONENT_CLASS] = names.COMPONENT_CLASS_WORKER
        sub_type = sub_component_type(ctx)
        if sub_type:
            out[names.LABEL_SUB_COMPONENT_TYPE] = sub_type
        out[names.LABEL_NAMESPACE] = ctx.runtime_dynamo_namespace
        return out

    labels = system()
    if ctx.model_ref:
        labels[names.LABEL_BASE_MODEL_HASH] = names.model_hash(ctx.model_ref)
    if g.annotations.get(names.ANNOTATION_ENABLE_METRICS) != "false":
        labels[names.LABEL_METRICS] = "true"
    labels.update(g.dgd.spec.labels or {})
    labels.update(ctx.legacy.labels)
    labels.update(_raw_template_meta(c, "labels"))
    labels.update(system())
    if g.k8s_discovery and role != Role.GMS:
        labels[names.LABEL_DISCOVERY_BACKEND] = DISCOVERY_KUBERNETES
        labels[names.LABEL_DISCOVERY_ENABLED] = "true"
    if ctx.inter_pod_failover and role != Role.GMS:
        labels[names.LABEL_FAILOVER_ENGINE_GROUP_MEMBER] = "true"
    if role != Role.GMS:
        labels.update(capture.restore_target_metadata(ctx)[0])
    return dict(sorted(labels.items()))


def clique_annotations(g: GraphContext, m: Member, role: Role, ready: bool | None) -> dict[str, str]:
    """generateAnnotations: DGD spec, preserved component, pod template (with propagated keys)."""
    c, ctx = m.component, m.ctx
    template = _raw_template_meta(c, "annotations")
    for key in names.PROPAGATED_ANNOTATIONS:
        if key in g.annotations and key not in template:
            template[key] = g.annotations[key]
    template[names.ANNOTATION_DISCOVERY_BACKEND] = g.discovery_backend
    out = {**(g.dgd.spec.annotations or {}), **ctx.legacy.annotations, **template}
    for key in names.TOPOLOGY_SOURCE_ANNOTATIONS:
        out.pop(key, None)
    policy = kvtransfer.policy_of(g.dgd)
    if role != Role.GMS and policy and c.is_worker:
        out.update(kvtransfer.topology_annotations(policy))
    if role != Role.GMS:
        out.update(checkpoint.restore_candidate_annotations(ctx))
        out.update(capture.restore_target_metadata(ctx)[1])
    restart_at = g.restart_at.get(c.name)
    if restart_at:
        out[names.ANNOTATION_RESTART_AT] = restart_at
    return dict(sorted(out.items()))


def with_scheduler(g: GraphContext, cl: Manifest) -> Manifest:
    """The gang scheduler on the clique's pods (and its queue) unless the user chose another one."""
    scheduler = scheduler_for(g.options)
    pod = cl["spec"]["podSpec"]
    if scheduler is None or pod.get("schedulerName") not in (None, "", scheduler.scheduler_name):
        return cl
    out = {**cl, "spec": {**cl["spec"], "podSpec": {**pod, "schedulerName": scheduler.scheduler_name}}}
    labels = scheduler.clique_labels(g)
    if labels:
        out["labels"] = dict(sorted({**cl["labels"], **labels}.items()))
    return out


def role_pod_spec(m: Member, r: gms.CliqueRole) -> Manifest:
    """generatePodSpecForRole: weight-server pods, GMS engine pods, or the plain role pod."""
    ctx = m.ctx
    gpus = gpu_count((ctx.container("main") or {}).get("resources"))
    if r.role == Role.GMS:
        base = pod_spec(ctx, Placement(GroveDeployer(), Role.MAIN, 1, gpus, ctx.parent_name))
        return gms.weight_server_pod(base, r.rank, gpu_limit((ctx.container("main") or {}).get("resources")))
    deployer = (
        GroveDeployer(inter_pod=True, rank=r.rank)
        if ctx.inter_pod_gms and ctx.node_count > 1
        else GroveDeployer()
    )
    pod = pod_spec(ctx, Placement(deployer, r.role, ctx.node_count, gpus, ctx.parent_name))
    return gms.engine_pod(pod, r.rank, ctx.inter_pod_failover) if ctx.inter_pod_gms else pod


def clique(g: GraphContext, m: Member, r: gms.CliqueRole, ready: bool | None) -> Manifest:
    """buildCliqueForRole: a leader or worker clique renders from its role's template when the roles
    carry them."""
    m = Member(role_templates.component_for_role(m.component, r.role), role_templates.for_role(m.ctx, r.role))
    ctx = m.ctx
    minimum = 1
    if not ctx.uses_scaling_group and m.component.min_available is not None:
        minimum = m.component.min_available
    if ctx.node_count > 1 and not ctx.inter_pod_failover:
        minimum = r.replicas
    replicas = r.replicas
    if r.role != Role.GMS and checkpoint.gates_replicas(ctx, ready):
        replicas = 0
    name = r.name.lower()
    out: Manifest = {
        "name": name,
        "labels": clique_labels(g, m, r.role),
        "annotations": clique_annotations(g, m, r.role, ready),
        "spec": {
            "roleName": name,
            "replicas": replicas,
            "minAvailable": minimum,
            "podSpec": with_empty_resources(role_pod_spec(m, r)),
        },
    }
    tc = None if ctx.uses_scaling_group else component_topology(g, m.component)
    if tc:
        out["topologyConstraint"] = tc
    return with_scheduler(g, out)


def _starts_after(
    backend: Backend, nodes: int, rs: list[gms.CliqueRole], inter_pod: bool
) -> dict[str, list[str]]:
    """Clique name -> the cliques it starts after (multinode leaders after workers, inter-pod GMS)."""
    ordered = backend.leader_starts_after_workers and nodes > 1
    if not ordered and not inter_pod:
        return {}
    workers = [r.name.lower() for r in rs if r.role == Role.WORKER]
    gms_by_rank = {r.rank: r.name.lower() for r in rs if r.role == Role.GMS}
    out: dict[str, list[str]] = {}
    for r in rs:
        after: list[str] = []
        if inter_pod and r.role != Role.GMS and r.rank in gms_by_rank:
            after.append(gms_by_rank[r.rank])
        if ordered and r.role == Role.LEADER:
            after.extend(workers)
        if after:
            out[r.name.lower()] = after
    return out


def scaling_group(g: GraphContext, m: Member, rs: list[gms.CliqueRole], ready: bool | None) -> Manifest:
    ctx, c = m.ctx, m.component
    out: Manifest = {"name": c.name.lower(), "cliqueNames": [r.name.lower() for r in rs]}
    if checkpoint.gates_replicas(ctx, ready):
        out["replicas"] = 0
    elif c.replicas is not None:
        out["replicas"] = c.replicas
    out["minAvailable"] = c.min_available if c.min_available is not None else 1
    tc = component_topology(g, c)
    if tc:
        out["topologyConstraint"] = tc
    if ctx.inter_pod_gms:
        out["resourceSharing"] = gms.resource_sharing(ctx, rs)
    return out


def update_strategy(g: GraphContext) -> Manifest | None:
    value = g.annotations.get(names.ANNOTATION_GROVE_UPDATE_STRATEGY)
    if value is None:
        return None
    if value not in UPDATE_STRATEGIES:
        raise DynamoValidationError(
            [
                Problem(
                    f"metadata.annotations[{names.ANNOTATION_GROVE_UPDATE_STRATEGY}]",
                    f'unsupported Grove update strategy annotation "{names.ANNOTATION_GROVE_UPDATE_STRATEGY}"="{value}": '
                    f'supported values are "{UPDATE_STRATEGIES[0]}" and "{UPDATE_STRATEGIES[1]}"',
                )
            ]
        )
    return {"type": value}


def pod_clique_set(
    g: GraphContext, members: Sequence[Member], ready: Mapping[str, bool] | None = None
) -> Manifest:
    """GenerateGrovePodCliqueSet (`ready`: observed readiness of each component's checkpoint)."""
    ready = ready or {}
    name = pcs_name(g.name, members)
    labels = {**(g.dgd.spec.labels or {}), names.LABEL_GRAPH: g.name}
    annotations = dict(g.dgd.spec.annotations or {})
    scheduler = scheduler_for(g.options)
    if scheduler is not None:
        annotations.update(scheduler.pod_clique_set_annotations(g))
    template: Manifest = {
        "headlessServiceConfig": {"publishNotReadyAddresses": True},
        "cliqueStartupType": STARTUP_ANY_ORDER,
    }
    if g.dgd.spec.priority_class_name:
        template["priorityClassName"] = g.dgd.spec.priority_class_name
    delay = g.options.grove_termination_delay
    if delay:
        template["terminationDelay"] = delay
    graph_tc = g.dgd.spec.topology_constraint
    if graph_tc is not None:
        tc = topology(graph_tc.cluster_topology_name, graph_tc.pack_domain)
        if tc:
            template["topologyConstraint"] = tc
    cliques: list[Manifest] = []
    groups: list[Manifest] = []
    claims: list[Manifest] = []
    for m in members:
        rs = roles(m.ctx)
        component_ready = ready.get(m.component.name)
        component_cliques = [clique(g, m, r, component_ready) for r in rs]
        after = _starts_after(component_backend(m.ctx), m.ctx.node_count, rs, m.ctx.inter_pod_gms)
        for cl in component_cliques:
            if cl["name"] in after:
                cl["spec"]["startsAfter"] = after[cl["name"]]
                template["cliqueStartupType"] = STARTUP_EXPLICIT
        cliques.extend(component_cliques)
        if m.ctx.inter_pod_gms:
            claims.extend(gms.rank_claim_templates(m.ctx, rs))
        if m.ctx.uses_scaling_group:
            groups.append(scaling_group(g, m, rs, component_ready))
    template["cliques"] = cliques
    if groups:
        template["podCliqueScalingGroups"] = groups
    if claims:
        template["resourceClaimTemplates"] = claims
    grove_override.apply(g.dgd, template)
    meta: Manifest = {"name": name, "namespace": g.namespace, "labels": dict(sorted(labels.items()))}
    if annotations:
        meta["annotations"] = dict(sorted(annotations.items()))
    spec: Manifest = {"replicas": 1}
    strategy = update_strategy(g)
    if strategy:
        spec["updateStrategy"] = strategy
    spec["template"] = template
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": spec}


def scale_target(pcs: str, m: Member, ready: bool | None) -> Manifest:
    """The PodClique / PodCliqueScalingGroup that carries a component's replicas and readiness.

    `replicas` is what the operator writes through its scale subresource on every reconcile: the
    component's replicas, 0 while it waits for its checkpoint, None (left alone) when unset.
    """
    kind = SCALING_GROUP if m.ctx.uses_scaling_group else PODCLIQUE
    replicas = m.component.replicas
    if checkpoint.gates_replicas(m.ctx, ready):
        replicas = 0
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "name": f"{pcs}-{PCS_REPLICA_INDEX}-{m.component.name.lower()}",
        "replicas": replicas,
    }


def component_service(g: GraphContext, m: Member) -> Manifest | None:
    """The component's ClusterIP Service on the Grove path (with k8s discovery, or when its type
    always has one)."""
    c, ctx = m.component, m.ctx
    k8s = g.k8s_discovery
    defaults = defaults_for(ctx.type)
    if not (k8s or defaults.service_without_discovery):
        return None
    labels = {**(g.dgd.spec.labels or {}), **ctx.legacy.labels, **_raw_template_meta(c, "labels")}
    if k8s:
        labels[names.LABEL_DISCOVERY_BACKEND] = DISCOVERY_KUBERNETES
        labels[names.LABEL_DISCOVERY_ENABLED] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": names.service_name(names.component_base_name(g.name, c.name)),
            "namespace": g.namespace,
            "labels": dict(sorted(labels.items())),
        },
        "spec": {
            "selector": {
                names.LABEL_COMPONENT_TYPE: ctx.type,
                names.LABEL_NAMESPACE: ctx.runtime_dynamo_namespace,
                names.LABEL_COMPONENT: c.name,
            },
            "ports": [defaults.service_port(ctx)],
        },
    }
