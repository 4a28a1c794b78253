"""nvidia.com/v1alpha1: DynamoGraphDeployment (`spec.services` keyed by name), DynamoComponentDeployment,
DynamoCheckpoint, DynamoGraphDeploymentScalingAdapter, DynamoModel and the deprecated
DynamoGraphDeploymentRequest.

Kubernetes sub-objects (`extraPodSpec`, probes, `envs`, ...) are plain dicts checked against the
CRD's own OpenAPI schema (see `dynamo_infra.api.kube`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal

from pydantic import Field, model_validator

from dynamo_infra.api import kubenames
from dynamo_infra.api.base import ApiModel, Resource
from dynamo_infra.api.common import (
    MAX_ROLES,
    BackendFramework,
    CheckpointBase,
    CheckpointIdentity,
    ComponentRoleBase,
    DGDExperimental,
    Domain,
    EPPConfig,
    GMSBase,
    GraphStatusBase,
    Multinode,
    NonEmpty,
    NonNegInt32,
    PosInt32,
    ProviderOverride,
    Quantity,
    QuantityString,
    ReplicaStatus,
    Restart,
    RollingUpdateStatusBase,
    RuntimeVersion,
    TopologyConstraint,
    check_min_available,
    default_role_replicas,
    lpx_problems,
)
from dynamo_infra.api.errors import Problem, join_path
from dynamo_infra.api.manifest import Manifest

API_VERSION: Final = "nvidia.com/v1alpha1"
GMSMode = Literal["intraPod", "interPod"]
# Default GPU memory service / failover mode in v1alpha1 spelling.
DEFAULT_GMS_MODE: GMSMode = "intraPod"
# Most PVCs a graph may declare.
MAX_PVCS = 100


class V1alpha1Resource(Resource):
    """A custom resource in nvidia.com/v1alpha1."""

    api_version: Literal["nvidia.com/v1alpha1"] = "nvidia.com/v1alpha1"


class ResourceItem(ApiModel):
    """Dynamo's resource shorthand. Values must parse as quantities (the operator drops bad ones silently)."""

    cpu: QuantityString | None = None
    memory: QuantityString | None = None
    gpu: QuantityString | None = None
    gpu_type: str | None = None
    custom: dict[str, QuantityString] | None = None


class ResourceClaim(ApiModel):
    name: str
    request: str | None = None


class Resources(ApiModel):
    """`gpu` becomes `nvidia.com/gpu` (or `gpuType`) on the main container."""

    requests: ResourceItem | None = None
    limits: ResourceItem | None = None
    claims: list[ResourceClaim] | None = None


def quantity_sign(q: str | int) -> int:
    """-1, 0 or 1: the sign of a quantity (its mantissa decides; suffixes only scale)."""
    if isinstance(q, int):
        return (q > 0) - (q < 0)
    m = re.match(r"^([+-])?([0-9]*\.?[0-9]*)", q)
    try:
        magnitude = float(m.group(2) or "0") if m else 0.0
    except ValueError:
        magnitude = 0.0
    if magnitude == 0:
        return 0
    return -1 if m and m.group(1) == "-" else 1


def quantity_is_positive(q: str | int) -> bool:
    """Whether a quantity is > 0 (CEL `quantity(q).isGreaterThan(quantity('0'))`)."""
    return quantity_sign(q) > 0


class SharedMemory(ApiModel):
    """/dev/shm size; `disabled: true` removes it."""

    disabled: bool | None = None
    size: Quantity | None = None

    @model_validator(mode="after")
    def _size_when_enabled(self) -> SharedMemory:
        if not self.disabled and (self.size is None or not quantity_is_positive(self.size)):
            raise ValueError("size is required when disabled is false")
        return self


class ScalingAdapter(ApiModel):
    enabled: bool = False


class Autoscaling(ApiModel):
    """Deprecated HPA settings: accepted, ignored by the operator at the pin."""

    enabled: bool | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    behavior: Manifest | None = None
    metrics: list[Manifest] | None = None


