"""nvidia.com/v1alpha1 DynamoGraphDeployment: `spec.services` keyed by component name."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from dynamo_infra.api.base import DynamoModel, KubeObject, ObjectMeta
from dynamo_infra.api.common import (
    BackendFramework,
    DGDExperimental,
    EPPConfig,
    ModelReference,
    Quantity,
    Restart,
    RuntimeVersion,
    TopologyConstraint,
)

API_VERSION = "nvidia.com/v1alpha1"


class ResourceItem(DynamoModel):
    cpu: str | None = None
    memory: str | None = None
    gpu: str | None = None
    gpu_type: str | None = None
    custom: dict[str, str] | None = None


class ResourceClaim(DynamoModel):
    name: str
    request: str | None = None


class Resources(DynamoModel):
    """Dynamo's resource shorthand: `gpu` becomes `nvidia.com/gpu` (or `gpuType`) on the container."""

    requests: ResourceItem | None = None
    limits: ResourceItem | None = None
    claims: list[ResourceClaim] | None = None


class Multinode(DynamoModel):
    node_count: Annotated[int, Field(ge=2)] = 2


class SharedMemory(DynamoModel):
    disabled: bool | None = None
    size: Quantity | None = None


class ScalingAdapter(DynamoModel):
    enabled: bool = False


class Autoscaling(DynamoModel):
    """Deprecated HPA settings: accepted, ignored by the operator at the pin."""

    enabled: bool | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    behavior: KubeObject | None = None
    metrics: list[KubeObject] | None = None


class IngressTLS(DynamoModel):
    secret_name: str | None = None


class Ingress(DynamoModel):
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


class VolumeMount(DynamoModel):
    name: str
    mount_point: str | None = None
    use_as_compilation_cache: bool | None = None


class PVC(DynamoModel):
    """`spec.pvcs[]`: a claim the graph uses, created when `create` is true."""

    name: str
    create: bool | None = None
    storage_class: str | None = None
    size: Quantity | None = None
    volume_access_mode: str | None = None

    @model_validator(mode="after")
    def _create_needs_details(self) -> PVC:
        if self.create:
            missing = [
                f for f, v in (("storageClass", self.storage_class), ("size", self.size), ("volumeAccessMode", self.volume_access_mode)) if not v
            ]
            if missing:
                raise ValueError(f"create: true requires {', '.join(missing)}")
        return self


class FrontendSidecar(DynamoModel):
    image: str | None = None
    args: list[str] | None = None
    env_from_secret: str | None = None
    envs: list[KubeObject] | None = None


class GPUMemoryService(DynamoModel):
    enabled: bool | None = None
    mode: Literal["intraPod", "interPod"] = "intraPod"
    device_class_name: str = "gpu.nvidia.com"
    extra_client_containers: list[str] | None = None
    extra_client_pods: list[KubeObject] | None = None


class Failover(DynamoModel):
    enabled: bool | None = None
    mode: Literal["intraPod", "interPod"] = "intraPod"
    num_shadows: Annotated[int, Field(ge=1)] = 1


class CheckpointSpec(DynamoModel):
    enabled: bool = False
    mode: Literal["Auto", "Manual"] | None = None
    checkpoint_ref: str | None = None
    identity: KubeObject | None = None
    job: KubeObject | None = None
    deletion_policy: Literal["Delete", "Retain"] = "Delete"
    startup_policy: Literal["Immediate", "WaitForCheckpoint"] = "Immediate"
    target_container_name: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")] = "main"


class ExtraPodSpec(DynamoModel):
    """A Kubernetes PodSpec plus `mainContainer`; the PodSpec part is validated by the CRD schema."""

    model_config = DynamoModel.model_config | {"extra": "allow"}
    main_container: KubeObject | None = None

    def pod_spec(self) -> KubeObject:
        return dict(self.model_extra or {})


class ComponentSpec(DynamoModel):
    """One entry of `spec.services` (the operator's DynamoComponentDeploymentSharedSpec)."""

    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    service_name: str | None = None
    component_type: str | None = None
    sub_component_type: str | None = None
    dynamo_namespace: str | None = None
    global_dynamo_namespace: bool | None = None
    replicas: Annotated[int, Field(ge=0)] | None = None
    min_available: Annotated[int, Field(ge=1)] | None = None
    resources: Resources | None = None
    envs: list[KubeObject] | None = None
    env_from_secret: str | None = None
    volume_mounts: list[VolumeMount] | None = None
    liveness_probe: KubeObject | None = None
    readiness_probe: KubeObject | None = None
    extra_pod_metadata: KubeObject | None = None
    extra_pod_spec: ExtraPodSpec | None = None
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
    checkpoint: CheckpointSpec | None = None
    topology_constraint: TopologyConstraint | None = None
    runtime_version_override: RuntimeVersion | None = None

    @model_validator(mode="after")
    def _min_available(self) -> ComponentSpec:
        if self.min_available is not None and self.replicas != 0 and self.min_available > (self.replicas if self.replicas is not None else 1):
            raise ValueError("minAvailable must be less than or equal to replicas unless replicas is 0")
        return self


class DynamoGraphDeploymentSpec(DynamoModel):
    services: dict[str, ComponentSpec] | None = None
    envs: list[KubeObject] | None = None
    backend_framework: BackendFramework | None = None
    pvcs: list[PVC] | None = None
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    priority_class_name: str | None = None
    restart: Restart | None = None
    topology_constraint: TopologyConstraint | None = None
    experimental: DGDExperimental | None = None


class DynamoGraphDeployment(DynamoModel):
    api_version: Literal["nvidia.com/v1alpha1"] = API_VERSION
    kind: Literal["DynamoGraphDeployment"] = "DynamoGraphDeployment"
    metadata: ObjectMeta
    spec: DynamoGraphDeploymentSpec
    status: Any = Field(default=None, exclude=True)

    @property
    def name(self) -> str:
        return self.metadata.name or ""
