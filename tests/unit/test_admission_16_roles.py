"""The 1.6 webhook's rules on the fields Dynamo 1.6 added: component roles and their pod templates
(with the planner release they need), provider overrides, `experimental.grove.forceScalingGroup`.
Each denied with the webhook's message at our field path, the neighbouring valid case allowed, on
create and on update."""

from __future__ import annotations

from typing import Any

from dynamo_infra.api import Resource, admission, v1alpha1, v1beta1
from dynamo_infra.api.admission import OperatorFeatures

IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.0"
GROVE = OperatorFeatures(grove=True)
PLAIN = OperatorFeatures()
GROVE_API = "grove.io/v1alpha1"
OWNED = "Forbidden: is Dynamo-owned or not enabled for provider override"


def template(*containers: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"spec": {"containers": list(containers) or [{"name": "main", "image": IMAGE}]}}
    if metadata:
        out["metadata"] = metadata
    return out


def multinode(roles: list[dict[str, Any]] | None = None, nodes: int = 3, **fields: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "w", "type": "worker", "multinode": {"nodeCount": nodes}, **fields}
    if roles is not None:
        c["roles"] = roles
    if roles is None or not any("podTemplate" in r for r in roles):
        c.setdefault("podTemplate", template())
    return c


def templated(
    leader: dict[str, Any] | None = None, worker: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    roles = [
        {"name": "leader", "podTemplate": leader or template()},
        {"name": "worker", "podTemplate": worker or template()},
    ]
    return multinode(roles, **fields)


def planner(image: str) -> dict[str, Any]:
    return {"name": "p", "type": "planner", "podTemplate": template({"name": "main", "image": image})}


def graph(*components: dict[str, Any], **spec: Any) -> Resource:
    doc = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"backendFramework": "vllm", "components": list(components), **spec},
    }
    return v1beta1.DynamoGraphDeployment.parse(doc)


def create(doc: Resource, features: OperatorFeatures | None = PLAIN) -> list[str]:
    return [str(p) for p in admission.review(doc, features).problems]


def update(old: Resource, new: Resource, features: OperatorFeatures = PLAIN) -> list[str]:
    return [str(p) for p in admission.review_update(old, new, features).problems]


# --- Roles ---


def test_roles_only_on_multinode_components() -> None:
    single = {"name": "w", "type": "worker", "podTemplate": template(), "roles": [{"name": "leader"}]}
    assert create(graph(single)) == [
        "spec.components[w].roles: Forbidden: roles are supported only for component shapes that define a "
        "role schema; this release supports multinode and LPX components"
    ]
    assert create(graph(multinode([{"name": "leader"}, {"name": "worker"}]))) == []


def test_roles_are_the_leader_and_the_worker_with_their_replicas() -> None:
    roles = [{"name": "leader"}, {"name": "head"}]
    assert create(graph(multinode(roles))) == [
        'spec.components[w].roles[1].name: Unsupported value: "head": supported values: "leader", "worker"',
        'spec.components[w].roles: Required value: must contain the "worker" role',
    ]
    wrong = [{"name": "leader", "replicas": 2}, {"name": "worker", "replicas": 2}]
    assert create(graph(multinode(wrong, nodes=3))) == [
        'spec.components[w].roles[0].replicas: Invalid value: 2: must equal 1 for multinode role "leader"'
    ]
    assert create(graph(multinode(wrong, nodes=4))) == [
        'spec.components[w].roles[0].replicas: Invalid value: 2: must equal 1 for multinode role "leader"',
        'spec.components[w].roles[1].replicas: Invalid value: 2: must equal 3 for multinode role "worker"',
    ]


def test_role_templates_need_a_main_container_and_no_power_limit() -> None:
    at = "spec.components[w].roles"
    no_main = templated(worker=template({"name": "side", "image": IMAGE}))
    assert create(graph(no_main)) == [
        f'{at}[1].podTemplate.spec.containers: Required value: must contain a container named "main"'
    ]
    no_image = templated(leader=template({"name": "main"}))
    assert create(graph(no_image)) == [
        f"{at}[0].podTemplate.spec.containers[0].image: Required value: is required"
    ]
    powered = templated(leader=template(annotations={"dynamo.nvidia.com/gpu-power-limit": "300"}))
    assert create(graph(powered)) == [
        f"{at}[0].podTemplate.metadata.annotations[dynamo.nvidia.com/gpu-power-limit]: Forbidden: role-specific "
        "power limits are not supported by power-aware planning"
    ]
    assert create(graph(templated())) == []


def test_role_templates_refuse_operator_launched_layouts() -> None:
    gms = templated(experimental={"gpuMemoryService": {"mode": "IntraPod"}})
    assert create(graph(gms)) == [
        "spec.components[w].experimental.gpuMemoryService: Forbidden: cannot be combined with role PodTemplates "
        "because this layout requires operator-managed launch wiring"
    ]


