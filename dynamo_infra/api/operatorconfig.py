"""The cluster-facing parts of the Dynamo operator's OperatorConfiguration (config/v1alpha1 types).

A stack says what its cluster has (Grove, LWS, DRA, KAI, Volcano, Istio, ingress, discovery
backend, checkpoint storage, infrastructure addresses); `OperatorConfig()` is the operator's own
default configuration. Server, leader-election, RBAC, logging and webhook settings of the operator
process are left out: nothing here runs the operator. `None` for an `enabled` switch means
"auto-detect from the cluster's APIs", as in the operator.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import model_validator

from dynamo_infra.api.base import CheckedModel, WireModel
from dynamo_infra.api.errors import Problem, prefixed

# Grove PodCliqueSet termination delay the operator uses by default.
DEFAULT_GROVE_TERMINATION_DELAY = "15m"
# Discovery backend of the operator's default configuration.
DEFAULT_DISCOVERY_BACKEND: Final = "kubernetes"
# Istio ClientTLSSettings mode of the EPP DestinationRule, and the default when none is configured.
MeshTLSMode = Literal["SIMPLE", "DISABLE", "ISTIO_MUTUAL", "MUTUAL"]
DEFAULT_ISTIO_TLS_MODE: MeshTLSMode = "SIMPLE"
# Image of the best-effort checkpoint artifact cleanup jobs.
DEFAULT_CHECKPOINT_CLEANUP_IMAGE = "busybox:1.36"
# Localhost seccomp profile applied to checkpoint/restore pods unless disabled.
DEFAULT_SECCOMP_PROFILE = "profiles/block-iouring.json"
# Checkpoint PVC name and mount path the operator falls back to.
DEFAULT_CHECKPOINT_PVC = "chrek-pvc"
DEFAULT_CHECKPOINT_BASE_PATH = "/checkpoints"


class Switch(WireModel):
    """An integration that is auto-detected unless `enabled` says otherwise."""

    enabled: bool | None = None


class Grove(Switch):
    termination_delay: str = DEFAULT_GROVE_TERMINATION_DELAY


class Orchestrators(WireModel):
    """Multinode orchestrators and gang schedulers (LWS also needs Volcano's PodGroup API)."""

    grove: Grove = Grove()
    lws: Switch = Switch()
    kai_scheduler: Switch = Switch()
    volcano_scheduler: Switch = Switch()

    @model_validator(mode="after")
    def _one_gang_scheduler(self) -> Orchestrators:
        if self.kai_scheduler.enabled and self.volcano_scheduler.enabled:
            raise ValueError("kaiScheduler and volcanoScheduler cannot both be enabled")
        return self


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


class ServiceMesh(WireModel):
    """Service-mesh resources for EPP (Istio DestinationRules); empty provider disables them."""

    provider: Literal["", "istio"] = ""
    istio: Istio | None = None

    @property
    def enabled(self) -> bool:
        return self.provider == "istio"


class Discovery(WireModel):
    backend: Literal["kubernetes", "etcd"] = DEFAULT_DISCOVERY_BACKEND


class CheckpointPVC(WireModel):
    pvc_name: str = DEFAULT_CHECKPOINT_PVC
    base_path: str = DEFAULT_CHECKPOINT_BASE_PATH
    create: bool = False
    size: str | None = None
    storage_class_name: str | None = None
    access_mode: str | None = None

    @model_validator(mode="after")
    def _create_needs_size(self) -> CheckpointPVC:
        if self.create and not self.size:
            raise ValueError("create: true requires size")
        return self


class CheckpointStorage(WireModel):
    type: Literal["pvc"] = "pvc"  # the only storage implemented at the pin
    pvc: CheckpointPVC = CheckpointPVC()


class Seccomp(WireModel):
    disabled: bool = False
    profile: str | None = None


class Checkpoint(WireModel):
    enabled: bool = False
    storage: CheckpointStorage = CheckpointStorage()
    seccomp: Seccomp | None = None
    cleanup_image: str = DEFAULT_CHECKPOINT_CLEANUP_IMAGE

    @property
    def seccomp_profile(self) -> str:
        """The profile to inject, or "" when disabled."""
        if self.seccomp is None:
            return DEFAULT_SECCOMP_PROFILE
        if self.seccomp.disabled:
            return ""
        return self.seccomp.profile or DEFAULT_SECCOMP_PROFILE


class OperatorConfig(CheckedModel):
    """What the operator's configuration says about the cluster. Defaults are the operator's."""

    orchestrators: Orchestrators = Orchestrators()
    dra: Switch = Switch()
    infrastructure: Infrastructure = Infrastructure()
    ingress: Ingress = Ingress()
    service_mesh: ServiceMesh = ServiceMesh()
    discovery: Discovery = Discovery()
    checkpoint: Checkpoint = Checkpoint()

    def problems(self) -> list[Problem]:
        istio = self.service_mesh.istio
        return prefixed("serviceMesh.istio", istio.problems()) if istio else []