class IngressTLS(ApiModel):
    secret_name: str | None = None


class Ingress(ApiModel):
    enabled: bool | None = None
    host: str | None = None
    host_prefix: str | None = None
    host_suffix: str | None = None
    ingress_controller_class_name: str | None = None
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    tls: IngressTLS | None = None
    use_virtual_service: bool | None = None
    virtual_service_gateway: str | None = None


class VolumeMount(ApiModel):
    name: str
    mount_point: str | None = None
    use_as_compilation_cache: bool = False


class PVC(ApiModel):
    """`spec.pvcs[]`: a claim the graph uses, created when `create` is true."""

    name: str
    create: bool | None = None
    storage_class: str | None = None
    size: Quantity | None = None
    volume_access_mode: str | None = None

    @model_validator(mode="after")
    def _create_needs_details(self) -> PVC:
        if self.create and (
            self.size is None or self.storage_class is None or self.volume_access_mode is None
        ):
            raise ValueError("When create is true, size, storageClass, and volumeAccessMode are required")
        return self


class FrontendSidecar(ApiModel):
    image: str
    args: list[str] | None = None
    env_from_secret: str | None = None
    envs: list[Manifest] | None = None


class GPUMemoryService(GMSBase):
    enabled: bool
    mode: GMSMode = DEFAULT_GMS_MODE

    @model_validator(mode="after")
    def _clients_match_mode(self) -> GPUMemoryService:
        self._check_clients("intraPod", "interPod", self.mode)
        return self


class Failover(ApiModel):
    enabled: bool
    mode: GMSMode = DEFAULT_GMS_MODE
    num_shadows: PosInt32 = 1


class Checkpoint(CheckpointBase):
    enabled: bool = False


class ExtraPodMetadata(ApiModel):
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None


class ComponentRole(ComponentRoleBase):
    """One role of a compound component (1.6-era `api/v1alpha1/common.go@80b177f2` ComponentRoleSpec);
    its `podTemplate` is a Kubernetes PodTemplateSpec checked by the CRD schema."""

    pod_template: Manifest | None = None


class ComponentSpec(ApiModel):
    """One entry of `spec.services` (the operator's DynamoComponentDeploymentSharedSpec)."""

    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    service_name: str | None = None
    component_type: str | None = None
    sub_component_type: str | None = None
    dynamo_namespace: str | None = None
    global_dynamo_namespace: bool | None = None
    replicas: NonNegInt32 | None = None
    min_available: PosInt32 | None = None
    resources: Resources | None = None
    envs: list[Manifest] | None = None
    env_from_secret: str | None = None
    volume_mounts: list[VolumeMount] | None = None
    liveness_probe: Manifest | None = None
    readiness_probe: Manifest | None = None
    extra_pod_metadata: ExtraPodMetadata | None = None
    # A Kubernetes PodSpec plus `mainContainer` (a Container), validated by the CRD schema.
    extra_pod_spec: Manifest | None = None
    multinode: Multinode | None = None
    shared_memory: SharedMemory | None = None
    scaling_adapter: ScalingAdapter | None = None
    autoscaling: Autoscaling | None = None
    ingress: Ingress | None = None
    model_ref: ModelReference | None = None
    epp_config: EPPConfig | None = None
    frontend_sidecar: FrontendSidecar | None = None
    gpu_memory_service: GPUMemoryService | None = None
    failover: Failover | None = None
    checkpoint: Checkpoint | None = None
    topology_constraint: TopologyConstraint | None = None
    runtime_version_override: RuntimeVersion | None = None
    roles: Annotated[list[ComponentRole], Field(max_length=MAX_ROLES)] | None = None
    provider_override: ProviderOverride | None = None

    @model_validator(mode="before")
    @classmethod
    def _role_defaults(cls, data: Any) -> Any:
        return default_role_replicas(data)

    @model_validator(mode="after")
    def _min_available(self) -> ComponentSpec:
        check_min_available(self.min_available, self.replicas)
        names = [r.name for r in self.roles or []]
        if len(set(names)) != len(names):
            raise ValueError("roles: role names must be unique")
        return self