def test_role_templates_name_the_frontend_sidecar() -> None:
    sidecar = {"name": "fe", "image": IMAGE}
    c = templated(leader=template({"name": "main", "image": IMAGE}, sidecar), frontendSidecar="fe")
    assert create(graph(c)) == [
        'spec.components[w].roles[1].podTemplate.spec.containers: Invalid value: "fe": must contain the '
        "container named by frontendSidecar"
    ]
    both = templated(
        leader=template({"name": "main", "image": IMAGE}, sidecar),
        worker=template({"name": "main", "image": IMAGE}, sidecar),
        frontendSidecar="fe",
    )
    assert create(graph(both)) == []


def test_role_templates_need_a_runtime_version() -> None:
    untagged = template({"name": "main", "image": "nvcr.io/x/vllm-runtime:latest"})
    assert create(graph(templated(leader=untagged))) == [
        "spec.components[w].runtimeVersionOverride: Required value: is required when the specified main "
        "container image has no parseable semantic-version tag"
    ]
    assert create(graph(templated(leader=untagged, runtimeVersionOverride="1.6.0"))) == []
    # On an update only when the role's image (or the override) changes.
    old = graph(templated(leader=untagged, runtimeVersionOverride="1.6.0"))
    assert update(old, graph(templated(leader=untagged))) == [
        "spec.components[w].runtimeVersionOverride: Required value: is required when the specified main "
        "container image has no parseable semantic-version tag"
    ]


def test_role_templates_need_a_1_6_planner() -> None:
    at = "spec.components[w].roles"
    prefix = "Forbidden: role-specific PodTemplates require every planner component to use Dynamo runtime 1.6.0 or later"
    assert create(graph(templated(), planner("x/planner:1.5.1"))) == [
        f'{at}: {prefix}; planner component "p" resolves to 1.5.1'
    ]
    untagged = create(graph(templated(), planner("x/planner:latest")))
    assert (
        f'{at}: {prefix}; planner component "p" has no resolvable runtime version: image tag "latest" must contain '
        'a semantic version such as "1.1.0"'
    ) in untagged
    overridden = {**planner("x/planner:latest"), "runtimeVersionOverride": "1.5.0"}
    assert create(graph(templated(), overridden)) == [
        f'{at}: {prefix}; planner component "p" resolves to 1.5.0'
    ]
    assert create(graph(templated(), planner("x/planner:1.6.1"))) == []
    # Component roles without templates need no particular planner.
    assert (
        create(graph(multinode([{"name": "leader"}, {"name": "worker"}]), planner("x/planner:1.5.1"))) == []
    )


def test_roles_at_their_v1alpha1_path() -> None:
    doc = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {
            "backendFramework": "vllm",
            "services": {
                "w": {
                    "componentType": "worker",
                    "extraPodSpec": {"mainContainer": {"image": IMAGE}},
                    "roles": [{"name": "leader"}],
                }
            },
        },
    }
    assert create(v1alpha1.DynamoGraphDeployment.parse(doc)) == [
        "spec.services.w.roles: Forbidden: roles are supported only for component shapes that define a role "
        "schema; this release supports multinode and LPX components"
    ]


def test_role_model_changes_on_update() -> None:
    implicit = graph(multinode())
    explicit = graph(multinode([{"name": "leader"}, {"name": "worker"}]))
    assert update(implicit, explicit) == [] and update(explicit, implicit) == []
    pinned = {"apiVersion": GROVE_API, "value": {"topologyConstraint": {"packDomain": "rack"}}}
    overridden = graph(multinode([{"name": "leader", "providerOverride": pinned}, {"name": "worker"}]))
    assert update(implicit, overridden, GROVE) == [
        "spec.components[w].roles: Forbidden: cannot switch between implicit and explicit roles while changing "
        "the resolved role model; make the equivalent role structure explicit first"
    ]


# --- Provider overrides ---


def root(value: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"apiVersion": GROVE_API, "value": value, **fields}


TOPOLOGY = {"spec": {"template": {"topologyConstraint": {"packDomain": "rack"}}}}
SINGLE = {"name": "w", "type": "worker", "podTemplate": template()}


def test_provider_overrides_are_grove_only() -> None:
    doc = graph(SINGLE, providerOverride=root(TOPOLOGY))
    assert create(doc, GROVE) == []
    assert create(doc, None) == []
    assert create(doc, PLAIN) == [
        'spec.providerOverride: Forbidden: requires workload provider "grove", but "component" is selected'
    ]


def test_provider_override_schema_and_target() -> None:
    at = "spec.providerOverride"
    assert create(graph(SINGLE, providerOverride=root(TOPOLOGY, apiVersion="grove.io/v2")), GROVE) == [
        f'{at}.apiVersion: Unsupported value: "grove.io/v2": supported values: "grove.io/v1alpha1"'
    ]
    assert create(graph(SINGLE, providerOverride=root(TOPOLOGY, target="PodClique")), GROVE) == [
        f'{at}.target: Invalid value: "PodClique": must match the provider-context target "PodCliqueSet"'
    ]
    assert create(graph(SINGLE, providerOverride=root(TOPOLOGY, target="PodCliqueSet")), GROVE) == []


