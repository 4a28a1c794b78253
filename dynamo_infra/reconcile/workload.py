"""Reconcile one set of rendered objects: apply, prune, await readiness, read back, delete."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import KubeClient, object_key, stub
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.kube.watch import resource_version
from dynamo_infra.reconcile.base import DELETE_TIMEOUT_S, POLL_INTERVAL_S, AwaitTimeout, await_until
from dynamo_infra.reconcile.observe import observed_status
from dynamo_infra.reconcile.ownership import INVENTORY_LABEL, owner_of
from dynamo_infra.render.names import LABEL_GRAPH
from dynamo_infra.render.runtime.status import ComponentStatus

# Field manager that keeps co-owning a workload's initial replica count once we stop writing it.
REPLICAS_HANDOFF_MANAGER = "dynamo-infra-replicas-handoff"
# The least a delete waits for one more object once the shared deadline has passed (one look).
MIN_WAIT_S = 1.0

Log = Callable[[str], None]
# The kinds of a component's workload, whose foreground deletion waits for their pods (and so a
# graph's destroy waits for them).
# How objects go when someone else waits for their pods (a graph's destroy): at once, their dependents
# left to the garbage collector, which then makes about half the requests of a foreground deletion (no
# finalizer to add and remove, no re-reads) under its client rate limit.
UNWAITED_PROPAGATION = "Background"
# The controllers of the pods a graph's destroy waits for (a Job's, e.g. a checkpoint capture's, stay).
POD_CONTROLLERS = frozenset({"ReplicaSet", "StatefulSet", "PodClique"})
POD_OWNERS = (
    ("apps/v1", "Deployment"), ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    ("grove.io/v1alpha1", "PodCliqueSet"),
)  # fmt: skip


@dataclass(frozen=True)
class Ownership:
    """Fields we set once and then leave to another owner (an autoscaler or scaling adapter)."""

    replicas_external: bool = False
    # Replicas a workload with external replicas is created with instead of its own (the live ones of
    # the graph's record, when another workload of the component had them changed at run time).
    initial_replicas: int | None = None


def _without_replicas(obj: Manifest) -> Manifest:
    out = copy.deepcopy(obj)
    (out.get("spec") or {}).pop("replicas", None)
    return out


def apply_objects(
    client: KubeClient, objects: dict[str, Manifest], ownership: Ownership, log: Log
) -> dict[str, Manifest]:
    """Server-side apply every object in order; returns what the server stored.

    With externally owned replicas, the count is written when the workload is created and then
    co-owned by REPLICAS_HANDOFF_MANAGER, so our later applies (which leave it out) do not remove
    it; an autoscaler that scales the workload takes it over from there.
    """
    stored: dict[str, Manifest] = {}
    for key, obj in objects.items():
        replicas = (obj.get("spec") or {}).get("replicas")
        if not ownership.replicas_external or replicas is None:
            stored[key] = client.apply(obj)
            continue
        live = client.get(obj)
        if live is None:
            if ownership.initial_replicas is not None:
                replicas = ownership.initial_replicas
                obj = {**obj, "spec": {**obj["spec"], "replicas": replicas}}
            stored[key] = client.apply(obj)
            handoff = {
                "apiVersion": obj["apiVersion"],
                "kind": obj["kind"],
                "metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"].get("namespace")},
                "spec": {"replicas": replicas},
            }
            client.apply(handoff, manager=REPLICAS_HANDOFF_MANAGER)
            continue
        current = (live.get("spec") or {}).get("replicas")
        if current != replicas:
            log(
                f"{key}: replicas are owned at run time ({current} now: an autoscaler's, or the planner's or "
                f"DGDSA's carried by the agent); the graph's {replicas} is not applied"
            )
        stored[key] = client.apply(_without_replicas(obj))
    return stored


def scale_observed(client: KubeClient, targets: dict[str, tuple[Manifest, int]], log: Log) -> dict[str, int]:
    """Set the replicas of objects another controller created (Grove's PodCliques and scaling groups)
    through their scale subresource; one not created yet is skipped (it starts from the replicas of
    the template it is created from). Returns the replicas each existing target now has.
    """
    now: dict[str, int] = {}
    for key, (target, replicas) in targets.items():
        scale = client.get_scale(target)
        if scale is None:
            log(f"{key}: not created yet; it will start with the PodCliqueSet's replicas")
            continue
        current = (scale.get("spec") or {}).get("replicas")
        if current != replicas:
            log(f"{key}: scaling {current} -> {replicas}")
            client.set_scale(target, replicas)
        now[key] = replicas
    return now


def sweep_orphans(
    client: KubeClient,
    namespace: str,
    inventory: str,
    kinds: set[tuple[str, str]],
    keep: set[str],
    log: Log,
    wait: bool = True,
) -> list[str]:
    """Delete objects labelled with our inventory id that are not in `keep` (left by an interrupted run),
    each awaited unless `wait` is False."""
    removed: list[str] = []
    for api_version, kind in sorted(kinds):
        if not client.serves(api_version, kind):
            continue
        info = client.resource(api_version, kind)
        for obj in client.list(
            api_version, kind, namespace if info.namespaced else None, f"{INVENTORY_LABEL}={inventory}"
        ):
            key = object_key(obj)
            if key in keep:
                continue
            log(f"pruning {key} (left by an earlier, interrupted run)")
            if client.delete(obj, propagation="Foreground" if wait else UNWAITED_PROPAGATION) and wait:
                client.wait_deleted(obj, DELETE_TIMEOUT_S)
            removed.append(key)
    return removed


def prune(
    client: KubeClient,
    previous: list[str],
    current: dict[str, Manifest],
    known: dict[str, Manifest],
    log: Log,
) -> list[str]:
    """Delete objects of the previous inventory that are no longer rendered."""
    gone = [k for k in previous if k not in current]
    for key in reversed(gone):
        obj = known.get(key) or _stub(key)
        if client.delete(obj):
            log(f"pruning {key}")
            client.wait_deleted(obj, DELETE_TIMEOUT_S)
    return gone


def _stub(key: str) -> Manifest:
    """A minimal manifest addressing the object behind an inventory key."""
    parts = key.split("/")
    return stub("/".join(parts[:-3]), parts[-3], parts[-2], parts[-1])


def read_live(client: KubeClient, keys: list[str], known: dict[str, Manifest]) -> dict[str, Manifest | None]:
    return {k: client.get(known.get(k) or _stub(k)) for k in keys}


def await_ready(
    client: KubeClient,
    objects: dict[str, Manifest],
    timeout: float,
    label: str,
    seen: dict[str, Manifest | None] | None = None,
) -> ComponentStatus:
    """Wait until every object is ready; raise AwaitTimeout naming what is not.

    `seen`: every object as last read (what the apply returned), so the first look makes no request.
    Between looks the client watches the first object that is not ready (the component cannot be
    ready before it changes), where it may watch; otherwise it looks again every POLL_INTERVAL_S.
    """
    live = {k: seen[k] for k in objects} if seen is not None else read_live(client, list(objects), objects)

    def fetch() -> ComponentStatus:
        nonlocal live
        live = read_live(client, list(objects), objects)
        return observed_status(live)

    def wait(_status: ComponentStatus, seconds: float) -> None:
        key = next((k for k, o in live.items() if not observed_status({k: o}).ready), None)
        if key is None or not client.watches(objects[key]):
            time.sleep(POLL_INTERVAL_S)
            return
        seen = resource_version(live[key])
        client.wait_for(objects[key], lambda now: resource_version(now) != seen, seconds, POLL_INTERVAL_S)

    def expired(status: ComponentStatus) -> AwaitTimeout:
        return AwaitTimeout(f"{label}: not ready after {timeout:.0f}s: {status.message or status.reason}")

    def progress(status: ComponentStatus, _elapsed: float) -> str:
        ready, replicas = status.ready_replicas or 0, status.replicas or 0
        return f"{label}: waiting for readiness ({ready}/{replicas} replicas ready)"

    return await_until(
        observed_status(live),
        fetch,
        lambda s: s.ready,
        timeout=timeout,
        expired=expired,
        progress=progress,
        wait=wait,
    )


def delete_objects(
    client: KubeClient,
    keys: list[str],
    known: dict[str, Manifest],
    log: Log,
    keep: Callable[[str], bool] = lambda k: False,
    wait: bool = True,
) -> None:
    """Delete in reverse apply order with foreground propagation, then (unless `wait` is False: someone
    else waits) wait until every one is gone (one DELETE_TIMEOUT_S for all: they go together, as the
    operator's owned objects do)."""
    deleted: list[tuple[str, Manifest]] = []
    for key in reversed(keys):
        if keep(key):
            log(f"retaining {key}")
            continue
        obj = known.get(key) or _stub(key)
        try:
            existed = client.delete(obj, propagation="Foreground" if wait else UNWAITED_PROPAGATION)
        except KubeError as e:
            if e.status == 404:
                continue
            raise
        if existed and wait:
            deleted.append((key, obj))
    wait_all_deleted(client, deleted)


def wait_all_deleted(client: KubeClient, deleted: list[tuple[str, Manifest]]) -> None:
    """Wait until each (key, object) is gone, one DELETE_TIMEOUT_S for all."""
    deadline = time.monotonic() + DELETE_TIMEOUT_S
    for key, obj in deleted:
        if not client.wait_deleted(obj, max(deadline - time.monotonic(), MIN_WAIT_S)):
            raise KubeError(f"{key} still exists {DELETE_TIMEOUT_S:.0f}s after deletion (finalizers?)")


def await_graph_deletions(client: KubeClient, namespace: str, graph: str, log: Log) -> list[str]:
    """Wait until what `graph`'s components deleted without waiting (`graph_awaits_deletion`) is gone:
    its pod owners still being deleted (in the foreground, by an earlier version), then the graph's
    pods run by a workload controller. The keys waited for."""
    owner = f"{namespace}/{graph}/"
    pending: list[tuple[str, Manifest]] = []
    for api_version, kind in POD_OWNERS:
        if not client.serves(api_version, kind):
            continue
        for obj in client.list(api_version, kind, namespace, INVENTORY_LABEL):
            meta = obj.get("metadata") or {}
            if meta.get("deletionTimestamp") and owner_of(obj).startswith(owner):
                pending.append((object_key(obj), obj))
    if pending:
        log(f"waiting for {len(pending)} object(s) of {owner.rstrip('/')} to be gone")
    wait_all_deleted(client, pending)

    def pods() -> list[str]:
        return [
            object_key(p)
            for p in client.list("v1", "Pod", namespace, f"{LABEL_GRAPH}={graph}")
            if any(
                r.get("controller") and r.get("kind") in POD_CONTROLLERS
                for r in (p.get("metadata") or {}).get("ownerReferences") or []
            )
        ]

    running = pods()
    if running:
        log(f"waiting for {len(running)} pod(s) of {owner.rstrip('/')} to be gone")

    def expired(left: list[str]) -> KubeError:
        return KubeError(
            f"{len(left)} pod(s) of {owner.rstrip('/')} still exist {DELETE_TIMEOUT_S:.0f}s after deletion"
        )

    await_until(running, pods, lambda left: not left, timeout=DELETE_TIMEOUT_S, expired=expired)
    return [k for k, _ in pending] + running


def project(live: Any, desired: Any) -> Any:
    """The part of `live` at the paths `desired` sets: what drift on our fields looks like."""
    if isinstance(desired, dict) and isinstance(live, dict):
        return {k: project(live[k], v) for k, v in desired.items() if k in live}
    if isinstance(desired, list) and isinstance(live, list):
        if len(desired) == len(live):
            return [project(lv, dv) for lv, dv in zip(live, desired, strict=True)]
        return live
    return live
