"""The webhook's rules for a DynamoGraphDeployment being created: its annotations, its spec on the
v1beta1 view (components, restart order, topology constraints, KV transfer policy, inter-pod GPU
memory service), each component's rules, and the v1alpha1 view's.

Rules that need a cluster lookup (ClusterTopologyBinding domains) are not applied; the Grove pod
name budget is checked where Grove's names are known (`render.checks.admission`)."""

from __future__ import annotations

import re

from dynamo_infra.api import v1alpha1, v1beta1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.component import GMS_INTER_POD, Scope, component_problems
from dynamo_infra.api.admission.elastic import elastic_ep_problems
from dynamo_infra.api.admission.features import OperatorFeatures, grove_pathway
from dynamo_infra.api.admission.field import Text
from dynamo_infra.api.admission.legacy import (
    ANNOTATION_VLLM_BACKEND,
    INTRA_POD,
    Legacy,
    both_views,
    dynamo_namespace,
    graph_has_legacy_fields,
    invalid_vllm_backend,
)
from dynamo_infra.api.admission.multinode import multinode_type_problems
from dynamo_infra.api.admission.override import COMPONENT, GROVE, graph_override_problems
from dynamo_infra.api.admission.paths import Paths
from dynamo_infra.api.admission.power import power_limit_problems
from dynamo_infra.api.admission.provider import workload_provider_problems
from dynamo_infra.api.admission.review import Review
from dynamo_infra.api.admission.roles import planner_runtime_problems
from dynamo_infra.api.admission.runtimeversion import is_loose_semver
from dynamo_infra.api.errors import Problem

ANNOTATION_ORIGIN_VERSION = "nvidia.com/dynamo-operator-origin-version"
ANNOTATION_GROVE_UPDATE_STRATEGY = "nvidia.com/grove-update-strategy"
# Grove PodCliqueSet update strategies the annotation may name.
GROVE_UPDATE_STRATEGIES = ("RollingRecreate", "OnDelete")
ANNOTATION_DISCOVERY_MODE = "nvidia.com/dynamo-kube-discovery-mode"
DISCOVERY_MODES = ("pod", "container")
# The discovery mode intra-pod failover needs (both engines share the pod).
FAILOVER_DISCOVERY_MODE = "container"
# The only backend the inter-pod GMS layout supports.
INTER_POD_BACKEND = "vllm"
UNSET = "<unset>"
# ClusterTopologyBinding names: DNS-1123 subdomains.
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS_SUBDOMAIN_MAX = 253
DNS_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def graph_review(
    dgd: v1alpha1.DynamoGraphDeployment | v1beta1.DynamoGraphDeployment,
    features: OperatorFeatures | None,
    namespace: str | None = None,
    *,
    creating: bool = True,
    old: v1beta1.DynamoGraphDeploymentSpec | None = None,
) -> Review:
    """The webhook's answer to creating `dgd` (`features` None: only the rules that do not depend on
    the cluster); `namespace` is where it is created (default: its own). On an update (`creating`
    false) the runtime version is checked against the old object instead (`update`), and `old` (its
    v1beta1 spec) keeps an unchanged legacy multinode component."""
    alpha = isinstance(dgd, v1alpha1.DynamoGraphDeployment)
    paths = Paths(alpha)
    # The webhook validates the v1beta1 view, and the v1alpha1 view for fields only v1alpha1 has.
    hub, view = both_views(dgd, v1alpha1.DynamoGraphDeployment, v1beta1.DynamoGraphDeployment)
    annotations = dict(dgd.metadata.annotations or {})
    grove, requirement = grove_pathway(features, annotations) if features is not None else (None, "")
    problems = metadata_problems(annotations, _has_intra_pod_failover(hub, view))
    if hub is not None:
        problems += _spec_problems(hub.spec, paths, grove, requirement)
        runtime = creating and not alpha
        scope = Scope(
            features, grove, inference_pool=True, runtime_version=runtime, allow_missing_override=False
        )
        old_components = {c.name: c for c in (old.components or [])} if old is not None else {}
        # The workload provider the operator's defaulting webhook selects (unknown at load).
        provider = None if grove is None else GROVE if grove else COMPONENT
        component_at = {c.name: paths.component(c.name) for c in hub.spec.components or []}
        problems += graph_override_problems(hub.spec, paths.spec, component_at, provider)
        problems += planner_runtime_problems(hub.spec, component_at)
        for c in hub.spec.components or []:
            at = paths.component(c.name)
            problems += component_problems(c, at, scope)
            problems += multinode_type_problems(c, old_components.get(c.name), at)
            problems += power_limit_problems(c, at)
            problems += elastic_ep_problems(hub.spec.backend_framework, c, at)
    legacy = Legacy(runtime_version=alpha and creating, allow_missing_override=False)
    if view is not None and (legacy.runtime_version or graph_has_legacy_fields(view)):
        legacy.pvcs(view.spec)
        ns = namespace if namespace is not None else dgd.metadata.namespace or ""
        services = view.spec.services or {}
        for name in sorted(services):
            s = services[name]
            legacy.component(
                s, paths.legacy_component(name), dynamo_namespace(s.global_dynamo_namespace, ns, dgd.name)
            )
    return Review(tuple(problems + legacy.problems), tuple(legacy.warnings))


