"""What a rendering returns: a graph's objects, grouped by component, with what the providers need."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dynamo_infra.api.manifest import Manifest

# Rendering pathways: one DCD (Deployment or LeaderWorkerSet) per component, or one PodCliqueSet.
PATHWAY_COMPONENTS = "components"
PATHWAY_GROVE = "grove"
# The workload kind of a single-node component on the DCD path.
DEPLOYMENT = "Deployment"


@dataclass(frozen=True)
class RenderedComponent:
    """One component: its DCD (as the operator would store it) and the objects that run it.

    On the Grove pathway there is no DCD (`dcd` is None): the component's pods come from the graph's
    PodCliqueSet, `scale_target` names the PodClique or PodCliqueScalingGroup Grove creates for it
    (replicas are changed there, through its scale subresource, after the PodCliqueSet exists), and
    `objects` holds its Service, Ingress and VirtualService.
    """

    name: str
    type: str
    dcd_name: str
    replicas: int
    dcd: Manifest | None
    objects: tuple[Manifest, ...]
    scaling_adapter: bool = False
    # The DGDSA to create once (its replicas then belong to the adapter), when `scalingAdapter` is set.
    adapter: Manifest | None = None
    # Replicas owned by a legacy HPA (rendered among `objects`).
    autoscaled: bool = False
    # Whether the provider should attach the namespace's matching dockerconfigjson secrets.
    pull_secret_discovery: bool = True
    # Deployment, LeaderWorkerSet, PodClique or PodCliqueScalingGroup: what decides readiness.
    workload_kind: str = DEPLOYMENT
    # Grove pathway: {apiVersion, kind, name, replicas} of the component's PodClique / PCSG.
    scale_target: Manifest | None = None
    # Replicas held at 0 while the component waits for its checkpoint.
    waiting_for_checkpoint: bool = False


@dataclass(frozen=True)
class RenderedGraph:
    name: str
    namespace: str
    dynamo_namespace: str
    worker_hash: str | None
    shared: tuple[Manifest, ...] = ()
    components: dict[str, RenderedComponent] = field(default_factory=dict)
    # PVCs to create when missing (never updated; retained on destroy unless opted in).
    pvcs: tuple[Manifest, ...] = ()
    # PVC names the graph needs but does not create (must exist before the workloads start).
    required_pvcs: tuple[str, ...] = ()
    # DGD metadata annotations as the operator would store them (webhook default, current hash).
    annotations: Mapping[str, str] = field(default_factory=dict)
    backend_framework: str = ""
    # `components` (DCDs) or `grove` (one PodCliqueSet for the whole graph).
    pathway: str = PATHWAY_COMPONENTS
    # Grove pathway: the PodCliqueSet, applied and awaited as one unit (its replicas per clique and
    # scaling group are create-only; later changes go through each component's `scale_target`).
    workloads: tuple[Manifest, ...] = ()
    # DGD-managed DynamoCheckpoints (the checkpoint controller then runs their capture Jobs).
    checkpoints: tuple[Manifest, ...] = ()
    # Secrets the graph's pods mount but the user provides (the TRT-LLM MPI SSH key pair).
    required_secrets: tuple[str, ...] = ()
    # `status.checkpoints` entries as the operator reports them.
    checkpoint_status: Mapping[str, Manifest] = field(default_factory=dict)

    def all_objects(self) -> list[Manifest]:
        out = [*self.shared, *self.workloads]
        for c in self.components.values():
            out.extend(c.objects)
        return out
