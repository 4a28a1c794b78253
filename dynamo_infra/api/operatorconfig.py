"""Types of the Dynamo operator's OperatorConfiguration (config/v1alpha1) that `ClusterOptions` reuses.

Defaults are the operator's. `None` for an `enabled` switch means "auto-detect from the cluster's
APIs", as in the operator.
"""

from __future__ import annotations

from typing import Final, Literal

from dynamo_infra.api.base import WireModel
from dynamo_infra.api.errors import Problem

# Grove PodCliqueSet termination delay the operator uses by default.
DEFAULT_GROVE_TERMINATION_DELAY = "15m"
# Discovery backend of the operator's default configuration.
DEFAULT_DISCOVERY_BACKEND: Final = "kubernetes"
# Istio ClientTLSSettings mode of the EPP DestinationRule, and the default when none is configured.
MeshTLSMode = Literal["SIMPLE", "DISABLE", "ISTIO_MUTUAL", "MUTUAL"]
DEFAULT_ISTIO_TLS_MODE: MeshTLSMode = "SIMPLE"
# Checkpoint storage mount path the operator falls back to.
DEFAULT_CHECKPOINT_BASE_PATH = "/checkpoints"


class Switch(WireModel):
    """An integration that is auto-detected unless `enabled` says otherwise."""

    enabled: bool | None = None


class Grove(Switch):
    termination_delay: str = DEFAULT_GROVE_TERMINATION_DELAY


class Infrastructure(WireModel):
    """Addresses injected into every Dynamo container (NATS_SERVER, ETCD_ENDPOINTS, ...)."""

    nats_address: str | None = None
    etcd_address: str | None = None
    model_express_url: str | None = None
    prometheus_endpoint: str | None = None


class Ingress(WireModel):
    """Default ingress of frontends; empty values disable it (Go strings, as in the operator)."""

    virtual_service_gateway: str = ""
    controller_class_name: str = ""
    controller_tls_secret_name: str = ""
    host_suffix: str = ""

    @property
    def use_virtual_service(self) -> bool:
        return bool(self.virtual_service_gateway)


class Istio(WireModel):
    """TLS the mesh uses towards the EPP (DestinationRule `trafficPolicy.tls`)."""

    tls_mode: MeshTLSMode = DEFAULT_ISTIO_TLS_MODE
    # None: true, the operator's default (the EPP's certificate is self-signed).
    insecure_skip_verify: bool | None = None
    client_certificate: str = ""
    private_key: str = ""
    ca_certificates: str = ""

    def problems(self) -> list[Problem]:
        """`tlsMode: MUTUAL` without a client certificate or key (paths relative to `istio`)."""
        if self.tls_mode != "MUTUAL":
            return []
        return [
            Problem(key, "is required when tlsMode is MUTUAL")
            for key, value in (
                ("clientCertificate", self.client_certificate),
                ("privateKey", self.private_key),
            )
            if not value
        ]


class Discovery(WireModel):
    backend: Literal["kubernetes", "etcd"] = DEFAULT_DISCOVERY_BACKEND
