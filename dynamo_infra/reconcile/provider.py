"""The dynamic provider behind every component workload: SSA, prune, await, read, delete.

Inputs (all plain data, so `pulumi preview --diff` shows per-object, per-field changes):
  kubeconfig (secret), context, namespace, graph, component, stack (`project/stack`),
  objects: {"apiVersion/kind/namespace/name": manifest}, replicasExternal, await: {mode, timeoutSeconds},
  observe: {key: stub} of objects another controller creates for this one (Grove's PodCliques),
  scale: {observed key: replicas} set through their scale subresource (as the operator does for Grove),
  replicasFrom: {record, component}: the graph's DGD record, whose live replicas of the component a
  new workload with external replicas is created with
Outputs: the inputs plus `inventory` (keys applied, in order), `status` and `takenOver` (what was
taken over from the Dynamo operator, kept across updates; {} when nothing).

Check and Diff need only the inputs; what writes, deletes and reads is in `workload_calls`, imported
by those calls (see `reconcile.base`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult
from pulumi.output import Unknown

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.base import Inputs, Provider

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

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.graph}/{self.component}"

    @property
    def inventory(self) -> str:
        from dynamo_infra.reconcile.ownership import inventory_id  # here: Check and Diff stay light

        return inventory_id(self.namespace, self.graph, self.component)


class ComponentWorkloadProvider(Provider[WorkloadInputs]):
    """Reconciles the Kubernetes objects of one Dynamo component (or a graph's shared objects)."""

    inputs = WorkloadInputs

    # --- ResourceProvider -------------------------------------------------------------------------

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        objects = news.get("objects")
        if isinstance(objects, Unknown):
            pass  # preview: rendered once a checkpoint's readiness is known
        elif not isinstance(objects, dict):
            failures.append(CheckFailure("objects", "must be a mapping of object key to manifest"))
        else:
            for key, obj in objects.items():
                if (
                    not isinstance(obj, dict)
                    or not obj.get("apiVersion")
                    or not obj.get("kind")
                    or not (obj.get("metadata") or {}).get("name")
                ):
                    failures.append(
                        CheckFailure(f"objects.{key}", "manifest needs apiVersion, kind and metadata.name")
                    )
        scale = news.get("scale")
        if scale is not None and not isinstance(scale, Unknown):
            observe = news.get("observe") or {}
            for key, replicas in (scale or {}).items():
                if key not in observe:
                    failures.append(CheckFailure(f"scale.{key}", "names no object in `observe`"))
                elif not isinstance(replicas, int | float) or replicas < 0 or int(replicas) != replicas:
                    failures.append(CheckFailure(f"scale.{key}", "replicas must be a non-negative integer"))
        if not news.get("kubeconfig"):
            failures.append(CheckFailure("kubeconfig", "a kubeconfig (content or path) is required"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = self.changes(olds, news)
        return DiffResult(
            changes=bool(changed), replaces=[], stables=["graph", "component"], delete_before_replace=False
        )

    def create(self, props: dict[str, Any]) -> CreateResult:
        from dynamo_infra.reconcile import workload_calls as calls  # here: Check and Diff stay light

        ins = self.typed(props)
        return CreateResult(id_=ins.label, outs=calls.reconcile(ins, props, [], {}, {}))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        from dynamo_infra.reconcile import workload_calls as calls

        previous = list(olds.get("inventory") or [])
        known = dict(olds.get("objects") or {})
        taken = dict(olds.get("takenOver") or {})
        return UpdateResult(outs=calls.reconcile(self.typed(news), news, previous, known, taken))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        from dynamo_infra.reconcile import workload_calls as calls

        calls.delete(self.typed(props), props)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Live state of our fields: refresh shows drift, and the next `up` repairs it."""
        from dynamo_infra.reconcile import workload_calls as calls

        outs = calls.read(self.typed(props), props)
        return ReadResult(None, {}) if outs is None else self.read_result(id_, outs)
