"""nvidia.com/v1beta1 (the hub version we render from): DynamoGraphDeployment (`spec.components` list
with pod templates), DynamoComponentDeployment, DynamoGraphDeploymentScalingAdapter and
DynamoGraphDeploymentRequest."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from dynamo_infra.api import kubenames
from dynamo_infra.api.base import ApiModel, Resource
from dynamo_infra.api.common import (
    MAIN_CONTAINER,
    MAX_ROLES,
    BackendFramework,
    CheckpointBase,
    ComponentRoleBase,
    DGDExperimental,
    Domain,
    EPPConfig,
    GMSBase,
    GraphStatusBase,
    Int32,
    Multinode,
    NonEmpty,
    NonNegInt32,
    PosInt32,
    ProviderOverride,
    Quantity,
    ReplicaStatus,
    Restart,
    RollingUpdateStatusBase,
    RuntimeVersion,
    TopologyConstraint,
    check_min_available,
    default_role_replicas,
    lpx_problems,
)
from dynamo_infra.api.errors import Problem
from dynamo_infra.api.manifest import Manifest

API_VERSION: Final = "nvidia.com/v1beta1"

ComponentType = Literal["frontend", "worker", "prefill", "decode", "planner", "epp"]
# Component types whose DCD names carry the worker hash and that count as workers.
WORKER_TYPES: frozenset[str] = frozenset({"worker", "prefill", "decode"})
NAME_PATTERN = f"^{kubenames.COMPONENT_NAME_PATTERN}$"
# Most components a graph may have.
MAX_COMPONENTS = 25
GMSMode = Literal["IntraPod", "InterPod"]
DEFAULT_GMS_MODE: GMSMode = "IntraPod"
# Pod annotation choosing vLLM's multinode executor; the CRD allows only these values (any case).
VLLM_BACKEND_ANNOTATION = "nvidia.com/vllm-distributed-executor-backend"


class V1beta1Resource(Resource):
    """A custom resource in nvidia.com/v1beta1."""

    api_version: Literal["nvidia.com/v1beta1"] = "nvidia.com/v1beta1"


class ScalingAdapter(ApiModel):
    """Presence (even `{}`) hands the component's replicas to a DynamoGraphDeploymentScalingAdapter."""


class CompilationCache(ApiModel):
    pvc_name: NonEmpty
    mount_path: str | None = None


class Checkpoint(CheckpointBase):
    enabled: bool


class Failover(ApiModel):
    mode: GMSMode = DEFAULT_GMS_MODE
    # The CRD allows exactly one shadow engine at the pin.
    num_shadows: Annotated[int, Field(ge=1, le=1)] = 1


class GPUMemoryService(GMSBase):
    mode: GMSMode = DEFAULT_GMS_MODE

    @model_validator(mode="after")
    def _clients_match_mode(self) -> GPUMemoryService:
        self._check_clients("IntraPod", "InterPod", self.mode)
        return self


class GroveExperimental(ApiModel):
    """Grove rendering options (1.6-era `api/v1beta1/common.go@80b177f2` GroveSpec)."""

    # Render a single-node component as a PodCliqueScalingGroup; false and omitted mean the same.
    force_scaling_group: bool | None = None


class ComponentExperimental(ApiModel):
    checkpoint: Checkpoint | None = None
    failover: Failover | None = None
    gpu_memory_service: GPUMemoryService | None = None
    grove: GroveExperimental | None = None


class PodTemplate(ApiModel):
    """A Kubernetes PodTemplateSpec; container `main` is the Dynamo runtime container."""

    metadata: Manifest | None = None
    spec: Manifest | None = None

    def container(self, name: str) -> Manifest | None:
        for c in (self.spec or {}).get("containers") or []:
            if c.get("name") == name:
                return dict(c)
        return None

    @field_validator("metadata")
    @classmethod
    def _backend_annotation(cls, metadata: Manifest | None) -> Manifest | None:
        annotations = (metadata or {}).get("annotations") or {}
        backend = annotations.get(VLLM_BACKEND_ANNOTATION) if isinstance(annotations, dict) else None
        if isinstance(backend, str) and backend.lower() not in ("mp", "ray"):
            raise ValueError("podTemplate backend annotation must be mp or ray, case-insensitively")
        return metadata

    @field_validator("spec")
    @classmethod
    def _container_images(cls, spec: Manifest | None) -> Manifest | None:
        for i, c in enumerate(_dicts((spec or {}).get("containers"))):
            if c.get("name") != MAIN_CONTAINER and not c.get("image"):
                raise ValueError(f"containers[{i}]: sidecar containers must specify a non-empty image")
        for i, c in enumerate(_dicts((spec or {}).get("initContainers"))):
            if not c.get("image"):
                raise ValueError(f"initContainers[{i}]: init containers must specify a non-empty image")
        return spec


