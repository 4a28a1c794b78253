"""The dynamic resource that holds one component's (or a graph's shared) Kubernetes objects."""

from __future__ import annotations

from typing import Any

import pulumi

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.args import Kubeconfig, kubeconfig_props, stack_id
from dynamo_infra.components.takeover import TakingOverResource
from dynamo_infra.kube.client import object_key
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider


def keyed(objects: list[Manifest]) -> dict[str, Manifest]:
    """Objects by `apiVersion/kind/namespace/name`."""
    return {object_key(o): o for o in objects}


def objects_input(objects: pulumi.Input[list[Manifest]]) -> pulumi.Output[dict[str, Manifest]]:
    """The `objects` input: keyed, and one Output, secret as a whole when any value in it is (the
    outputs keep it packed in one string, where the engine could not mark a nested secret)."""
    return pulumi.Output.from_input(objects).apply(keyed)


class ComponentWorkload(TakingOverResource):
    """Objects keyed by `apiVersion/kind/namespace/name`; status and inventory come back as outputs.

    `observe` names objects another controller creates for this one (read for status; never written
    but for `scale`: their replicas, set through the scale subresource unless `replicas_external`).
    `objects` may be an Output (a component rendered once its checkpoint's readiness is known).
    `replicas_from` (`{record, component}`): a workload with external replicas is created with the
    component's replicas in that live DGD record (a new workload of a component the planner scaled).
    `graph_awaits_deletion`: the graph's own workload (`component` ""), which depends on this one, waits
    at destroy for its objects to be gone; this one's delete returns once the API server accepted it.
    `admission` ({graph, features}: the graph as written, the operator's gates the webhook reads), on a
    graph's first workload: an update of the graph the webhook would deny fails its check.
    The state keeps `objects` readable as inputs; the output is packed (`reconcile.base.pack`).
    """

    status: pulumi.Output[dict[str, Any]]
    inventory: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        *,
        kubeconfig: Kubeconfig,
        context: str | None,
        namespace: str,
        graph: str,
        component: str,
        objects: pulumi.Input[list[Manifest]],
        replicas_external: bool = False,
        pull_secret_discovery: bool = False,
        observe: list[Manifest] | None = None,
        scale: dict[str, int] | None = None,
        await_policy: dict[str, Any] | None = None,
        replicas_from: Manifest | None = None,
        graph_awaits_deletion: bool = False,
        admission: Manifest | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            **kubeconfig_props(kubeconfig),
            "context": context or "",
            "namespace": namespace,
            "graph": graph,
            "component": component,
            "stack": stack_id(),
            "objects": objects_input(objects),
            "observe": {object_key(o): o for o in observe or []},
            "scale": scale or None,
            "replicasExternal": replicas_external,
            "pullSecretDiscovery": pull_secret_discovery,
            "await": await_policy or {"mode": "wait", "timeoutSeconds": 600},
            "replicasFrom": replicas_from,
            "graphAwaitsDeletion": graph_awaits_deletion,
            "status": None,
            "inventory": None,
            "pullSecrets": None,
            "takenOver": None,
        }
        if admission is not None:
            props["admission"] = admission
        super().__init__(ComponentWorkloadProvider(), name, props, opts)
