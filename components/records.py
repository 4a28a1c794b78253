"""GraphRecords: the graph's DynamoGraphDeployment and DGDSAs in the cluster, with live status."""

from __future__ import annotations

from typing import Any

import pulumi

from components.takeover import TakingOverResource
from dynamo_infra.api import AnyDGD
from dynamo_infra.api.loader import to_hub
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.kube import object_key, stub
from dynamo_infra.reconcile.records_provider import GraphRecordsProvider
from dynamo_infra.render import RenderedComponent, RenderedGraph
from dynamo_infra.render.records import adapter_record, runtime_namespace
from dynamo_infra.render.status import READINESS


def watched(component: RenderedComponent, namespace: str) -> Manifest:
    """What decides a component's status: its objects (and Grove's PodClique or scaling group), the
    workload among them, and its pods' Dynamo namespace."""
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
    return out


def records_props(dgd: AnyDGD, rendered: RenderedGraph) -> dict[str, Any]:
    """The records' inputs: the graph as written in the hub version, its adapters, what to watch."""
    return {
        "namespace": rendered.namespace,
        "graph": rendered.name,
        "dgd": to_hub(dgd).to_manifest(),
        "annotations": dict(rendered.annotations),
        "adapters": {n: adapter_record(c.adapter) for n, c in rendered.components.items() if c.adapter},
        "components": {n: watched(c, rendered.namespace) for n, c in rendered.components.items()},
    }


class GraphRecords(TakingOverResource):
    """The graph's DGD (v1beta1, as written) and one DGDSA per adapted component, where the platform's
    Dynamo CRDs are installed; their status is written on every create, update and refresh.

    Outputs: `status` (the DGD status), `recorded` ("" when the records are in the cluster, else why
    not), `taken_over` (the operator's DGD or DGDSAs adopted).
    """

    status: pulumi.Output[dict[str, Any]]
    recorded: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        kubeconfig: pulumi.Input[str],
        context: str | None,
        dgd: AnyDGD,
        rendered: RenderedGraph,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "kubeconfig": pulumi.Output.secret(kubeconfig),
            "context": context or "",
            **records_props(dgd, rendered),
            "status": None,
            "recorded": None,
            "inventory": None,
            "takenOver": None,
        }
        super().__init__(GraphRecordsProvider(), name, props, opts)
