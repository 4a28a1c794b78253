"""The typed inputs of each dynamic provider, and what both a provider and its `*_calls` module read.

A provider module (Check and Diff) and its calls module (writes, deletes, reads) both import this
module, never each other: the provider names its calls module and `reconcile.base` imports it on the
first call that needs it. Like the providers, this module loads at import time only `reconcile.base`
and the manifest type (what talks to the cluster is imported inside the properties that need it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.base import Inputs

# Apply order by kind (dependencies first); unknown kinds go after these, before workloads.
KIND_ORDER = (
    "Namespace", "CustomResourceDefinition", "ServiceAccount", "Secret", "ConfigMap", "PersistentVolumeClaim",
    "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ResourceClaimTemplate", "Service",
)  # fmt: skip
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "LeaderWorkerSet", "PodCliqueSet", "Job")


def apply_order(objects: dict[str, Manifest]) -> list[str]:
    def rank(key: str) -> tuple[int, str]:
        kind = objects[key]["kind"]
        if kind in KIND_ORDER:
            return KIND_ORDER.index(kind), key
        if kind in WORKLOAD_KINDS:
            return len(KIND_ORDER) + 1 + WORKLOAD_KINDS.index(kind), key
        return len(KIND_ORDER), key

    return sorted(objects, key=rank)


@dataclasses.dataclass(frozen=True)
class WorkloadInputs(Inputs):
    graph: str = ""
    component: str = ""
    # The stack applying the objects (`project/stack`): another stack's graph of the same name is refused.
    stack: str = ""
    # Manifests by `apiVersion/kind/namespace/name`.
    objects: dict[str, Manifest] = dataclasses.field(default_factory=dict)
    # Replicas are written at creation only (an autoscaler or scaling adapter owns them).
    replicas_external: bool = False
    # {mode: wait|skip, timeoutSeconds}.
    await_: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Replicas of observed objects, set through their scale subresource.
    scale: dict[str, float] | None = None
    # Objects another controller creates for this one (Grove's PodCliques): read, never applied.
    observe: dict[str, Manifest] = dataclasses.field(default_factory=dict)
    pull_secret_discovery: bool = False
    # {record: DGD record stub, component: name}: a workload with external replicas is created with the
    # component's replicas in the live record (those the planner chose), when it has them.
    replicas_from: dict[str, Any] | None = None
    # The graph's own workload (`component` "": its shared objects), deleted after this one, waits for
    # this one's objects to be gone (`workload.await_graph_deletions`): this delete returns once the API
    # server has accepted it, and a graph's components go in parallel.
    graph_awaits_deletion: bool = False
    # The graph as written and the operator's gates the webhook reads ({graph, features}), on the graph's
    # first workload: `check` admits an update of the graph as the validating webhook would.
    admission: dict[str, Any] | None = None

    undiffed = ("graph_awaits_deletion", "admission")

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.graph}/{self.component}"

    @property
    def inventory(self) -> str:
        from dynamo_infra.reconcile.ownership import inventory_id  # here: Check and Diff stay light

        return inventory_id(self.namespace, self.graph, self.component)


@dataclasses.dataclass(frozen=True)
class ClaimInputs(Inputs):
    name: str = ""
    # The graph using the claim (whose DGD may own it, when the operator made it).
    graph: str = ""
    # The claim to create when missing; None when the graph does not create it.
    manifest: Manifest | None = None
    create: bool = False
    delete_on_destroy: bool = False
    # {mode: wait|skip, timeoutSeconds}.
    await_: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def stub(self) -> Manifest:
        from dynamo_infra.kube.client import stub  # here: Check and Diff stay light

        return stub("v1", "PersistentVolumeClaim", self.namespace, self.name)


# Kinds of the snapshot API (`render.features.snapshot`) a checkpoint input may be.
SNAPSHOT_KINDS = ("SnapshotJob", "PodSnapshot")


def meta(obj: Manifest | None) -> Manifest:
    """An object's metadata ({} when it has none)."""
    return (obj or {}).get("metadata") or {}


@dataclasses.dataclass(frozen=True)
class CheckpointInputs(Inputs):
    # The DynamoCheckpoint manifest.
    checkpoint: Manifest = dataclasses.field(default_factory=dict)
    # Its capture Job (rendered by `render.features.checkpoint.capture_job`).
    job: Manifest = dataclasses.field(default_factory=dict)
    # `project/stack/resource`: tells our objects from another stack's.
    owner: str = ""
    # Block until Ready (at most `timeoutSeconds`).
    wait: bool = False
    timeout_seconds: float | None = None

    @property
    def names(self) -> tuple[str, str, str]:
        """Namespace, checkpoint name, capture Job name ("" through the snapshot API)."""
        return self.namespace, meta(self.checkpoint)["name"], str(meta(self.job).get("name") or "")

    @property
    def snapshot_api(self) -> bool:
        """The checkpoint is a SnapshotJob or PodSnapshot (runtime at least 1.5.0)."""
        return self.checkpoint.get("kind") in SNAPSHOT_KINDS

    @property
    def label(self) -> str:
        kind = self.checkpoint.get("kind") or "DynamoCheckpoint"
        return f"{kind} {self.namespace}/{meta(self.checkpoint)['name']}"

    @property
    def job_stub(self) -> Manifest:
        from dynamo_infra.kube.client import stub  # here: Check and Diff stay light

        return stub("batch/v1", "Job", self.namespace, meta(self.job)["name"])


# The inventory "component" of a graph's records (not a valid component name: no clash with one).
RECORDS_COMPONENT = "#records"


@dataclasses.dataclass(frozen=True)
class RecordsInputs(Inputs):
    graph: str = ""
    # The stack writing the records (`project/stack`): another stack's graph of the same name is refused.
    stack: str = ""
    dgd: Manifest = dataclasses.field(default_factory=dict)
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)
    adapters: dict[str, Manifest] = dataclasses.field(default_factory=dict)
    components: dict[str, Manifest] = dataclasses.field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.graph}/{RECORDS_COMPONENT}"

    @property
    def inventory(self) -> str:
        from dynamo_infra.reconcile.ownership import inventory_id  # here: Check and Diff stay light

        return inventory_id(self.namespace, self.graph, RECORDS_COMPONENT)


@dataclasses.dataclass(frozen=True)
class DefinitionsInputs(Inputs):
    """The platform's CustomResourceDefinitions: their digests (what `diff` compares and the state
    keeps readable) and the manifests themselves, packed (`reconcile.base.pack`) and not diffed."""

    # {CRD name: definition_digest of its manifest} (CRDs are independent: applied in any order).
    definitions: dict[str, str] = dataclasses.field(default_factory=dict)
    # {CRD name: manifest}: given packed, read back unpacked (`Inputs.from_props`).
    manifests: dict[str, Manifest] = dataclasses.field(default_factory=dict)
    # The server-side-apply field manager of every stack's cluster-wide objects.
    field_manager: str = ""

    undiffed = ("manifests",)


def definition_digest(manifest: Manifest) -> str:
    """SHA-256 of a manifest's canonical JSON: a CRD's identity in the state."""
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
