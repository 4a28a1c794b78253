"""The dynamic provider behind every component workload: SSA, prune, await, read, delete.

Inputs (all plain data, so `pulumi preview --diff` shows per-object, per-field changes):
  kubeconfig (secret), context, namespace, graph, component,
  objects: {"apiVersion/kind/namespace/name": manifest}, replicasExternal, await: {mode, timeoutSeconds},
  observe: {key: stub} of objects another controller creates for this one (Grove's PodCliques),
  scale: {observed key: replicas} set through their scale subresource (as the operator does for Grove),
  replicasFrom: {record, component}: the graph's DGD record, whose live replicas of the component a
  new workload with external replicas is created with
Outputs: the inputs plus `inventory` (keys applied, in order), `status` and `takenOver` (what was
taken over from the Dynamo operator, kept across updates; {} when nothing).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult
from pulumi.output import Unknown

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.base import Inputs, Provider, await_skipped, await_timeout, log
from dynamo_infra.reconcile.kube import KubeClient
from dynamo_infra.reconcile.observe import observed_status
from dynamo_infra.reconcile.ownership import inventory_id, refuse_foreign, with_inventory
from dynamo_infra.reconcile.records_provider import record_replicas
from dynamo_infra.reconcile.takeover import OperatorGraph, merged_take_overs, take_over
from dynamo_infra.reconcile.workload import (
    Ownership,
    apply_objects,
    await_ready,
    delete_objects,
    project,
    prune,
    read_live,
    scale_observed,
    sweep_orphans,
)
from dynamo_infra.render.pullsecrets import PullSecret, from_secret, with_workload_pull_secrets

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


def discover_pull_secrets(client: KubeClient, namespace: str) -> list[PullSecret]:
    """The namespace's dockerconfigjson secrets (only cluster-side knowledge the render needs)."""
    found = (
        from_secret(s)
        for s in client.list("v1", "Secret", namespace, field_selector="type=kubernetes.io/dockerconfigjson")
    )
    return [s for s in found if s is not None]


def pod_pull_secrets(obj: Manifest) -> list[Manifest]:
    return list(
        (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("imagePullSecrets") or []
    )


@dataclasses.dataclass(frozen=True)
class WorkloadInputs(Inputs):
    graph: str = ""
    component: str = ""
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
        return inventory_id(self.namespace, self.graph, self.component)


def live_replicas(client: KubeClient, ins: WorkloadInputs) -> int | None:
    """The component's replicas in its graph's live record (`replicasFrom`), None without one."""
    source = ins.replicas_from
    if not ins.replicas_external or not source:
        return None
    return record_replicas(client.get(source["record"])).get(str(source["component"]))


class ComponentWorkloadProvider(Provider[WorkloadInputs]):
    """Reconciles the Kubernetes objects of one Dynamo component (or a graph's shared objects)."""

    inputs = WorkloadInputs

    def _reconcile(
        self, props: dict[str, Any], previous: list[str], known: dict[str, Manifest], taken: dict[str, Any]
    ) -> dict[str, Any]:
        ins = self.typed(props)
        order = apply_order(ins.objects)
        ordered = {k: ins.objects[k] for k in order}
        with ins.client() as client:
            ownership = Ownership(
                replicas_external=bool(ins.replicas_external), initial_replicas=live_replicas(client, ins)
            )
            secrets: list[str] = []
            if ins.pull_secret_discovery:
                found = discover_pull_secrets(client, ins.namespace)
                ordered = {k: with_workload_pull_secrets(o, found) for k, o in ordered.items()}
                secrets = sorted({r["name"] for o in ordered.values() for r in pod_pull_secrets(o)})
            stamped = {k: with_inventory(o, ins.label, ins.inventory) for k, o in ordered.items()}
            # Objects new to this resource may exist already: only ours are applied over, and those the
            # Dynamo operator left for this graph are taken over.
            operator = OperatorGraph(client, ins.namespace, ins.graph)
            new = {k: o for k, o in stamped.items() if k not in previous}
            adopted = refuse_foreign(client, new, ins.label, operator)
            # Workloads as the operator left them, to tell whether our apply replaces their pods.
            before = {k: client.get(stamped[k]) for k in adopted if stamped[k]["kind"] in WORKLOAD_KINDS}
            stored = apply_objects(client, stamped, ownership, log)
            report = take_over(operator, adopted, before, stored)
            for line in report.lines(ins.label.rstrip("/")):
                log(line)
            prune(client, previous, ordered, known, log)
            kinds = {(o["apiVersion"], o["kind"]) for o in [*ordered.values(), *known.values()]}
            sweep_orphans(client, ins.namespace, ins.inventory, kinds, set(ordered), log)
            observe = ins.observe or {}
            if not ownership.replicas_external:
                scale = ins.scale or {}
                scale_observed(client, {k: (observe[k], int(r)) for k, r in scale.items()}, log)
            # Objects another controller creates for us (Grove's PodCliques) count for readiness too.
            watched = {**ordered, **observe}
            awaiting = ins.await_ or {}
            if await_skipped(awaiting):
                status = observed_status(read_live(client, list(watched), watched)).to_dict()
            else:
                status = await_ready(client, watched, await_timeout(awaiting), ins.label).to_dict()
        return {
            **props,
            "inventory": order,
            "status": status,
            "pullSecrets": secrets,
            "takenOver": merged_take_overs([taken, report.to_dict()]),
        }

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
        outs = self._reconcile(props, [], {}, {})
        return CreateResult(id_=self.typed(props).label, outs=outs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        previous = list(olds.get("inventory") or [])
        known = dict(olds.get("objects") or {})
        taken = dict(olds.get("takenOver") or {})
        return UpdateResult(outs=self._reconcile(news, previous, known, taken))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        ins = self.typed(props)
        objects = dict(ins.objects or {})
        keys = list(props.get("inventory") or apply_order(objects))
        with ins.client() as client:
            delete_objects(client, keys, objects, log)
            kinds = {(o["apiVersion"], o["kind"]) for o in objects.values()}
            sweep_orphans(client, ins.namespace, ins.inventory, kinds, set(), log)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Live state of our fields: refresh shows drift, and the next `up` repairs it."""
        ins = self.typed(props)
        objects = dict(ins.objects or {})
        keys = list(props.get("inventory") or apply_order(objects))
        watched = dict(ins.observe or {})
        with ins.client() as client:
            live = read_live(client, keys, objects)
            # Objects another controller creates for this component (Grove's PodCliques).
            others = read_live(client, list(watched), watched)
        present = {k: o for k, o in live.items() if o is not None}
        if not present:
            return ReadResult(None, {})  # every object is gone: the resource no longer exists
        observed = {
            k: project(present[k], objects[k]) if k in objects else present[k] for k in keys if k in present
        }
        if ins.replicas_external:
            # The autoscaler owns the replica count: its value is not drift.
            for k, o in observed.items():
                wanted = (objects.get(k, {}).get("spec") or {}).get("replicas")
                if wanted is not None and "replicas" in (o.get("spec") or {}):
                    o["spec"]["replicas"] = wanted
        status = observed_status({**{k: present[k] for k in keys if k in present}, **others}).to_dict()
        scale = ins.scale
        if scale:
            # Replicas of the scaled objects as they are: a hand-made change shows as drift.
            scale = {
                k: ((others.get(k) or {}).get("spec") or {}).get("replicas", r) for k, r in scale.items()
            }
        outs = {
            **props,
            "scale": scale,
            "objects": observed,
            "inventory": [k for k in keys if k in present],
            "status": status,
        }
        return self.read_result(id_, outs)
