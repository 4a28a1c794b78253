"""nvidia.com/v1beta1 DynamoGraphDeployment: `spec.components` list with pod templates (the hub version)."""

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

API_VERSION = "nvidia.com/v1beta1"

ComponentType = Literal["frontend", "worker", "prefill", "decode", "planner", "epp"]
# Component types whose DCD names carry the worker hash and that count as workers.
WORKER_TYPES: frozenset[str] = frozenset({"worker", "prefill", "decode"})
NAME_PATTERN = r"^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$"


class Multinode(DynamoModel):
    node_count: Annotated[int, Field(ge=2)] = 2


class ScalingAdapter(DynamoModel):
    """Presence (even `{}`) hands the component's replicas to a DynamoGraphDeploymentScalingAdapter."""


class CompilationCache(DynamoModel):
    pvc_name: str
    mount_path: str | None = None


class Checkpoint(DynamoModel):
    enabled: bool
    mode: Literal["Auto", "Manual"] | None = None
    checkpoint_ref: str | None = None
    identity: KubeObject | None = None
    job: KubeObject | None = None
    deletion_policy: Literal["Delete", "Retain"] = "Delete"
    startup_policy: Literal["Immediate", "WaitForCheckpoint"] = "Immediate"
    target_container_name: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")] = "main"

    @model_validator(mode="after")
    def _job_or_ref(self) -> Checkpoint:
        if self.job is not None and self.checkpoint_ref:
            raise ValueError("checkpoint.job cannot be set when checkpointRef is specified")
        return self


class Failover(DynamoModel):
    mode: Literal["IntraPod", "InterPod"] = "IntraPod"
    num_shadows: Annotated[int, Field(ge=1)] = 1


class GPUMemoryService(DynamoModel):
    mode: Literal["IntraPod", "InterPod"] = "IntraPod"
    device_class_name: str = "gpu.nvidia.com"
    extra_client_containers: list[str] | None = None
    extra_client_pods: list[KubeObject] | None = None

    @model_validator(mode="after")
    def _clients_match_mode(self) -> GPUMemoryService:
        if self.extra_client_containers and self.mode != "IntraPod":
            raise ValueError("extraClientContainers is only supported with mode=IntraPod")
        if self.extra_client_pods and self.mode != "InterPod":
            raise ValueError("extraClientPods is only supported with mode=InterPod")
        return self


class ComponentExperimental(DynamoModel):
    checkpoint: Checkpoint | None = None
    failover: Failover | None = None
    gpu_memory_service: GPUMemoryService | None = None


class PodTemplate(DynamoModel):
    """A Kubernetes PodTemplateSpec; container `main` is the Dynamo runtime container."""

    metadata: KubeObject | None = None
    spec: KubeObject | None = None

    def container(self, name: str) -> KubeObject | None:
        for c in (self.spec or {}).get("containers") or []:
            if c.get("name") == name:
                return dict(c)
        return None


class Component(DynamoModel):
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    type: ComponentType | None = None
    replicas: Annotated[int, Field(ge=0)] | None = None
    min_available: Annotated[int, Field(ge=1)] | None = None
    pod_template: PodTemplate | None = None
    multinode: Multinode | None = None
    scaling_adapter: ScalingAdapter | None = None
    compilation_cache: CompilationCache | None = None
    shared_memory_size: Quantity | None = None
    frontend_sidecar: str | None = None
    global_dynamo_namespace: bool | None = None
    model_ref: ModelReference | None = None
    epp_config: EPPConfig | None = None
    experimental: ComponentExperimental | None = None
    topology_constraint: TopologyConstraint | None = None
    runtime_version_override: RuntimeVersion | None = None

    @model_validator(mode="after")
    def _rules(self) -> Component:
        if self.epp_config is not None and self.type != "epp":
            raise ValueError("eppConfig may only be set when type is epp")
        if self.min_available is not None and self.replicas != 0 and self.min_available > (self.replicas if self.replicas is not None else 1):
            raise ValueError("minAvailable must be less than or equal to replicas unless replicas is 0")
        return self

    @property
    def is_worker(self) -> bool:
        return self.type in WORKER_TYPES


class DynamoGraphDeploymentSpec(DynamoModel):
    components: list[Component] | None = None
    env: list[KubeObject] | None = None
    backend_framework: BackendFramework | None = None
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    priority_class_name: str | None = None
    restart: Restart | None = None
    topology_constraint: TopologyConstraint | None = None
    experimental: DGDExperimental | None = None

    @model_validator(mode="after")
    def _components_unique(self) -> DynamoGraphDeploymentSpec:
        comps = self.components or []
        if sum(1 for c in comps if c.type == "epp") > 1:
            raise ValueError("components: at most one component may have type epp")
        seen: set[str] = set()
        for c in comps:
            if c.name.lower() in seen:
                raise ValueError(f"components: component names must be unique case-insensitively ({c.name!r})")
            seen.add(c.name.lower())
        return self


class DynamoGraphDeployment(DynamoModel):
    api_version: Literal["nvidia.com/v1beta1"] = API_VERSION
    kind: Literal["DynamoGraphDeployment"] = "DynamoGraphDeployment"
    metadata: ObjectMeta
    spec: DynamoGraphDeploymentSpec
    status: Any = Field(default=None, exclude=True)

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    def component(self, name: str) -> Component:
        for c in self.spec.components or []:
            if c.name == name:
                return c
        raise KeyError(name)