def metadata_problems(annotations: dict[str, str], intra_pod_failover: bool) -> list[Problem]:
    def at(key: str) -> str:
        return f"metadata.annotations[{key}]"

    out = []
    origin = annotations.get(ANNOTATION_ORIGIN_VERSION)
    if origin is not None and not is_loose_semver(origin):
        out.append(field.invalid(at(ANNOTATION_ORIGIN_VERSION), Text(origin), "must be valid semver"))
    backend = invalid_vllm_backend(annotations)
    if backend is not None:
        out.append(field.invalid(at(ANNOTATION_VLLM_BACKEND), Text(backend), 'must be "mp" or "ray"'))
    strategy = annotations.get(ANNOTATION_GROVE_UPDATE_STRATEGY)
    if strategy is not None and strategy not in GROVE_UPDATE_STRATEGIES:
        out.append(
            field.not_supported(at(ANNOTATION_GROVE_UPDATE_STRATEGY), Text(strategy), GROVE_UPDATE_STRATEGIES)
        )
    mode = annotations.get(ANNOTATION_DISCOVERY_MODE)
    if mode is not None and mode not in DISCOVERY_MODES:
        out.append(field.not_supported(at(ANNOTATION_DISCOVERY_MODE), Text(mode), DISCOVERY_MODES))
    out += workload_provider_problems(annotations)
    if intra_pod_failover and mode != FAILOVER_DISCOVERY_MODE:
        out.append(
            field.invalid(
                at(ANNOTATION_DISCOVERY_MODE),
                Text(mode or ""),
                f"must be {field.go_quote(FAILOVER_DISCOVERY_MODE)} when intra-pod failover is configured",
            )
        )
    return out


def _has_intra_pod_failover(
    hub: v1beta1.DynamoGraphDeployment | None, view: v1alpha1.DynamoGraphDeployment | None
) -> bool:
    if hub is not None:
        return any(
            c.experimental is not None
            and c.experimental.failover is not None
            and c.experimental.failover.mode != GMS_INTER_POD
            for c in hub.spec.components or []
        )
    return view is not None and any(
        s.failover is not None and s.failover.enabled and s.failover.mode == INTRA_POD
        for s in (view.spec.services or {}).values()
    )


def _spec_problems(
    spec: v1beta1.DynamoGraphDeploymentSpec, paths: Paths, grove: bool | None, requirement: str
) -> list[Problem]:
    out = []
    components = spec.components or []
    if spec.priority_class_name and grove is False:
        out.append(field.forbidden(paths.spec("priorityClassName"), requirement))
    if not components:
        out.append(field.required(paths.spec("components"), "must have at least one component"))
    for c in components:
        gms = c.experimental.gpu_memory_service if c.experimental else None
        if gms is None or gms.mode != GMS_INTER_POD:
            continue
        mode_at = paths.component(c.name)("experimental", "gpuMemoryService", "mode")
        if grove is False:
            out.append(field.forbidden(mode_at, requirement))
        if spec.backend_framework != INTER_POD_BACKEND:
            detected = spec.backend_framework or UNSET
            out.append(
                field.invalid(
                    mode_at,
                    gms.mode,
                    f"the inter-pod GMS layout is currently supported only for vLLM (detected backend: {detected})",
                )
            )
    out += _restart_problems(spec, paths)
    out += _topology_problems(spec, paths)
    out += _kv_transfer_problems(spec, paths, grove, requirement)
    return out


def _restart_problems(spec: v1beta1.DynamoGraphDeploymentSpec, paths: Paths) -> list[Problem]:
    strategy = spec.restart.strategy if spec.restart else None
    order = list(strategy.order or []) if strategy else []
    if strategy is None or not order:
        return []
    order_at = paths.spec("restart", "strategy", "order")
    if strategy.type == "Parallel":
        return [field.forbidden(order_at, "cannot be specified when strategy is parallel")]
    names = sorted({c.name for c in spec.components or []})
    unique = list(dict.fromkeys(order))
    out = []
    if len(unique) != len(order):
        out.append(field.invalid(order_at, order, "must be unique"))
    if len(unique) != len(names):
        out.append(
            field.invalid(order_at, order, "must have the same number of unique components as the deployment")
        )
    for i, name in enumerate(order):
        if name not in names:
            out.append(field.not_supported(f"{order_at}[{i}]", Text(name), names))
    return out


def _topology_problems(spec: v1beta1.DynamoGraphDeploymentSpec, paths: Paths) -> list[Problem]:
    components = spec.components or []
    if spec.topology_constraint is None and all(c.topology_constraint is None for c in components):
        return []
    if spec.topology_constraint is None:
        return [
            field.required(
                paths.spec("topologyConstraint"), "is required when any component topology constraint is set"
            )
        ]
    if spec.topology_constraint.pack_domain:
        return []
    return [
        field.required(
            paths.component(c.name)("topologyConstraint"),
            "is required because spec.topologyConstraint.packDomain is not set",
        )
        for c in components
        if c.topology_constraint is None
    ]


def _kv_transfer_problems(
    spec: v1beta1.DynamoGraphDeploymentSpec, paths: Paths, grove: bool | None, requirement: str
) -> list[Problem]:
    policy = spec.experimental.kv_transfer_policy if spec.experimental else None
    if policy is None or not policy.cluster_topology_name:
        return []
    name = policy.cluster_topology_name
    name_at = paths.spec("experimental", "kvTransferPolicy", "clusterTopologyName")
    errors = []
    if len(name) > DNS_SUBDOMAIN_MAX:
        errors.append(f"must be no more than {DNS_SUBDOMAIN_MAX} characters")
    if not _DNS_SUBDOMAIN.fullmatch(name):
        errors.append(DNS_SUBDOMAIN_MESSAGE)
    out = [field.invalid(name_at, Text(name), "; ".join(errors))] if errors else []
    if grove is False:
        out.append(field.forbidden(name_at, requirement))
    return out