class ModelReference(ApiModel):
    name: str
    revision: str | None = None


class GraphTopologyConstraint(ApiModel):
    """Graph-level topology: the ClusterTopology to use (`topologyProfile`) and a default pack domain."""

    topology_profile: NonEmpty
    pack_domain: Domain | None = None


class DynamoGraphDeploymentSpec(ApiModel):
    provider_override: ProviderOverride | None = None
    services: dict[str, ComponentSpec] | None = None
    envs: list[Manifest] | None = None
    backend_framework: BackendFramework | None = None
    pvcs: Annotated[list[PVC], Field(max_length=MAX_PVCS)] | None = None
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    priority_class_name: str | None = None
    restart: Restart | None = None
    topology_constraint: GraphTopologyConstraint | None = None
    experimental: DGDExperimental | None = None


class ServiceReplicaStatus(ReplicaStatus):
    component_name: str


class RollingUpdateStatus(RollingUpdateStatusBase):
    updated_services: list[str] | None = None


class DynamoGraphDeploymentStatus(GraphStatusBase):
    services: dict[str, ServiceReplicaStatus] | None = None
    rolling_update: RollingUpdateStatus | None = None


class DynamoGraphDeployment(V1alpha1Resource):
    """A Dynamo inference graph (v1alpha1, deprecated in favour of v1beta1; still the storage version)."""

    kind: Literal["DynamoGraphDeployment"] = "DynamoGraphDeployment"
    spec: DynamoGraphDeploymentSpec
    status: DynamoGraphDeploymentStatus | None = None

    @classmethod
    def _refused(cls, data: Any) -> list[Problem]:
        services = _services(data)
        return lpx_problems([(("spec", "services", k), s) for k, s in services.items()], "componentType")

    @classmethod
    def _extra_problems(cls, data: Any, *, lenient: bool) -> list[Problem]:
        """Each `spec.services` key becomes the component's name (the CRD leaves keys unchecked)."""
        keys = _services(data)
        out = [
            Problem(join_path("spec", "services", str(key)), f"service name {key!r} {why}")
            for key in keys
            if (why := kubenames.COMPONENT_NAME.broken(str(key)))
        ]
        return out + super()._extra_problems(data, lenient=lenient)


def _services(data: Any) -> dict[str, Any]:
    """`spec.services` of a wire DGD when it is a mapping (else empty: the model reports its type)."""
    spec = data.get("spec") if isinstance(data, dict) else None
    services = spec.get("services") if isinstance(spec, dict) else None
    return {str(k): v for k, v in services.items()} if isinstance(services, dict) else {}


class DynamoComponentDeploymentSpec(ComponentSpec):
    backend_framework: BackendFramework | None = None


class DynamoComponentDeploymentStatus(ApiModel):
    conditions: list[Manifest]
    observed_generation: int | None = None
    pod_selector: dict[str, str] | None = None
    service: ServiceReplicaStatus | None = None


class DynamoComponentDeployment(V1alpha1Resource):
    """One component of a graph, as the operator generates it (v1alpha1)."""

    kind: Literal["DynamoComponentDeployment"] = "DynamoComponentDeployment"
    spec: DynamoComponentDeploymentSpec
    status: DynamoComponentDeploymentStatus | None = None

    @classmethod
    def _refused(cls, data: Any) -> list[Problem]:
        spec = data.get("spec") if isinstance(data, dict) else None
        return lpx_problems([(("spec",), spec)], "componentType")


class CheckpointJobSpec(ApiModel):
    """The Job that creates a checkpoint."""

    pod_template_spec: Manifest
    active_deadline_seconds: Annotated[int, Field(ge=1)] = 3600  # CRD default: one hour
    backoff_limit: NonNegInt32 | None = None
    ttl_seconds_after_finished: NonNegInt32 | None = None
    target_container_name: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")] = "main"
    shared_memory: SharedMemory | None = None


