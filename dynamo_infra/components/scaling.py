"""ScalingAdapter: the autoscaler (HPA or KEDA ScaledObject) that owns an adapted component's replicas."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.components.args import Kubeconfig, args_of
from dynamo_infra.components.workload import ComponentWorkload
from dynamo_infra.render import RenderedComponent, RenderedGraph
from dynamo_infra.render.features.autoscaling import autoscaler_object, scale_target
from dynamo_infra.render.names import LABEL_COMPONENT, LABEL_GRAPH

SCALING_ADAPTER_TYPE = "dynamo-infra:index:ScalingAdapter"


@dataclass(frozen=True)
class ScalingAdapterArgs:
    """The inputs of a ScalingAdapter (the same as its keyword arguments)."""

    graph: RenderedGraph
    component: RenderedComponent
    autoscaler: Autoscaler
    kubeconfig: Kubeconfig
    context: str | None = None


class ScalingAdapter(pulumi.ComponentResource):
    """Creates the autoscaler for one component; the workload provider has handed it the replicas
    (written once at creation, never again)."""

    def __init__(
        self,
        name: str,
        args: ScalingAdapterArgs | None = None,
        *,
        graph: RenderedGraph | None = None,
        component: RenderedComponent | None = None,
        autoscaler: Autoscaler | None = None,
        kubeconfig: Kubeconfig | None = None,
        context: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        a = args_of(
            "ScalingAdapter",
            ScalingAdapterArgs,
            args,
            {
                "graph": graph,
                "component": component,
                "autoscaler": autoscaler,
                "kubeconfig": kubeconfig,
                "context": context,
            },
        )
        graph, component, autoscaler, kubeconfig, context = (
            a.graph,
            a.component,
            a.autoscaler,
            a.kubeconfig,
            a.context,
        )
        super().__init__(SCALING_ADAPTER_TYPE, name, None, opts)
        target = scale_target(component.objects, component.scale_target)
        labels = {LABEL_GRAPH: graph.name, LABEL_COMPONENT: component.name}
        self.object = autoscaler_object(target, graph.namespace, autoscaler, labels)
        self.workload = ComponentWorkload(
            f"{name}-autoscaler",
            kubeconfig=kubeconfig,
            context=context,
            namespace=graph.namespace,
            graph=graph.name,
            component=f"{component.name}-autoscaler",
            objects=[self.object],
            await_policy={"mode": "skip", "timeoutSeconds": 60},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"target": target, "kind": self.object["kind"]})
