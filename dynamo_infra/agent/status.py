"""The recorded graphs as the agent reads them, and their DGD and DGDSA status from the live workloads.

A graph is the agent's only when our records provider wrote its DGD: the DGD carries the
COMPONENTS_ANNOTATION (what each component watches, its workload and scale target, who owns its
replicas). A DGD the Dynamo operator reconciles has none and is never touched.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from dynamo_infra.agent.errors import AgentError
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import KubeClient, stub
from dynamo_infra.reconcile.observe import record_status
from dynamo_infra.render.runtime.records import (
    COMPONENTS_ANNOTATION,
    DGDSA_KIND,
    PLANNER_STATUS_KEY,
    RECORD_API_VERSION,
    adapter_status,
)
from dynamo_infra.render.runtime.replicas import REPLICAS_GRAPH
from dynamo_infra.render.runtime.status import READINESS


class RecordError(AgentError):
    """The components annotation of a DGD record cannot be read."""


@dataclass(frozen=True)
class Component:
    """One component of a recorded graph, as its DGD record's annotation describes it."""

    name: str
    watch: dict[str, Manifest]
    workload: str
    replicas: str = REPLICAS_GRAPH
    scale_target: Manifest | None = None
    runtime_namespace: str = ""
    # The planner's fields of its status (GPU shape, served model, ...): fixed by the rendering.
    planner_status: Manifest | None = None

    def status_input(self) -> Manifest:
        """What `record_status` reads: the objects that decide readiness (the workload kinds; other
        objects of the component, such as its Service, are Pulumi's to check), and the workload."""
        watch = {k: o for k, o in self.watch.items() if (o.get("apiVersion"), o.get("kind")) in READINESS}
        out: Manifest = {"watch": watch, "workload": self.workload}
        if self.runtime_namespace:
            out["runtimeNamespace"] = self.runtime_namespace
        if self.planner_status:
            out[PLANNER_STATUS_KEY] = self.planner_status
        return out


def recorded(dgd: Manifest) -> bool:
    return COMPONENTS_ANNOTATION in ((dgd.get("metadata") or {}).get("annotations") or {})


def components_of(dgd: Manifest) -> dict[str, Component]:
    """The components of a DGD record (empty for a DGD without the annotation)."""
    meta = dgd.get("metadata") or {}
    text = (meta.get("annotations") or {}).get(COMPONENTS_ANNOTATION)
    if text is None:
        return {}
    where = f"{meta.get('namespace', '')}/{meta.get('name', '')}: annotation {COMPONENTS_ANNOTATION}"
    try:
        raw = json.loads(text)
    except ValueError as e:
        raise RecordError(f"{where} is not JSON ({e})") from None
    if not isinstance(raw, dict):
        raise RecordError(f"{where} is not an object")
    namespace = str(meta.get("namespace", ""))
    out: dict[str, Component] = {}
    for name, c in raw.items():
        if not isinstance(c, dict):
            raise RecordError(f"{where}: component {name} is not an object")
        target = c.get("scaleTarget")
        out[name] = Component(
            name=name,
            watch=dict(c.get("watch") or {}),
            workload=str(c.get("workload") or ""),
            replicas=str(c.get("replicas") or REPLICAS_GRAPH),
            scale_target=stub(target["apiVersion"], target["kind"], namespace, target["name"])
            if target
            else None,
            runtime_namespace=str(c.get("runtimeNamespace") or ""),
            planner_status=dict(c[PLANNER_STATUS_KEY])
            if isinstance(c.get(PLANNER_STATUS_KEY), dict)
            else None,
        )
    return out


def graph_of(adapter: Manifest) -> str:
    return str(((adapter.get("spec") or {}).get("dgdRef") or {}).get("name") or "")


def status_changes(
    client: KubeClient, dgd: Manifest, components: dict[str, Component], adapters: Sequence[Manifest]
) -> list[tuple[Manifest, Manifest]]:
    """The status writes needed, as (object stub, status): none when each status is already so
    (a condition's lastTransitionTime is kept while its status is the same: no churn)."""
    meta = dgd["metadata"]
    inputs = {n: c.status_input() for n, c in components.items()}
    status = record_status(client, inputs, dgd)
    out = []
    if dgd.get("status") != status:
        out.append((stub(dgd["apiVersion"], dgd["kind"], meta["namespace"], meta["name"]), status))
    for adapter in adapters:
        wanted = adapter_status(adapter)
        if adapter.get("status") != wanted:
            name = adapter["metadata"]["name"]
            out.append((stub(RECORD_API_VERSION, DGDSA_KIND, meta["namespace"], name), wanted))
    return out


def write_statuses(client: KubeClient, changes: list[tuple[Manifest, Manifest]], manager: str) -> list[str]:
    """Apply each status through the status subresource; returns what was written (for the log)."""
    written = []
    for target, status in changes:
        client.apply({**target, "status": status}, manager=manager, subresource="status")
        written.append(f"{target['kind']} {target['metadata']['name']}")
    return written
