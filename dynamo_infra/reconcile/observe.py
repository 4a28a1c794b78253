"""A component's and a graph record's status from the live objects (reads only; no Pulumi: the agent
uses it too)."""

from __future__ import annotations

import datetime
from dataclasses import replace

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.render.runtime.records import PLANNER_STATUS_KEY, graph_record_status
from dynamo_infra.render.runtime.status import ComponentStatus, component_status

# Status reason while an object of the component (e.g. Grove's PodClique) does not exist yet.
REASON_NOT_CREATED = "NotCreated"
# Condition times as metav1.Time writes them.
RFC3339 = "%Y-%m-%dT%H:%M:%SZ"


def observed_status(live: dict[str, Manifest | None]) -> ComponentStatus:
    """Status from what exists; an object not created yet (Grove's PodClique, say) is not ready."""
    status = component_status([o for o in live.values() if o is not None])
    missing = [k for k, o in live.items() if o is None]
    if not missing:
        return status
    note = "; ".join(f"{k} does not exist yet" for k in missing)
    return replace(
        status,
        ready=False,
        reason=REASON_NOT_CREATED if status.ready else status.reason,
        message="; ".join(m for m in (status.message, note) if m),
    )


def component_statuses(
    client: KubeClient, components: dict[str, Manifest]
) -> tuple[dict[str, ComponentStatus], dict[str, Manifest | None]]:
    """Each component's status and live workload, from the objects it watches."""
    statuses: dict[str, ComponentStatus] = {}
    workloads: dict[str, Manifest | None] = {}
    for name, c in components.items():
        watch: dict[str, Manifest] = c.get("watch") or {}
        live = {k: client.get(o) for k, o in watch.items()}
        statuses[name] = observed_status(live)
        workloads[name] = live.get(str(c.get("workload") or ""))
    return statuses, workloads


def record_status(client: KubeClient, components: dict[str, Manifest], live: Manifest | None) -> Manifest:
    """The DGD status from its components' live objects; `live`: the DGD as it is (its generation, and
    the condition times kept while a condition does not change)."""
    statuses, workloads = component_statuses(client, components)
    spaces = {n: str(c["runtimeNamespace"]) for n, c in components.items() if c.get("runtimeNamespace")}
    planner = {n: dict(c[PLANNER_STATUS_KEY]) for n, c in components.items() if c.get(PLANNER_STATUS_KEY)}
    # The generation of the DGD as read: the planner trusts the status only when they are equal.
    generation = int((live or {}).get("metadata", {}).get("generation", 0)) or None
    now = datetime.datetime.now(datetime.UTC).strftime(RFC3339)
    return graph_record_status(
        statuses, workloads, spaces, generation, (live or {}).get("status"), now, planner
    )
