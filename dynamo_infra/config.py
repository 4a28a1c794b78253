"""ClusterOptions: what a stack says about its cluster, i.e. the operator configuration we emulate.

`ClusterOptions()` is the Dynamo operator's default configuration.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from dynamo_infra.api.base import DynamoModel

# Namespace graphs go to when a stack names none.
DEFAULT_NAMESPACE = "default"
# How long a component may take to become ready before `pulumi up` fails.
DEFAULT_AWAIT_TIMEOUT_S = 600


class Infrastructure(DynamoModel):
    """Addresses injected into every Dynamo container (NATS_SERVER, ETCD_ENDPOINTS, ...)."""

    nats_address: str | None = None
    etcd_address: str | None = None
    model_express_url: str | None = None
    prometheus_endpoint: str | None = None


class Discovery(DynamoModel):
    backend: Literal["kubernetes", "etcd"] = "kubernetes"


class AwaitPolicy(DynamoModel):
    """How the providers wait for readiness: `wait` (default) or `skip` (clusters without kubelets)."""

    mode: Literal["wait", "skip"] = "wait"
    timeout_seconds: Annotated[int, Field(ge=1)] = DEFAULT_AWAIT_TIMEOUT_S


class ClusterOptions(DynamoModel):
    namespace: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)] = (
        DEFAULT_NAMESPACE
    )
    discovery: Discovery = Discovery()
    infrastructure: Infrastructure = Infrastructure()
    await_policy: AwaitPolicy = Field(default=AwaitPolicy(), alias="await")

    @classmethod
    def from_config(cls, data: dict[str, Any]) -> ClusterOptions:
        """From `pulumi config` values (already parsed from YAML); errors name the config keys."""
        return cls.parse(data)
