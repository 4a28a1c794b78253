"""The dynamic provider behind every component workload: SSA, prune, await, read, delete.

Inputs (all plain data, so `pulumi preview --diff` shows per-object, per-field changes):
  kubeconfig (secret), context, namespace, graph, component, stack (`project/stack`),
  objects: {"apiVersion/kind/namespace/name": manifest}, replicasExternal, await: {mode, timeoutSeconds},
  observe: {key: stub} of objects another controller creates for this one (Grove's PodCliques),
  scale: {observed key: replicas} set through their scale subresource (as the operator does for Grove),
  replicasFrom: {record, component}: the graph's DGD record, whose live replicas of the component a
  new workload with external replicas is created with, graphAwaitsDeletion (not diffed): the graph's
  own workload waits for this one's objects at destroy, so its delete does not,
  admission (not diffed, on a graph's first workload): {graph, features}, the graph as written, whose
  update `check` admits as the operator's validating webhook would (`reconcile.review`)
Outputs: the inputs (`objects` and `admission` packed: `reconcile.base.pack`) plus `inventory` (keys
applied, in order), `status` and `takenOver` (what was taken over from the Dynamo operator, kept across updates;
{} when nothing).

Check and Diff need only the inputs; what writes, deletes and reads is in `workload_calls`, imported
on the first of those calls by `Provider.calls` (see `reconcile.base`); the inputs are in
`reconcile.inputs`.
"""

from __future__ import annotations

from typing import Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult
from pulumi.output import Unknown

from dynamo_infra.reconcile.base import Provider, kubeconfig_given
from dynamo_infra.reconcile.inputs import WorkloadInputs
from dynamo_infra.reconcile.review import review_change


class ComponentWorkloadProvider(Provider[WorkloadInputs]):
    """Reconciles the Kubernetes objects of one Dynamo component (or a graph's shared objects)."""

    inputs = WorkloadInputs
    calls_module = "dynamo_infra.reconcile.workload_calls"
    packed = ("objects", "admission")

    # --- ResourceProvider -------------------------------------------------------------------------

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = self.admit(olds, news)
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
        if not kubeconfig_given(news):
            failures.append(CheckFailure("kubeconfig", "a kubeconfig (content or path) is required"))
        return CheckResult(news, failures)

    def admit(self, olds: dict[str, Any], news: dict[str, Any]) -> list[CheckFailure]:
        """The webhook's denials of the graph's update, when this workload carries its admission."""
        old, new = olds.get("admission"), news.get("admission")
        if not isinstance(new, dict) or not isinstance(old, dict):
            return []
        return review_change(
            old.get("graph"),
            new.get("graph") or {},
            new.get("features") or {},
            str(news.get("namespace") or ""),
        )

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = self.changes(olds, news)
        return DiffResult(
            changes=bool(changed), replaces=[], stables=["graph", "component"], delete_before_replace=False
        )

    def create(self, props: dict[str, Any]) -> CreateResult:
        ins = self.typed(props)
        return CreateResult(
            id_=ins.label, outs=self.outputs(self.calls(ins).reconcile(ins, props, [], {}, {}))
        )

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        ins = self.typed(news)
        previous = list(olds.get("inventory") or [])
        known = dict(self.typed(olds).objects or {})
        taken = dict(olds.get("takenOver") or {})
        return UpdateResult(outs=self.outputs(self.calls(ins).reconcile(ins, news, previous, known, taken)))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        ins = self.typed(props)
        self.calls(ins).delete(ins, props)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Live state of our fields: refresh shows drift, and the next `up` repairs it."""
        ins = self.typed(props)
        outs = self.calls(ins).read(ins, props)
        return ReadResult(None, {}) if outs is None else self.read_result(id_, outs)
