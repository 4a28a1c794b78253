"""ClusterOptions: what a stack says about its cluster, i.e. the operator configuration we emulate.

`ClusterOptions()` is the Dynamo operator's default configuration (no Grove, no LWS, no DRA, no
mesh). `ClusterOptions.parse(data)` / `from_config(data)` also reject contradictory settings, each
problem naming its config key path (e.g. `multinode.orchestrator`). Settings that are the operator's
own (discovery, infrastructure addresses, ingress, Istio TLS, the Grove/LWS/DRA switches) use the
OperatorConfiguration types of `dynamo_infra.api.operatorconfig`, laid out as stacks write them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field

from dynamo_infra.api import operatorconfig
from dynamo_infra.api.admission import OperatorFeatures
from dynamo_infra.api.base import CheckedModel, WireModel
from dynamo_infra.api.errors import Problem, prefixed
from dynamo_infra.api.operatorconfig import Discovery, Infrastructure, Ingress, Istio, Switch

# Namespace graphs go to when a stack names none.
DEFAULT_NAMESPACE = "default"
# How long a component may take to become ready before `pulumi up` fails.
DEFAULT_AWAIT_TIMEOUT_S = 600
# How long `pulumi up` waits for a capture Job: its own deadline (activeDeadlineSeconds), after which
# the Job fails anyway.
DEFAULT_CHECKPOINT_TIMEOUT_S = 3600
# Version the operator's mutating webhook stamps on new DGDs at the parity pin (1.4.x release line).
DEFAULT_OPERATOR_ORIGIN_VERSION = "1.4.0"
# KAI scheduler queue when neither the stack nor the DGD annotation names one (operator constant).
DEFAULT_KAI_QUEUE = "dynamo"
# DRA DeviceClass of the NVIDIA GPU DRA driver (operator and CRD default).
DEFAULT_DEVICE_CLASS = "gpu.nvidia.com"
# Secret holding the SSH key pair TRT-LLM multinode pods use for mpirun (operator default).
DEFAULT_MPI_SSH_SECRET = "mpi-run-ssh-secret"

Orchestrator = Literal["grove", "lws", "none"]
GroveScheduler = Literal["default", "kai", "volcano"]
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(h|ms|m|s))+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# An image reference pinned to a tag or a digest: `[registry[:port]/]path:tag` or `…@sha256:<hex>`.
_PINNED_IMAGE = re.compile(
    r"^[a-z0-9][\w.-]*(:\d+)?(/[a-z0-9][\w.-]*)*(:\w[\w.-]{0,127}|(:\w[\w.-]{0,127})?@[a-z0-9]+:[0-9a-f]{32,})$"
)


def duration_seconds(text: str) -> float:
    """Seconds of a Go duration string (`15m`, `1h30m`, `90s`, `500ms`); ValueError if malformed."""
    if text == "0":
        return 0.0
    if not _DURATION.match(text):
        raise ValueError(f"{text!r} is not a duration such as 15m, 1h30m or 90s")
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(text))


def go_duration(text: str) -> str:
    """The duration as Go's `time.Duration.String()` writes it (`15m` -> `15m0s`)."""
    total_ms = round(duration_seconds(text) * 1000)
    if total_ms == 0:
        return "0s"
    if total_ms < 1000:
        return f"{total_ms}ms"
    hours, rest = divmod(total_ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds = f"{rest // 1000}" + (f".{rest % 1000:03d}".rstrip("0") if rest % 1000 else "")
    out = f"{hours}h" if hours else ""
    if hours or minutes:
        out += f"{minutes}m"
    return f"{out}{seconds}s"


class ServiceMesh(WireModel):
    """`provider: istio` turns on the EPP DestinationRule (the operator's istio gate).

    `gateway` is the Istio Gateway frontends' VirtualServices bind to (same as
    `ingress.virtualServiceGateway`).
    """

    provider: Literal["", "none", "istio"] = ""
    gateway: str = ""
    istio: Istio = Istio()

    @property
    def istio_enabled(self) -> bool:
        return self.provider == "istio"


class Multinode(WireModel):
    """Which orchestrator runs multinode components (`none`: multinode graphs are rejected)."""

    orchestrator: Orchestrator | None = None


class Grove(operatorconfig.Grove):
    """Grove (PodCliqueSet) pathway: when enabled, every graph renders as one PodCliqueSet.

    Unset `enabled` follows `multinode.orchestrator` (the operator would auto-detect Grove's API).
    """

    scheduler: GroveScheduler = "default"
    # Default queue of the KAI/Volcano scheduler (a DGD annotation still wins).
    queue: str | None = None


class LWS(Switch):
    """LeaderWorkerSet (with Volcano) for multinode components outside Grove; unset `enabled`
    follows `multinode.orchestrator`."""


class DRA(Switch):
    """Dynamic Resource Allocation (resource.k8s.io/v1): needed by GPU memory service and failover.

    Off unless enabled: rendering cannot see the cluster's APIs, so nothing is auto-detected.
    """

    enabled: bool = False
    device_class: str = DEFAULT_DEVICE_CLASS


class MPI(WireModel):
    """The SSH key pair TRT-LLM multinode pods mount. With `sshSecretNamespace` (the operator's
    namespace, where it keeps the source), the platform copies that secret into the graphs' namespace
    when a graph has multinode components, as the operator does; without it, the user creates it."""

    ssh_secret_name: str = DEFAULT_MPI_SSH_SECRET
    ssh_secret_namespace: str | None = None


class Checkpoint(WireModel):
    """Checkpoint/restore (the operator's `checkpoint.enabled` gate), its storage PVC, and how long
    `pulumi up` waits for a capture Job (WaitForCheckpoint components) before it fails."""

    enabled: bool = False
    storage_pvc: str = ""
    timeout_seconds: Annotated[int, Field(ge=1)] = DEFAULT_CHECKPOINT_TIMEOUT_S


class InferencePool(Switch):
    """Whether the cluster serves the InferencePool API (the Gateway API Inference Extension) that EPP
    components need. The operator detects it; rendering cannot see the cluster, so unset means served
    (the platform's `installCrds: inference` or the inference gateway's chart installs it) and
    `enabled: false` denies EPP components as the operator's webhook does."""


class Admission(WireModel):
    """The operator's validating webhook (its chart's `webhook.enabled`): on, graphs and their updates
    are admitted as it admits them (`api.admission`); off, as in a cluster without it, every graph is
    deployed as its controllers render it."""

    enabled: bool = True


class AwaitPolicy(WireModel):
    """How the providers wait for readiness: `wait` (default) or `skip` (clusters without kubelets)."""

    mode: Literal["wait", "skip"] = "wait"
    timeout_seconds: Annotated[int, Field(ge=1)] = DEFAULT_AWAIT_TIMEOUT_S


class ClusterOptions(CheckedModel):
    namespace: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)] = (
        DEFAULT_NAMESPACE
    )
    discovery: Discovery = Discovery()
    infrastructure: Infrastructure = Infrastructure()
    await_policy: AwaitPolicy = Field(default=AwaitPolicy(), alias="await")
    ingress: Ingress = Ingress()
    service_mesh: ServiceMesh = ServiceMesh()
    multinode: Multinode = Multinode()
    grove: Grove = Grove()
    lws: LWS = LWS()
    dra: DRA = DRA()
    mpi: MPI = MPI()
    checkpoint: Checkpoint = Checkpoint()
    inference_pool: InferencePool = InferencePool()
    admission: Admission = Admission()
    # Annotation value the webhook would stamp on a DGD that has none (None: stamp nothing).
    operator_origin_version: str | None = DEFAULT_OPERATOR_ORIGIN_VERSION
    # Attach the namespace's matching dockerconfigjson secrets to pods (resolved by the provider).
    image_pull_secret_discovery: bool = True
    # Render an HPA for components with legacy `autoscaling.enabled` (the pinned operator ignores it).
    legacy_autoscaling_hpa: bool = False
    # Apply the operator's runtime-version gates (`api.releases`); false renders every image as the
    # operator at our pin did, whatever its runtime version (how the operator-rendered corpus was made).
    runtime_version_gates: bool = True

    @property
    def grove_enabled(self) -> bool:
        """Grove pathway available: `grove.enabled`, else `multinode.orchestrator: grove`."""
        if self.grove.enabled is not None:
            return self.grove.enabled
        return self.multinode.orchestrator == "grove"

    @property
    def lws_enabled(self) -> bool:
        """LeaderWorkerSet available: `lws.enabled`, else `multinode.orchestrator: lws`."""
        if self.lws.enabled is not None:
            return self.lws.enabled
        return self.multinode.orchestrator == "lws"

    @property
    def operator_features(self) -> OperatorFeatures:
        """The operator's feature gates this configuration gives, as its admission webhook reads them."""
        return OperatorFeatures(
            grove=self.grove_enabled,
            checkpoint=self.checkpoint.enabled,
            inference_pool=self.inference_pool.enabled is not False,
        )

    @property
    def virtual_service_gateway(self) -> str:
        """The Istio Gateway of frontend VirtualServices (ingress or service-mesh spelling)."""
        return self.ingress.virtual_service_gateway or self.service_mesh.gateway

    @property
    def grove_termination_delay(self) -> str | None:
        """`terminationDelay` of PodCliqueSets as Go writes it; None when zero (left unset)."""
        rendered = go_duration(self.grove.termination_delay)
        return None if rendered == "0s" else rendered

    def problems(self) -> list[Problem]:
        """Contradictions between settings, each named by its config key path."""
        out: list[Problem] = []
        orch = self.multinode.orchestrator
        for name, flag in (("grove", self.grove.enabled), ("lws", self.lws.enabled)):
            if orch == name and flag is False:
                out.append(Problem(f"{name}.enabled", f"is false but multinode.orchestrator is {name}"))
            if orch == "none" and flag:
                out.append(Problem(f"{name}.enabled", "is true but multinode.orchestrator is none"))
        if orch == "lws" and self.grove.enabled:
            out.append(
                Problem(
                    "multinode.orchestrator",
                    "is lws but grove.enabled is true: with Grove available every graph renders on "
                    "Grove (set grove.enabled false, or orchestrator grove and opt graphs out with "
                    "the nvidia.com/enable-grove annotation)",
                )
            )
        try:
            duration_seconds(self.grove.termination_delay)
        except ValueError as e:
            out.append(Problem("grove.terminationDelay", str(e)))
        if self.grove.scheduler != "default" and not self.grove_enabled:
            out.append(Problem("grove.scheduler", f"{self.grove.scheduler} scheduling needs Grove enabled"))
        if self.grove.queue is not None and self.grove.scheduler == "default":
            out.append(Problem("grove.queue", "needs grove.scheduler kai or volcano"))
        if self.grove.queue is not None and not self.grove.queue.strip():
            out.append(Problem("grove.queue", "must not be empty"))
        if not _DNS_SUBDOMAIN.match(self.dra.device_class):
            out.append(Problem("dra.deviceClass", f"{self.dra.device_class!r} is not a DNS subdomain name"))
        if not _DNS_SUBDOMAIN.match(self.mpi.ssh_secret_name):
            out.append(
                Problem("mpi.sshSecretName", f"{self.mpi.ssh_secret_name!r} is not a valid Secret name")
            )
        source_ns = self.mpi.ssh_secret_namespace
        if source_ns is not None and not _DNS_LABEL.match(source_ns):
            out.append(Problem("mpi.sshSecretNamespace", f"{source_ns!r} is not a valid namespace name"))
        out.extend(self._mesh_problems())
        if self.checkpoint.storage_pvc and not self.checkpoint.enabled:
            out.append(Problem("checkpoint.storagePvc", "is set but checkpoint.enabled is false"))
        return out

    def _mesh_problems(self) -> list[Problem]:
        mesh, out = self.service_mesh, []
        if mesh.gateway and not mesh.istio_enabled:
            out.append(Problem("serviceMesh.gateway", "needs serviceMesh.provider istio"))
        gw = self.ingress.virtual_service_gateway
        if mesh.gateway and gw and gw != mesh.gateway:
            out.append(
                Problem(
                    "serviceMesh.gateway",
                    f"{mesh.gateway!r} contradicts ingress.virtualServiceGateway {gw!r}",
                )
            )
        istio = mesh.istio
        out += prefixed("serviceMesh.istio", istio.problems())
        if istio.tls_mode != "MUTUAL" and (
            istio.client_certificate or istio.private_key or istio.ca_certificates
        ):
            out.append(Problem("serviceMesh.istio.tlsMode", "client certificates are only used with MUTUAL"))
        return out

    @classmethod
    def from_config(cls, data: dict[str, Any]) -> ClusterOptions:
        """From `pulumi config` values (already parsed from YAML); errors name the config keys."""
        return cls.parse(data)


class AgentOptions(CheckedModel):
    """The dynamo-infra agent (`dynamo-infra:agent`): the in-cluster process that carries what changes
    at run time (planner and DGDSA replicas, live status, LoRA adapters). `image` is built from this
    repository (its Dockerfile); `namespace` is where it runs (default: the graphs' namespace)."""

    image: str
    namespace: str | None = None

    def problems(self) -> list[Problem]:
        out = []
        if not _PINNED_IMAGE.match(self.image):
            out.append(Problem("image", f"{self.image!r} is not an image reference with a tag or digest"))
        if self.namespace is not None and not _DNS_LABEL.match(self.namespace):
            out.append(Problem("namespace", f"{self.namespace!r} is not a valid namespace name"))
        return out

    def namespace_in(self, cluster: ClusterOptions) -> str:
        """Where the agent runs: its own namespace, else the graphs'."""
        return self.namespace or cluster.namespace