class DynamoCheckpointSpec(ApiModel):
    identity: CheckpointIdentity
    job: CheckpointJobSpec
    gpu_memory_service: GPUMemoryService | None = None


class DynamoCheckpointStatus(ApiModel):
    phase: Literal["Pending", "Creating", "Ready", "Failed"] | None = None
    checkpoint_id: str | None = Field(default=None, alias="checkpointID")
    identity_hash: str | None = None
    job_name: str | None = None
    pod_snapshot_name: str | None = None
    location: str | None = None
    storage_type: Literal["pvc", "s3", "oci"] | None = None
    created_at: str | None = None
    message: str | None = None
    conditions: list[Manifest] | None = None


class DynamoCheckpoint(V1alpha1Resource):
    """A reusable checkpoint of a worker's initialized state (short name `dckpt`)."""

    kind: Literal["DynamoCheckpoint"] = "DynamoCheckpoint"
    spec: DynamoCheckpointSpec
    status: DynamoCheckpointStatus | None = None


class DGDRef(ApiModel):
    name: NonEmpty
    service_name: NonEmpty


class ScalingAdapterSpec(ApiModel):
    replicas: NonNegInt32
    dgd_ref: DGDRef


class ScalingAdapterStatus(ApiModel):
    replicas: int | None = None
    selector: str | None = None
    last_scale_time: str | None = None


class DynamoGraphDeploymentScalingAdapter(V1alpha1Resource):
    """The scale subresource of one graph component (v1alpha1 is its storage version)."""

    kind: Literal["DynamoGraphDeploymentScalingAdapter"] = "DynamoGraphDeploymentScalingAdapter"
    spec: ScalingAdapterSpec
    status: ScalingAdapterStatus | None = None


class ModelSource(ApiModel):
    uri: str


class DynamoModelSpec(ApiModel):
    model_name: str
    base_model_name: str
    model_type: Literal["base", "lora", "adapter"] = "base"
    source: ModelSource | None = None


class ModelEndpoint(ApiModel):
    address: str
    ready: bool
    pod_name: str | None = None
    lora_fallback_covered: bool | None = None


class DynamoModelStatus(ApiModel):
    ready_endpoints: int
    total_endpoints: int
    lora_fallback_covered_endpoints: int | None = None
    endpoints: list[ModelEndpoint] | None = None
    conditions: list[Manifest] | None = None


class DynamoModel(V1alpha1Resource):
    """A model (base or LoRA adapter) served by a graph's workers."""

    kind: Literal["DynamoModel"] = "DynamoModel"
    spec: DynamoModelSpec
    status: DynamoModelStatus | None = None


class ProfilingConfigMapRef(ApiModel):
    name: str
    key: str = "disagg.yaml"  # CRD default key of the profiler config


class ProfilingConfig(ApiModel):
    profiler_image: str
    config: Manifest | None = None
    config_map_ref: ProfilingConfigMapRef | None = None
    output_pvc: str | None = Field(default=None, alias="outputPVC")
    node_selector: dict[str, str] | None = None
    resources: Manifest | None = None
    tolerations: list[Manifest] | None = None


class DeploymentOverrides(ApiModel):
    name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    workers_image: str | None = None


class DynamoGraphDeploymentRequestSpec(ApiModel):
    model: str
    backend: Literal["auto", "vllm", "sglang", "trtllm"]
    profiling_config: ProfilingConfig
    auto_apply: bool = False
    use_mocker: bool = False
    enable_gpu_discovery: bool = True  # CRD default
    deployment_overrides: DeploymentOverrides | None = None
    runtime_version_override: RuntimeVersion | None = None


class DynamoGraphDeploymentRequest(V1alpha1Resource):
    """Deprecated v1alpha1 profiling request (still served; stored as v1beta1)."""

    kind: Literal["DynamoGraphDeploymentRequest"] = "DynamoGraphDeploymentRequest"
    spec: DynamoGraphDeploymentRequestSpec
    # Profiling status: plain dict checked against the CRD schema (parts preserve unknown fields).
    status: Manifest | None = None