def check_roles(roles: list[Any] | None, component_template: bool) -> None:
    """CRD rules of `roles`: names unique (list map key), and either the component's pod template
    or one on every role (1.6-era DynamoComponentDeploymentSharedSpec CEL rules)."""
    names = [r.name for r in roles or []]
    if len(set(names)) != len(names):
        raise ValueError("roles: role names must be unique")
    with_template = [r.pod_template is not None for r in roles or []]
    if any(with_template) and (component_template or not all(with_template)):
        raise ValueError("use either component podTemplate or complete role podTemplates")


def _dicts(value: Any) -> list[Manifest]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


class ModelReference(ApiModel):
    name: NonEmpty
    revision: str | None = None


class ComponentRole(ComponentRoleBase):
    """One role of a compound component: multinode `leader` / `worker` (1.6-era
    `api/v1beta1/common.go@80b177f2` ComponentRoleSpec); its own pod template, or the component's."""

    pod_template: PodTemplate | None = None


class ComponentEPPConfig(EPPConfig):
    @model_validator(mode="after")
    def _exactly_one(self) -> ComponentEPPConfig:
        if (self.config is None) == (self.config_map_ref is None):
            raise ValueError("exactly one of configMapRef or config must be specified")
        return self


class ComponentFields(ApiModel):
    """Fields of a component shared by a DGD's `components[]` and a DCD's `spec`."""

    type: ComponentType | None = None
    replicas: NonNegInt32 | None = None
    min_available: PosInt32 | None = None
    pod_template: PodTemplate | None = None
    multinode: Multinode | None = None
    scaling_adapter: ScalingAdapter | None = None
    compilation_cache: CompilationCache | None = None
    shared_memory_size: Quantity | None = None
    frontend_sidecar: str | None = None
    global_dynamo_namespace: bool | None = None
    model_ref: ModelReference | None = None
    epp_config: ComponentEPPConfig | None = None
    experimental: ComponentExperimental | None = None
    topology_constraint: TopologyConstraint | None = None
    runtime_version_override: RuntimeVersion | None = None
    roles: Annotated[list[ComponentRole], Field(max_length=MAX_ROLES)] | None = None
    provider_override: ProviderOverride | None = None

    @model_validator(mode="before")
    @classmethod
    def _role_defaults(cls, data: Any) -> Any:
        return default_role_replicas(data)

    @model_validator(mode="after")
    def _rules(self) -> ComponentFields:
        if self.epp_config is not None and self.type != "epp":
            raise ValueError("eppConfig may only be set when type is epp")
        check_min_available(self.min_available, self.replicas)
        check_roles(self.roles, self.pod_template is not None)
        return self

    @property
    def is_worker(self) -> bool:
        return self.type in WORKER_TYPES


ComponentName = Annotated[str, StringConstraints(pattern=NAME_PATTERN, min_length=1, max_length=63)]


class Component(ComponentFields):
    """One entry of `spec.components` (its `name` is the list-map key)."""

    name: ComponentName


class GraphTopologyConstraint(ApiModel):
    """Graph-level topology: the ClusterTopology to use and a default pack domain."""

    cluster_topology_name: NonEmpty
    pack_domain: Domain | None = None


class DynamoGraphDeploymentSpec(ApiModel):
    provider_override: ProviderOverride | None = None
    components: Annotated[list[Component], Field(max_length=MAX_COMPONENTS)] | None = None
    env: list[Manifest] | None = None
    backend_framework: BackendFramework | None = None
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    priority_class_name: str | None = None
    restart: Restart | None = None
    topology_constraint: GraphTopologyConstraint | None = None
    experimental: DGDExperimental | None = None

    @model_validator(mode="after")
    def _components_unique(self) -> DynamoGraphDeploymentSpec:
        comps = self.components or []
        if sum(1 for c in comps if c.type == "epp") > 1:
            raise ValueError("components: at most one component may have type epp")
        names = [c.name.lower() for c in comps]
        if len(set(names)) != len(names):
            raise ValueError("components: component names must be unique case-insensitively")
        return self


class RollingUpdateStatus(RollingUpdateStatusBase):
    updated_components: list[str] | None = None


class DynamoGraphDeploymentStatus(GraphStatusBase):
    components: dict[str, ReplicaStatus] | None = None
    rolling_update: RollingUpdateStatus | None = None


