"""Replica requests carried to the workloads: a DGDSA's `spec.replicas` into its DGD record (a JSON
patch, as Dynamo's planner makes when there is no adapter), then each agent-owned component's DGD
replicas onto its scale target's scale subresource. Components whose replicas Pulumi or an
autoscaler owns are never scaled."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dynamo_infra.agent.status import Component
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.render.runtime.replicas import REPLICAS_AGENT

Log = Callable[[str], None]


@dataclass(frozen=True)
class Change:
    """One component's replicas changing from `before` (None: unset or unknown) to `after`."""

    component: str
    before: int | None
    after: int


def _replicas(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def adapter_changes(
    dgd: Manifest, components: dict[str, Component], adapters: Sequence[Manifest]
) -> tuple[list[Change], list[Manifest]]:
    """The DGD record's replicas each agent-owned component's adapter asks for, and the JSON patch
    (a `test` of the component's name before each `add`) that writes them; empty when they agree."""
    listed = list((dgd.get("spec") or {}).get("components") or [])
    index = {str(c.get("name")): i for i, c in enumerate(listed)}
    changes: list[Change] = []
    operations: list[Manifest] = []
    for adapter in sorted(adapters, key=lambda a: str(a["metadata"]["name"])):
        spec = adapter.get("spec") or {}
        name = str((spec.get("dgdRef") or {}).get("componentName") or "")
        component = components.get(name)
        wanted = _replicas(spec.get("replicas"))
        i = index.get(name)
        if component is None or component.replicas != REPLICAS_AGENT or wanted is None or i is None:
            continue
        before = _replicas(listed[i].get("replicas"))
        if before == wanted:
            continue
        changes.append(Change(name, before, wanted))
        operations += [
            {"op": "test", "path": f"/spec/components/{i}/name", "value": name},
            {"op": "add", "path": f"/spec/components/{i}/replicas", "value": wanted},
        ]
    return changes, operations


def scale_requests(dgd: Manifest, components: dict[str, Component]) -> list[tuple[Component, int]]:
    """Each agent-owned, scalable component with the replicas its DGD record asks for."""
    out = []
    for c in (dgd.get("spec") or {}).get("components") or []:
        component = components.get(str(c.get("name")))
        replicas = _replicas(c.get("replicas"))
        if component is None or component.replicas != REPLICAS_AGENT or component.scale_target is None:
            continue
        if replicas is not None:
            out.append((component, replicas))
    return out


def carry_adapters(
    client: KubeClient,
    dgd: Manifest,
    components: dict[str, Component],
    adapters: Sequence[Manifest],
    manager: str,
    log: Log,
) -> Manifest:
    """Write the adapters' replicas into the DGD record; returns the record as it now is."""
    changes, operations = adapter_changes(dgd, components, adapters)
    if not operations:
        return dgd
    stored = client.patch(dgd, operations, manager=manager)
    for c in changes:
        log(f"{c.component}: replicas {c.before} -> {c.after} in the DGD record (from its scaling adapter)")
    return stored


def scale_targets(
    client: KubeClient, dgd: Manifest, components: dict[str, Component], manager: str, log: Log
) -> list[Change]:
    """Set each agent-owned component's scale target to its DGD replicas where they differ; a target
    not created yet (Grove's PodClique) is skipped: it starts from its template."""
    done = []
    for component, replicas in scale_requests(dgd, components):
        target = component.scale_target
        assert target is not None
        scale = client.get_scale(target)
        if scale is None:
            continue
        before = _replicas((scale.get("spec") or {}).get("replicas"))
        if before == replicas:
            continue
        client.set_scale(target, replicas, manager=manager)
        done.append(Change(component.name, before, replicas))
        log(f"{component.name}: {target['kind']} {target['metadata']['name']} scaled {before} -> {replicas}")
    return done
