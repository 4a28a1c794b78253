"""Types shared by both API versions, with the CRDs' enums, patterns, minimums and defaults."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from dynamo_infra.api.base import ApiModel
from dynamo_infra.api.errors import QUANTITY_PATTERN, Problem, join_path
from dynamo_infra.api.manifest import Manifest

GROUP = "nvidia.com"
# The container of a pod template that runs the Dynamo runtime.
MAIN_CONTAINER = "main"

BackendFramework = Literal["sglang", "vllm", "trtllm"]

QuantityString = Annotated[str, StringConstraints(pattern=QUANTITY_PATTERN)]
Quantity = QuantityString | int
# DNS-label-like topology domain names.
DOMAIN_PATTERN = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"
Domain = Annotated[str, StringConstraints(pattern=DOMAIN_PATTERN)]
# Container names (DNS labels).
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DnsLabel = Annotated[str, StringConstraints(pattern=DNS_LABEL_PATTERN, min_length=1, max_length=63)]
RuntimeVersion = Annotated[
    str, StringConstraints(pattern=r"^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$")
]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
NonNegInt32 = Annotated[int, Field(ge=0, le=2**31 - 1)]
PosInt32 = Annotated[int, Field(ge=1, le=2**31 - 1)]
LABEL_KEY_PATTERN = (
    r"^(([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?"
    r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$"
)
# Longest label-key prefix (a DNS subdomain) the CRD allows.
LABEL_KEY_PREFIX_MAX = 253

# Fewest nodes a multinode component may span.
MIN_NODE_COUNT = 2

# Annotation naming a graph's workload provider (`component` or `grove`): set by the operator's
# defaulting webhook on create, immutable, user values refused (1.6-era `internal/consts`, PR #12942).
WORKLOAD_PROVIDER_ANNOTATION = "nvidia.com/workload-provider"
WORKLOAD_PROVIDER_COMPONENT = "component"
WORKLOAD_PROVIDER_GROVE = "grove"
WORKLOAD_PROVIDERS = frozenset({WORKLOAD_PROVIDER_COMPONENT, WORKLOAD_PROVIDER_GROVE})
# Per-GPU power limit (watts) the operator puts on a component's Pods and projects to
# `status.components[*].gpuPowerLimitWatts` (1.6-era operator).
GPU_POWER_LIMIT_ANNOTATION = "dynamo.nvidia.com/gpu-power-limit"

# Component roles (1.6-era `api/v1beta1/common.go@80b177f2` ComponentRoleSpec): the two
# Pod-producing parts of a multinode component, and the LPX ones (LPX is not rendered here).
ROLE_LEADER = "leader"
ROLE_WORKER = "worker"
ROLE_LPX_CONDUCTOR = "conductor"
ROLE_LPX_AGENT = "agent"
# Most roles a component may declare (CRD `maxItems`).
MAX_ROLES = 2
# Pods of a multinode leader role when `replicas` is omitted (the defaulting webhook persists it).
DEFAULT_LEADER_ROLE_REPLICAS = 1
# The Grove provider-override API version and its targets, by where the override sits.
GROVE_PROVIDER_API_VERSION = "grove.io/v1alpha1"
PROVIDER_TARGET_GRAPH = "PodCliqueSet"
PROVIDER_TARGET_CLIQUE = "PodCliqueTemplateSpec"
PROVIDER_TARGET_SCALING_GROUP = "PodCliqueScalingGroupConfig"

# The DGD-only component type whose Pods an operator-generated LPXGraphDeployment owns (1.6-era
# `api/v1beta1/lpx_types.go@86e34d1e`); its configuration block has the same name.
LPX = "lpx"
LPX_REFUSED = (
    "LPX components need the Dynamo operator's LPX controller (it runs them through an "
    "operator-generated LPXGraphDeployment); dynamo-infra does not render LPX graphs"
)


def lpx_problems(components: list[tuple[tuple[str | int, ...], Any]], type_key: str) -> list[Problem]:
    """One problem per component (at its path) that is of type `lpx` or has an `lpx` block."""
    out: list[Problem] = []
    for at, component in components:
        if not isinstance(component, dict):
            continue
        if component.get(type_key) == LPX:
            out.append(Problem(join_path(*at, type_key), f"{type_key} lpx: {LPX_REFUSED}"))
        elif LPX in component:
            out.append(Problem(join_path(*at, LPX), LPX_REFUSED))
    return out


ComponentKind = Literal["PodClique", "PodCliqueScalingGroup", "Deployment", "LeaderWorkerSet"]
DGDState = Literal["initializing", "pending", "successful", "failed"]


class Multinode(ApiModel):
    """A component spanning several Pods: only `nodeCount` (defaulted, immutable) in 1.6."""

    node_count: Annotated[int, Field(ge=MIN_NODE_COUNT)] = MIN_NODE_COUNT


class ProviderOverride(ApiModel):
    """A sparse provider-native fragment for the workload unit of its location (graph, component,
    role). Grove only: `grove.io/v1alpha1`, `topologyConstraint` only (the webhook's rules)."""

    api_version: NonEmpty
    # May be omitted where the location has one target; admission resolves and persists it.
    target: str | None = None
    # Free-form (the CRD preserves unknown fields), an object.
    value: Manifest


RoleName = Annotated[str, StringConstraints(pattern=DNS_LABEL_PATTERN, min_length=1, max_length=63)]


class ComponentRoleBase(ApiModel):
    """One named Pod-producing role of a compound component (each version adds its `podTemplate`)."""

    name: RoleName
    replicas: PosInt32 | None = None
    provider_override: ProviderOverride | None = None


def default_role_replicas(data: Any) -> Any:
    """A component (wire dict) with omitted multinode role replicas filled as the operator's
    defaulting webhook persists them: leader 1, worker `nodeCount` - 1 (1.6-era
    `internal/webhook/defaulting/dynamographdeployment_handler.go@86e34d1e`)."""
    if not isinstance(data, dict):
        return data
    multinode, roles = data.get("multinode"), data.get("roles")
    if not isinstance(multinode, dict) or not isinstance(roles, list):
        return data
    nodes = multinode.get("nodeCount", MIN_NODE_COUNT)
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < MIN_NODE_COUNT:
        return data
    wanted = {ROLE_LEADER: DEFAULT_LEADER_ROLE_REPLICAS, ROLE_WORKER: nodes - 1}
    filled = [
        {**r, "replicas": wanted[r["name"]]}
        if isinstance(r, dict) and r.get("name") in wanted and r.get("replicas") is None
        else r
        for r in roles
    ]
    return data if filled == roles else {**data, "roles": filled}


def check_min_available(min_available: int | None, replicas: int | None) -> None:
    """CRD rule: minAvailable ≤ replicas (default 1) unless replicas is 0."""
    if (
        min_available is not None
        and replicas != 0
        and min_available > (replicas if replicas is not None else 1)
    ):
        raise ValueError("minAvailable must be less than or equal to replicas unless replicas is 0")


class TopologyConstraint(ApiModel):
    """Component-level topology packing (`packDomain` is required)."""

    pack_domain: Domain


class RestartStrategy(ApiModel):
    type: Literal["Sequential", "Parallel"] = "Sequential"
    order: list[str] | None = None


class Restart(ApiModel):
    """Request a rolling restart by changing `id` (must be unset when the graph is created)."""

    id: NonEmpty
    strategy: RestartStrategy | None = None


class ConfigMapKeyRef(ApiModel):
    key: str
    name: str = ""  # CRD default: the empty name
    optional: bool | None = None


class EPPConfig(ApiModel):
    """Endpoint picker configuration: inline `config` (preserved as written) or a ConfigMap key."""

    config: Manifest | None = None
    config_map_ref: ConfigMapKeyRef | None = None


class KVTransferPolicy(ApiModel):
    label_key: (
        Annotated[str, StringConstraints(pattern=LABEL_KEY_PATTERN, min_length=1, max_length=317)] | None
    ) = None
    cluster_topology_name: NonEmpty | None = None
    domain: Domain
    enforcement: Literal["required", "preferred"] = "required"
    preferred_weight: Annotated[float, Field(ge=0, le=1)] | None = None

    @model_validator(mode="after")
    def _rules(self) -> KVTransferPolicy:
        if (self.label_key is None) == (self.cluster_topology_name is None):
            raise ValueError("exactly one of labelKey or clusterTopologyName is required")
        # `enforcement` is defaulted by the API server before these rules run.
        if self.enforcement == "preferred" and self.preferred_weight is None:
            raise ValueError("preferredWeight is required when enforcement is preferred")
        if self.preferred_weight is not None and self.enforcement != "preferred":
            raise ValueError("preferredWeight may only be set when enforcement is preferred")
        if (
            self.label_key
            and "/" in self.label_key
            and len(self.label_key.split("/")[0]) > LABEL_KEY_PREFIX_MAX
        ):
            raise ValueError("labelKey prefix must be 253 characters or less")
        return self


class DGDExperimental(ApiModel):
    kv_transfer_policy: KVTransferPolicy | None = None


class CheckpointIdentity(ApiModel):
    """What a checkpoint captures (deprecated as an explicit input)."""

    model: str
    backend_framework: Literal["vllm", "sglang", "trtllm"]
    dynamo_version: str | None = None
    tensor_parallel_size: PosInt32 = 1
    pipeline_parallel_size: PosInt32 = 1
    dtype: str | None = None
    max_model_len: PosInt32 | None = None
    extra_parameters: dict[str, str] | None = None


class CheckpointJob(ApiModel):
    """Overrides of the checkpoint Job a graph component creates."""

    pod_template: Manifest | None = None
    gms_client_containers: list[DnsLabel] | None = None


class CheckpointBase(ApiModel):
    """Checkpoint/restore of a component (fields common to both versions)."""

    mode: Literal["Auto", "Manual"] | None = None
    checkpoint_ref: str | None = None
    identity: CheckpointIdentity | None = None
    job: CheckpointJob | None = None
    deletion_policy: Literal["Delete", "Retain"] = "Delete"
    startup_policy: Literal["Immediate", "WaitForCheckpoint"] = "Immediate"
    target_container_name: DnsLabel = MAIN_CONTAINER

    @model_validator(mode="after")
    def _job_or_ref(self) -> CheckpointBase:
        if self.job is not None and self.checkpoint_ref:
            raise ValueError("checkpoint.job cannot be set when checkpointRef is specified")
        return self


class ExtraClientPod(ApiModel):
    name: DnsLabel
    pod_template: Manifest


class GMSBase(ApiModel):
    """GPU memory service settings common to both versions (modes differ in case)."""

    device_class_name: str = "gpu.nvidia.com"  # CRD default DRA DeviceClass
    extra_client_containers: list[DnsLabel] | None = None
    extra_client_pods: list[ExtraClientPod] | None = None

    def _check_clients(self, intra: str, inter: str, mode: str) -> None:
        if self.extra_client_containers and mode != intra:
            raise ValueError(f"extraClientContainers is only supported with mode={intra}")
        if self.extra_client_pods and mode != inter:
            raise ValueError(f"extraClientPods is only supported with mode={inter}")
        if self.extra_client_pods:
            raise ValueError("extraClientPods is reserved for inter-pod GMS and is not implemented yet")


class ReplicaStatus(ApiModel):
    """Per-component replica counts in DGD/DCD status."""

    component_kind: ComponentKind
    component_names: list[str] | None = None
    replicas: NonNegInt32
    updated_replicas: NonNegInt32
    ready_replicas: NonNegInt32 | None = None
    available_replicas: NonNegInt32 | None = None
    scheduled_replicas: NonNegInt32 | None = None
    runtime_namespace: str | None = None
    # What the 1.6 planner reads (1.6-era `api/v1beta1/common.go@80b177f2` ComponentReplicaStatus).
    served_model_name: str | None = None
    runtime_component_name: str | None = None
    gpu_power_limit_watts: Annotated[int, Field(ge=1, le=2**63 - 1)] | None = None
    gpus_per_engine: Annotated[int, Field(ge=0, le=2**63 - 1)] | None = None
    gpus_per_replica: Annotated[int, Field(ge=0, le=2**63 - 1)] | None = None


class CheckpointStatus(ApiModel):
    checkpoint_name: str | None = None
    checkpoint_id: str | None = Field(default=None, alias="checkpointID")
    identity_hash: str | None = None
    ready: bool | None = None


class PlacementStatus(ApiModel):
    score: Annotated[float, Field(ge=0, le=1)] | None = None
    state: Literal["Reported", "Partial", "Unsupported", "Unknown"] | None = None


class RestartStatus(ApiModel):
    observed_id: str | None = Field(default=None, alias="observedID")
    phase: str | None = None
    in_progress: list[str] | None = None


class RollingUpdateStatusBase(ApiModel):
    phase: Literal["Pending", "InProgress", "Completed", "Failed", ""] | None = None
    start_time: str | None = None
    end_time: str | None = None


class GraphStatusBase(ApiModel):
    """DGD status fields of both versions; each adds its per-component replicas and rolling update."""

    state: DGDState = "initializing"
    observed_generation: int | None = None
    conditions: list[Manifest] | None = None
    checkpoints: dict[str, CheckpointStatus] | None = None
    placement: PlacementStatus | None = None
    restart: RestartStatus | None = None