class DynamoGraphDeployment(V1beta1Resource):
    """A Dynamo inference graph (v1beta1, the hub version)."""

    kind: Literal["DynamoGraphDeployment"] = "DynamoGraphDeployment"
    spec: DynamoGraphDeploymentSpec
    status: DynamoGraphDeploymentStatus | None = None

    @classmethod
    def _refused(cls, data: Any) -> list[Problem]:
        spec = data.get("spec") if isinstance(data, dict) else None
        comps = spec.get("components") if isinstance(spec, dict) else None
        items = list(enumerate(comps)) if isinstance(comps, list) else []
        return lpx_problems([(("spec", "components", i), c) for i, c in items], "type")

    def component(self, name: str) -> Component:
        for c in self.spec.components or []:
            if c.name == name:
                return c
        raise KeyError(name)


class DynamoComponentDeploymentSpec(ComponentFields):
    """A DCD's spec: one component plus the graph's backend framework."""

    name: ComponentName | None = None
    backend_framework: BackendFramework | None = None


class DynamoComponentDeploymentStatus(ApiModel):
    conditions: list[Manifest] | None = None
    observed_generation: int | None = None
    component: ReplicaStatus | None = None


class DynamoComponentDeployment(V1beta1Resource):
    """One component of a graph, as the operator generates it (v1beta1)."""

    kind: Literal["DynamoComponentDeployment"] = "DynamoComponentDeployment"
    spec: DynamoComponentDeploymentSpec
    status: DynamoComponentDeploymentStatus | None = None

    @classmethod
    def _refused(cls, data: Any) -> list[Problem]:
        spec = data.get("spec") if isinstance(data, dict) else None
        return lpx_problems([(("spec",), spec)], "type")


class DGDRef(ApiModel):
    name: NonEmpty
    component_name: NonEmpty


class ScalingAdapterSpec(ApiModel):
    replicas: NonNegInt32
    dgd_ref: DGDRef


class ScalingAdapterStatus(ApiModel):
    replicas: int
    selector: str | None = None
    last_scale_time: str | None = None


class DynamoGraphDeploymentScalingAdapter(V1beta1Resource):
    """The scale subresource of one graph component (v1beta1, the hub)."""

    kind: Literal["DynamoGraphDeploymentScalingAdapter"] = "DynamoGraphDeploymentScalingAdapter"
    spec: ScalingAdapterSpec
    status: ScalingAdapterStatus | None = None


class MockerFeature(ApiModel):
    enabled: bool | None = None


class Features(ApiModel):
    mocker: MockerFeature | None = None
    # Planner configuration: free-form (the CRD preserves unknown fields).
    planner: Manifest | None = None


class Hardware(ApiModel):
    gpu_sku: str | None = None
    interconnect: str | None = None
    num_gpus_per_node: Int32 | None = None
    rdma: bool | None = None
    total_gpus: Int32 | None = None
    vram_mb: float | None = None


class ModelCache(ApiModel):
    pvc_name: str | None = None
    pvc_model_path: str | None = None
    pvc_mount_path: str = "/opt/model-cache"  # CRD default mount path


class Overrides(ApiModel):
    # A partial DGD merged into the generated one (free-form in the CRD).
    dgd: Manifest | None = None
    # A Kubernetes JobSpec for the profiling job.
    profiling_job: Manifest | None = None


class SLA(ApiModel):
    ttft: float | None = None
    itl: float | None = None
    e2e_latency: float | None = None
    optimization_type: Literal["latency", "throughput"] | None = None


class Workload(ApiModel):
    isl: Int32 = 4000  # CRD default input sequence length
    osl: Int32 = 1000  # CRD default output sequence length
    concurrency: float | None = None
    request_rate: float | None = None


class DynamoGraphDeploymentRequestSpec(ApiModel):
    model: NonEmpty
    backend: str = "auto"  # CRD default: pick the backend automatically
    image: str | None = None
    auto_apply: bool = True  # CRD default in v1beta1
    search_strategy: str = "rapid"  # CRD default
    features: Features | None = None
    hardware: Hardware | None = None
    model_cache: ModelCache | None = None
    overrides: Overrides | None = None
    sla: SLA | None = None
    workload: Workload | None = None
    runtime_version_override: RuntimeVersion | None = None


class DynamoGraphDeploymentRequest(V1beta1Resource):
    """A request to profile a model and generate (optionally apply) a DGD (v1beta1, storage)."""

    kind: Literal["DynamoGraphDeploymentRequest"] = "DynamoGraphDeploymentRequest"
    spec: DynamoGraphDeploymentRequestSpec
    # Profiling status: plain dict checked against the CRD schema (parts preserve unknown fields).
    status: Manifest | None = None
