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
# Version the operator's mutating webhook stamps on new DGDs at the parity pin (1.4.x release line).
DEFAULT_OPERATOR_ORIGIN_VERSION = "1.4.0"
# Istio ClientTLSSettings mode of the EPP DestinationRule when the stack sets none.
MeshTLSMode = Literal["SIMPLE", "DISABLE", "ISTIO_MUTUAL", "MUTUAL"]
DEFAULT_MESH_TLS_MODE: MeshTLSMode = "SIMPLE"


class Infrastructure(DynamoModel):
    """Addresses injected into every Dynamo container (NATS_SERVER, ETCD_ENDPOINTS, ...)."""

    nats_address: str | None = None
    etcd_address: str | None = None
    model_express_url: str | None = None
    prometheus_endpoint: str | None = None


class Discovery(DynamoModel):
    backend: Literal["kubernetes", "etcd"] = "kubernetes"


class Ingress(DynamoModel):
    """Default ingress of frontends (operator `ingress` config); empty values disable it."""

    controller_class_name: str = ""
    controller_tls_secret_name: str = ""
    host_suffix: str = ""
    virtual_service_gateway: str = ""

    @property
    def use_virtual_service(self) -> bool:
        return self.virtual_service_gateway != ""


class IstioMesh(DynamoModel):
    """TLS the mesh uses towards the EPP (DestinationRule `trafficPolicy.tls`)."""

    tls_mode: MeshTLSMode = DEFAULT_MESH_TLS_MODE
    insecure_skip_verify: bool | None = None
    client_certificate: str = ""
    private_key: str = ""
    ca_certificates: str = ""


class ServiceMesh(DynamoModel):
    """`provider: istio` turns on the EPP DestinationRule (the operator's istio gate)."""

    provider: Literal["", "istio"] = ""
    istio: IstioMesh = IstioMesh()


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
    ingress: Ingress = Ingress()
    service_mesh: ServiceMesh = ServiceMesh()
    # Annotation value the webhook would stamp on a DGD that has none (None: stamp nothing).
    operator_origin_version: str | None = DEFAULT_OPERATOR_ORIGIN_VERSION
    # Attach the namespace's matching dockerconfigjson secrets to pods (resolved by the provider).
    image_pull_secret_discovery: bool = True
    # Render an HPA for components with legacy `autoscaling.enabled` (the pinned operator ignores it).
    legacy_autoscaling_hpa: bool = False

    @classmethod
    def from_config(cls, data: dict[str, Any]) -> ClusterOptions:
        """From `pulumi config` values (already parsed from YAML); errors name the config keys."""
        return cls.parse(data)
