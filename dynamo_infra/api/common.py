"""Types shared by both API versions, with the CRDs' enums and patterns."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from dynamo_infra.api.base import DynamoModel, KubeObject

GROUP = "nvidia.com"

BackendFramework = Literal["sglang", "vllm", "trtllm"]

# Kubernetes resource.Quantity as the CRDs spell it (int-or-string with this pattern).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
Quantity = Annotated[str, StringConstraints(pattern=QUANTITY_PATTERN)] | int
# DNS-label-like topology domain names.
DOMAIN_PATTERN = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"
RuntimeVersion = Annotated[
    str, StringConstraints(pattern=r"^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$")
]


class TopologyConstraint(DynamoModel):
    pack_domain: Annotated[str, Field(pattern=DOMAIN_PATTERN)] | None = None
    topology_profile: str | None = None
    cluster_topology_name: str | None = None


class RestartStrategy(DynamoModel):
    type: Literal["Sequential", "Parallel"] = "Sequential"
    order: list[str] | None = None


class Restart(DynamoModel):
    id: str | None = None
    strategy: RestartStrategy | None = None


class ModelReference(DynamoModel):
    name: str
    revision: str | None = None


class EPPConfig(DynamoModel):
    config: KubeObject | None = None
    config_map_ref: KubeObject | None = None


class KVTransferPolicy(DynamoModel):
    label_key: str | None = None
    cluster_topology_name: str | None = None
    domain: Annotated[str, Field(pattern=DOMAIN_PATTERN)] | None = None
    enforcement: Literal["required", "preferred"] = "required"
    preferred_weight: Annotated[float, Field(ge=0, le=1)] | None = None

    @model_validator(mode="after")
    def _exactly_one_source(self) -> KVTransferPolicy:
        if (self.label_key is None) == (self.cluster_topology_name is None):
            raise ValueError("exactly one of labelKey or clusterTopologyName is required")
        return self


class DGDExperimental(DynamoModel):
    kv_transfer_policy: KVTransferPolicy | None = None
