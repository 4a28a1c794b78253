"""What the component workload provider (`reconcile.provider`) does when it writes, deletes or reads:
imported only by `Provider.calls` (named, never imported, by the provider), so a provider process that
only checks and diffs (every preview, every no-op `up`) never loads the kube client, the API models or
the renderer."""

from __future__ import annotations

from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.reconcile.base import await_skipped, await_timeout, log
from dynamo_infra.reconcile.drift import drift_lines, drifted
from dynamo_infra.reconcile.inputs import WORKLOAD_KINDS, WorkloadInputs, apply_order
from dynamo_infra.reconcile.observe import observed_status
from dynamo_infra.reconcile.ownership import refuse_foreign, with_inventory
from dynamo_infra.reconcile.records_calls import record_replicas
from dynamo_infra.reconcile.takeover import OperatorGraph, merged_take_overs, take_over
from dynamo_infra.reconcile.workload import (
    Ownership,
    apply_objects,
    await_graph_deletions,
    await_ready,
    delete_objects,
    project,
    prune,
    read_live,
    scale_observed,
    sweep_orphans,
)
from dynamo_infra.render.features.pullsecrets import PullSecret, from_secret, with_workload_pull_secrets


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


def live_replicas(client: KubeClient, ins: WorkloadInputs) -> int | None:
    """The component's replicas in its graph's live record (`replicasFrom`), None without one."""
    source = ins.replicas_from
    if not ins.replicas_external or not source:
        return None
    return record_replicas(client.get(source["record"])).get(str(source["component"]))


def reconcile(
    ins: WorkloadInputs,
    props: dict[str, Any],
    previous: list[str],
    known: dict[str, Manifest],
    taken: dict[str, Any],
) -> dict[str, Any]:
    """Apply the objects (pruning those dropped since `previous`/`known`), scale and await them: the
    resource's outputs."""
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
        stamped = {k: with_inventory(o, ins.label, ins.inventory, ins.stack) for k, o in ordered.items()}
        # Objects new to this resource may exist already: only ours (this stack's) are applied over,
        # and those the Dynamo operator left for this graph are taken over; a refusal writes nothing.
        operator = OperatorGraph(client, ins.namespace, ins.graph)
        new = {k: o for k, o in stamped.items() if k not in previous}
        adopted = refuse_foreign(client, new, ins.label, operator, ins.stack)
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
        # Each applied object as the apply returned it (stored, status included): only the observed
        # ones are read.
        live = {**read_live(client, list(observe), observe), **stored}
        seen = {k: live[k] for k in watched}
        awaiting = ins.await_ or {}
        if await_skipped(awaiting):
            status = observed_status(seen).to_dict()
        else:
            status = await_ready(client, watched, await_timeout(awaiting), ins.label, seen).to_dict()
    return {
        **props,
        "inventory": order,
        "status": status,
        "pullSecrets": secrets,
        "takenOver": merged_take_overs([taken, report.to_dict()]),
    }


def delete(ins: WorkloadInputs, props: dict[str, Any]) -> None:
    """Delete the objects, then any left behind with the inventory label. The graph's own workload
    (`component` "", deleted after its components) first waits for what they deleted without waiting."""
    objects = dict(ins.objects or {})
    keys = list(props.get("inventory") or apply_order(objects))
    wait = not ins.graph_awaits_deletion
    with ins.client() as client:
        if not ins.component:
            await_graph_deletions(client, ins.namespace, ins.graph, log)
        delete_objects(client, keys, objects, log, wait=wait)
        kinds = {(o["apiVersion"], o["kind"]) for o in objects.values()}
        sweep_orphans(client, ins.namespace, ins.inventory, kinds, set(), log, wait=wait)


def read(ins: WorkloadInputs, props: dict[str, Any]) -> dict[str, Any] | None:
    """Live state of our fields (None: every object is gone)."""
    objects = dict(ins.objects or {})
    keys = list(props.get("inventory") or apply_order(objects))
    watched = dict(ins.observe or {})
    with ins.client() as client:
        live = read_live(client, keys, objects)
        # Objects another controller creates for this component (Grove's PodCliques).
        others = read_live(client, list(watched), watched)
    present = {k: o for k, o in live.items() if o is not None}
    if not present:
        return None  # every object is gone: the resource no longer exists
    observed = {
        k: project(present[k], objects[k]) if k in objects else present[k] for k in keys if k in present
    }
    if ins.replicas_external:
        # The autoscaler owns the replica count: its value is not drift.
        for k, o in observed.items():
            wanted = (objects.get(k, {}).get("spec") or {}).get("replicas")
            if wanted is not None and "replicas" in (o.get("spec") or {}):
                o["spec"]["replicas"] = wanted
    for k, o in observed.items():
        if k in objects:
            changes = drifted(o, objects[k], present[k])
            for line in drift_lines(ins.label, k, changes):
                log(line)
    status = observed_status({**{k: present[k] for k in keys if k in present}, **others}).to_dict()
    scale = ins.scale
    if scale:
        # Replicas of the scaled objects as they are: a hand-made change shows as drift.
        scale = {k: ((others.get(k) or {}).get("spec") or {}).get("replicas", r) for k, r in scale.items()}
    outs = {
        **props,
        "scale": scale,
        "objects": observed,
        "inventory": [k for k in keys if k in present],
        "status": status,
    }
    return outs
