"""The dynamic provider behind every component workload: SSA, prune, await, read, delete.

Inputs (all plain data, so `pulumi preview --diff` shows per-object, per-field changes):
  kubeconfig (secret), context, namespace, graph, component,
  objects: {"apiVersion/kind/namespace/name": manifest}, replicasExternal, await: {mode, timeoutSeconds},
  observe: {key: stub} of objects another controller creates for this one (Grove's PodCliques),
  scale: {observed key: replicas} set through their scale subresource (as the operator does for Grove)
Outputs: the inputs plus `inventory` (keys applied, in order) and `status`.
"""

from __future__ import annotations

import sys
from typing import Any

from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)
from pulumi.output import Unknown

from dynamo_infra.reconcile import connection
from dynamo_infra.reconcile.kube import KubeClient, Obj
from dynamo_infra.reconcile.workload import (
    Ownership,
    apply_objects,
    await_ready,
    delete_objects,
    inventory_id,
    observed_status,
    project,
    prune,
    read_live,
    scale_observed,
    sweep_orphans,
    with_inventory,
)
from dynamo_infra.render.pullsecrets import PullSecret, from_secret, with_workload_pull_secrets

# Input properties whose change means the cluster must be written to.
DIFFED_INPUTS = (
    "kubeconfig",
    "context",
    "namespace",
    "graph",
    "component",
    "objects",
    "replicasExternal",
    "await",
    "scale",
)
# Apply order by kind (dependencies first); unknown kinds go after these, before workloads.
KIND_ORDER = (
    "Namespace", "CustomResourceDefinition", "ServiceAccount", "Secret", "ConfigMap", "PersistentVolumeClaim",
    "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ResourceClaimTemplate", "Service",
)  # fmt: skip
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "LeaderWorkerSet", "PodCliqueSet", "Job")


def apply_order(objects: dict[str, Obj]) -> list[str]:
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


def pod_pull_secrets(obj: Obj) -> list[Obj]:
    return list(
        (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("imagePullSecrets") or []
    )


def log(message: str) -> None:
    """Progress lines; the engine shows a provider's stderr with the resource being worked on."""
    print(message, file=sys.stderr, flush=True)


class ComponentWorkloadProvider(ResourceProvider):
    """Reconciles the Kubernetes objects of one Dynamo component (or a graph's shared objects)."""

    serialize_as_secret_always = False

    # --- helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _client(props: dict[str, Any]) -> KubeClient:
        return KubeClient(connection.load(props["kubeconfig"], props.get("context") or None))

    @staticmethod
    def _label(props: dict[str, Any]) -> str:
        return f"{props.get('namespace')}/{props.get('graph')}/{props.get('component')}"

    def _reconcile(
        self, props: dict[str, Any], previous: list[str], known: dict[str, Obj], created: bool
    ) -> dict[str, Any]:
        objects: dict[str, Obj] = props["objects"]
        order = apply_order(objects)
        ordered = {k: objects[k] for k in order}
        with self._client(props) as client:
            ownership = Ownership(replicas_external=bool(props.get("replicasExternal")))
            secrets: list[str] = []
            if props.get("pullSecretDiscovery"):
                found = discover_pull_secrets(client, props["namespace"])
                ordered = {k: with_workload_pull_secrets(o, found) for k, o in ordered.items()}
                secrets = sorted({r["name"] for o in ordered.values() for r in pod_pull_secrets(o)})
            inventory = inventory_id(props["namespace"], props.get("graph", ""), props.get("component", ""))
            owner = self._label(props)
            apply_objects(
                client, {k: with_inventory(o, owner, inventory) for k, o in ordered.items()}, ownership, log
            )
            prune(client, previous, ordered, known, log)
            kinds = {(o["apiVersion"], o["kind"]) for o in [*ordered.values(), *known.values()]}
            sweep_orphans(client, props["namespace"], inventory, kinds, set(ordered), log)
            observe: dict[str, Obj] = props.get("observe") or {}
            if not ownership.replicas_external:
                scale = props.get("scale") or {}
                scale_observed(client, {k: (observe[k], int(r)) for k, r in scale.items()}, log)
            # Objects another controller creates for us (Grove's PodCliques) count for readiness too.
            watched = {**ordered, **observe}
            awaiting = props.get("await") or {}
            if awaiting.get("mode", "wait") == "skip":
                status = observed_status(read_live(client, list(watched), watched)).to_dict()
            else:
                status = await_ready(
                    client, watched, float(awaiting.get("timeoutSeconds", 600)), log, self._label(props)
                ).to_dict()
        return {**props, "inventory": order, "status": status, "pullSecrets": secrets}

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
        changed = [k for k in DIFFED_INPUTS if olds.get(k) != news.get(k)]
        return DiffResult(
            changes=bool(changed), replaces=[], stables=["graph", "component"], delete_before_replace=False
        )

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = self._reconcile(props, [], {}, created=True)
        return CreateResult(id_=self._label(props), outs=outs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        previous = list(olds.get("inventory") or [])
        known = dict(olds.get("objects") or {})
        return UpdateResult(outs=self._reconcile(news, previous, known, created=False))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        keys = list(props.get("inventory") or apply_order(props.get("objects") or {}))
        objects = dict(props.get("objects") or {})
        with self._client(props) as client:
            delete_objects(client, keys, objects, log)
            inventory = inventory_id(props["namespace"], props.get("graph", ""), props.get("component", ""))
            kinds = {(o["apiVersion"], o["kind"]) for o in objects.values()}
            sweep_orphans(client, props["namespace"], inventory, kinds, set(), log)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Live state of our fields: refresh shows drift, and the next `up` repairs it."""
        objects: dict[str, Obj] = dict(props.get("objects") or {})
        keys = list(props.get("inventory") or apply_order(objects))
        watched: dict[str, Obj] = dict(props.get("observe") or {})
        with self._client(props) as client:
            live = read_live(client, keys, objects)
            # Objects another controller creates for this component (Grove's PodCliques).
            others = read_live(client, list(watched), watched)
        present = {k: o for k, o in live.items() if o is not None}
        if not present:
            return ReadResult(None, {})  # every object is gone: the resource no longer exists
        observed = {
            k: project(present[k], objects[k]) if k in objects else present[k] for k in keys if k in present
        }
        if props.get("replicasExternal"):
            # The autoscaler owns the replica count: its value is not drift.
            for k, o in observed.items():
                wanted = (objects.get(k, {}).get("spec") or {}).get("replicas")
                if wanted is not None and "replicas" in (o.get("spec") or {}):
                    o["spec"]["replicas"] = wanted
        status = observed_status({**{k: present[k] for k in keys if k in present}, **others}).to_dict()
        scale = props.get("scale")
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
        inputs = {k: outs[k] for k in DIFFED_INPUTS if k in outs}
        return ReadResult(id_, outs, inputs)