def test_provider_override_writes_only_the_topology_constraint() -> None:
    at = "spec.providerOverride.value"
    extra = {"spec": {"replicas": 2, "template": {"topologyConstraint": {}, "cliques": []}}}
    assert create(graph(SINGLE, providerOverride=root(extra)), GROVE) == [
        f"{at}.spec.replicas: {OWNED}",
        f"{at}.spec.template.cliques: {OWNED}",
    ]
    assert create(graph(SINGLE, providerOverride=root({"spec": {}})), GROVE) == [
        f"{at}.spec.template: Invalid value: null: is required"
    ]
    component = {**SINGLE, "providerOverride": root({"topologyConstraint": {}, "replicas": 1})}
    assert create(graph(component), GROVE) == [f"spec.components[w].providerOverride.value.replicas: {OWNED}"]


def test_component_and_role_override_targets() -> None:
    at = "spec.components[w].providerOverride.target"
    clique = {**SINGLE, "providerOverride": root({"topologyConstraint": {}}, target="PodCliqueTemplateSpec")}
    assert create(graph(clique), GROVE) == []
    forced = {**clique, "experimental": {"grove": {"forceScalingGroup": True}}}
    assert create(graph(forced), GROVE) == [
        f'{at}: Invalid value: "PodCliqueTemplateSpec": must match the provider-context target '
        '"PodCliqueScalingGroupConfig"'
    ]
    role = {
        "name": "leader",
        "providerOverride": root({"topologyConstraint": {}}, target="PodCliqueTemplateSpec"),
    }
    assert create(graph(multinode([role, {"name": "worker"}])), GROVE) == []


def test_provider_override_and_typed_topology_are_exclusive() -> None:
    detail = (
        "Forbidden: cannot be combined with spec.topologyConstraint or components[].topologyConstraint; use either "
        "the typed topology API or provider-native Grove topology overrides"
    )
    typed = {"clusterTopologyName": "t", "packDomain": "rack"}
    doc = graph(SINGLE, providerOverride=root(TOPOLOGY), topologyConstraint=typed)
    assert create(doc, GROVE) == [f"spec.providerOverride.value: {detail}"]
    assert create(graph(SINGLE, topologyConstraint=typed), GROVE) == []


def test_a_dcd_carries_no_provider_override() -> None:
    spec = {"type": "worker", "podTemplate": template(), "providerOverride": root({"topologyConstraint": {}})}
    doc = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": "d"},
        "spec": spec,
    }
    assert create(v1beta1.DynamoComponentDeployment.parse(doc), None) == [
        "spec.providerOverride: Forbidden: provider overrides are supported only for components embedded in a "
        "DynamoGraphDeployment"
    ]


def test_provider_override_identity_is_immutable() -> None:
    defaulted = graph({**SINGLE, "providerOverride": root({"topologyConstraint": {}})})
    explicit = graph(
        {**SINGLE, "providerOverride": root({"topologyConstraint": {}}, target="PodCliqueTemplateSpec")}
    )
    assert update(defaulted, explicit, GROVE) == []
    forced = {"grove": {"forceScalingGroup": True}}
    regrouped = graph(
        {**SINGLE, "experimental": forced, "providerOverride": root({"topologyConstraint": {}})}
    )
    assert update(explicit, regrouped, GROVE) == [
        'spec.components[w].providerOverride.target: Invalid value: "PodCliqueScalingGroupConfig": field is immutable',
        "spec.components[w].experimental.grove.forceScalingGroup: Invalid value: true: cannot be toggled after "
        "creation; delete and recreate the DynamoGraphDeployment to change it",
    ]


# --- experimental.grove.forceScalingGroup ---


def test_force_scaling_group_is_grove_only_and_immutable() -> None:
    at = "spec.components[w].experimental.grove.forceScalingGroup"
    forced = graph({**SINGLE, "experimental": {"grove": {"forceScalingGroup": True}}})
    assert create(forced, GROVE) == [] and create(forced, None) == []
    assert create(forced, PLAIN) == [
        f"{at}: Forbidden: is currently supported only for Grove-backed DynamoGraphDeployment components"
    ]
    plain = graph(SINGLE)
    unforced = graph({**SINGLE, "experimental": {"grove": {"forceScalingGroup": False}}})
    assert update(plain, unforced, GROVE) == []
    toggled = "cannot be toggled after creation; delete and recreate the DynamoGraphDeployment to change it"
    assert update(plain, forced, GROVE) == [f"{at}: Invalid value: true: {toggled}"]
    assert update(forced, plain, GROVE) == [f"{at}: Invalid value: null: {toggled}"]
    assert update(forced, unforced, GROVE) == [f"{at}: Invalid value: false: {toggled}"]
