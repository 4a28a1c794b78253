"""GraphRecords: the graph's DynamoGraphDeployment and DGDSAs in the cluster, with live status."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import pulumi

from dynamo_infra.api import AnyDGD
from dynamo_infra.api.loader import to_hub
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.args import Kubeconfig, kubeconfig_props, stack_id
from dynamo_infra.components.takeover import TakingOverResource
from dynamo_infra.kube.client import object_key, stub
from dynamo_infra.reconcile.records_provider import GraphRecordsProvider
from dynamo_infra.render import RenderedComponent, RenderedGraph
from dynamo_infra.render.features.autoscaling import scale_target
from dynamo_infra.render.runtime.planner_status import planner_component_status
from dynamo_infra.render.runtime.records import PLANNER_STATUS_KEY, adapter_record, runtime_namespace
from dynamo_infra.render.runtime.replicas import REPLICAS_GRAPH, ReplicaOwner
from dynamo_infra.render.runtime.status import READINESS


def watched(
    component: RenderedComponent,
    namespace: str,
    replicas: ReplicaOwner = REPLICAS_GRAPH,
    planner: Manifest | None = None,
) -> Manifest:
    """What decides a component's status: its objects (and Grove's PodClique or scaling group), the
    workload among them, and its pods' Dynamo namespace; the object whose scale subresource carries its
    replicas (`scaleTarget`, absent when none) and who owns them (`replicas`); the planner's fields of
    its status (`plannerStatus`, absent below the runtime that publishes them)."""
    objects = [stub(o["apiVersion"], o["kind"], namespace, o["metadata"]["name"]) for o in component.objects]
    target = component.scale_target
    if target:
        objects.append(stub(target["apiVersion"], target["kind"], namespace, target["name"]))
    workload = next((o for o in reversed(objects) if (o["apiVersion"], o["kind"]) in READINESS), None)
    out: Manifest = {
        "watch": {object_key(o): o for o in objects},
        "workload": object_key(workload) if workload else "",
    }
    space = runtime_namespace(component.objects)
    if space:
        out["runtimeNamespace"] = space
    # Absent when nothing of the component has a scale subresource.
    with contextlib.suppress(ValueError):
        out["scaleTarget"] = scale_target(component.objects, component.scale_target)
    out["replicas"] = replicas
    if planner:
        out[PLANNER_STATUS_KEY] = dict(planner)
    return out


def records_props(
    dgd: AnyDGD, rendered: RenderedGraph, replicas: Mapping[str, ReplicaOwner] | None = None
) -> dict[str, Any]:
    """The records' inputs: the graph as written in the hub version, its adapters, what to watch and
    who owns each component's replicas (`replicas`, by component; default the graph)."""
    owners = replicas or {}
    hub = to_hub(dgd).to_manifest()
    specs = {str(c.get("name")): c for c in (hub.get("spec") or {}).get("components") or []}
    graph_objects = (*rendered.shared, *rendered.workloads)

    def planner(name: str, c: RenderedComponent) -> Manifest:
        return planner_component_status(specs.get(name) or {}, c.objects, graph_objects)

    return {
        "namespace": rendered.namespace,
        "graph": rendered.name,
        "dgd": hub,
        "annotations": dict(rendered.annotations),
        "adapters": {n: adapter_record(c.adapter) for n, c in rendered.components.items() if c.adapter},
        "components": {
            n: watched(c, rendered.namespace, owners.get(n, REPLICAS_GRAPH), planner(n, c))
            for n, c in rendered.components.items()
        },
    }


class GraphRecords(TakingOverResource):
    """The graph's DGD (v1beta1, as written) and one DGDSA per adapted component, where the platform's
    Dynamo CRDs are installed; their status is written on every create, update and refresh.

    The DGD carries the annotation `dynamo-infra.io/components` the dynamo-infra agent reads; the
    replicas of components the agent owns (`replicas`) are the live record's once it exists.

    Outputs: `status` (the DGD status), `recorded` ("" when the records are in the cluster, else why
    not), `taken_over` (the operator's DGD or DGDSAs adopted).
    """

    status: pulumi.Output[dict[str, Any]]
    recorded: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        kubeconfig: Kubeconfig,
        context: str | None,
        dgd: AnyDGD,
        rendered: RenderedGraph,
        replicas: Mapping[str, ReplicaOwner] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            **kubeconfig_props(kubeconfig),
            "context": context or "",
            **records_props(dgd, rendered, replicas),
            "stack": stack_id(),
            "status": None,
            "recorded": None,
            "inventory": None,
            "takenOver": None,
        }
        super().__init__(GraphRecordsProvider(), name, props, opts)
