"""DynamoGraphDeployment and DynamoComponentDeployment as Pulumi ComponentResources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi

from components.pvc import PersistentVolumeClaim
from components.workload import ComponentWorkload
from dynamo_infra.api import AnyDGD, DynamoValidationError, Problem, load_yaml
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import RenderedComponent, RenderedGraph, render_graph
from dynamo_infra.render.status import ComponentStatus, graph_status

GRAPH_TYPE = "dynamo-infra:index:DynamoGraphDeployment"
COMPONENT_TYPE = "dynamo-infra:index:DynamoComponentDeployment"


def load_graph(source: str | Path | AnyDGD) -> AnyDGD:
    """A typed DGD, or the single DynamoGraphDeployment of a YAML file."""
    if not isinstance(source, str | Path):
        return source
    loaded = load_yaml(Path(source))
    if len(loaded.graphs) != 1:
        raise DynamoValidationError(
            [Problem("", f"expected one DynamoGraphDeployment, found {len(loaded.graphs)}")], str(source)
        )
    return loaded.graphs[0]


def observed(target: dict[str, Any], namespace: str) -> dict[str, Any]:
    """A manifest stub for an object another controller creates (Grove's PodClique or PCSG)."""
    return {
        "apiVersion": target["apiVersion"],
        "kind": target["kind"],
        "metadata": {"name": target["name"], "namespace": namespace},
    }


class DynamoComponentDeployment(pulumi.ComponentResource):
    """One component of a graph: its workload, Service and the rest, reconciled as one unit."""

    status: pulumi.Output[dict[str, Any]]

    def __init__(
        self,
        name: str,
        rendered: RenderedComponent,
        *,
        graph: RenderedGraph,
        kubeconfig: pulumi.Input[str],
        context: str | None,
        options: ClusterOptions,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(COMPONENT_TYPE, name, None, opts)
        self.rendered = rendered
        self.workload = ComponentWorkload(
            f"{name}-workload",
            kubeconfig=kubeconfig,
            context=context,
            namespace=graph.namespace,
            graph=graph.name,
            component=rendered.name,
            objects=list(rendered.objects),
            replicas_external=rendered.scaling_adapter or rendered.autoscaled,
            pull_secret_discovery=rendered.pull_secret_discovery,
            observe=[observed(rendered.scale_target, graph.namespace)] if rendered.scale_target else None,
            await_policy={
                "mode": options.await_policy.mode,
                "timeoutSeconds": options.await_policy.timeout_seconds,
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.status = self.workload.status
        self.register_outputs({"dcdName": rendered.dcd_name, "status": self.status})


class DynamoGraphDeployment(pulumi.ComponentResource):
    """A Dynamo inference graph deployed as the operator would, without the operator.

    `graph` is a v1alpha1 or v1beta1 DGD (typed object, or a YAML file path). Outputs: `state`,
    `conditions` and per-component `components` status, computed as the operator does. Claims the
    graph creates survive `pulumi destroy` unless `delete_pvcs_on_destroy` is set.
    """

    state: pulumi.Output[str]
    conditions: pulumi.Output[list[dict[str, Any]]]
    component_statuses: pulumi.Output[dict[str, Any]]

    def __init__(
        self,
        name: str,
        graph: str | Path | AnyDGD,
        *,
        kubeconfig: pulumi.Input[str],
        context: str | None = None,
        options: ClusterOptions | None = None,
        namespace: str | None = None,
        delete_pvcs_on_destroy: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(GRAPH_TYPE, name, None, opts)
        options = options or ClusterOptions()
        self.rendered = render_graph(load_graph(graph), options, namespace)
        child = pulumi.ResourceOptions(parent=self)
        depends: list[pulumi.Resource] = []
        await_policy = {
            "mode": options.await_policy.mode,
            "timeoutSeconds": options.await_policy.timeout_seconds,
        }
        claims: list[tuple[str, dict[str, Any] | None]] = [
            (str(m["metadata"]["name"]), m) for m in self.rendered.pvcs
        ]
        claims += [(n, None) for n in self.rendered.required_pvcs]
        self.pvcs = {
            claim: PersistentVolumeClaim(
                f"{name}-pvc-{claim}",
                kubeconfig=kubeconfig,
                context=context,
                namespace=self.rendered.namespace,
                claim_name=claim,
                manifest=manifest,
                delete_on_destroy=delete_pvcs_on_destroy,
                await_policy=await_policy,
                opts=child,
            )
            for claim, manifest in claims
        }
        depends.extend(self.pvcs.values())
        if self.rendered.shared:
            self.shared = ComponentWorkload(
                f"{name}-shared",
                kubeconfig=kubeconfig,
                context=context,
                namespace=self.rendered.namespace,
                graph=self.rendered.name,
                component="",
                objects=list(self.rendered.shared),
                await_policy={"mode": "skip", "timeoutSeconds": options.await_policy.timeout_seconds},
                opts=child,
            )
            depends.append(self.shared)
        if self.rendered.workloads:
            # Grove: one PodCliqueSet runs every component; components hold their Services.
            self.podcliqueset = ComponentWorkload(
                f"{name}-podcliqueset",
                kubeconfig=kubeconfig,
                context=context,
                namespace=self.rendered.namespace,
                graph=self.rendered.name,
                component="",
                objects=list(self.rendered.workloads),
                pull_secret_discovery=True,
                await_policy={"mode": "skip", "timeoutSeconds": options.await_policy.timeout_seconds},
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends)),
            )
            depends.append(self.podcliqueset)
        self.components = {
            c.name: DynamoComponentDeployment(
                f"{name}-{c.name.lower()}",
                c,
                graph=self.rendered,
                kubeconfig=kubeconfig,
                context=context,
                options=options,
                opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
            )
            for c in self.rendered.components.values()
        }
        names = list(self.components)
        statuses = pulumi.Output.all(*[self.components[n].status for n in names]).apply(
            lambda values: {n: (v or {}) for n, v in zip(names, values, strict=True)}
        )
        overall = statuses.apply(
            lambda s: graph_status(
                {
                    n: ComponentStatus(
                        bool(v.get("ready")), str(v.get("reason", "")), str(v.get("message", ""))
                    )
                    for n, v in s.items()
                }
            ).to_dict()
        )
        self.component_statuses = statuses
        self.state = overall.apply(lambda o: o["state"])
        self.conditions = overall.apply(lambda o: o["conditions"])
        self.register_outputs({"state": self.state, "conditions": self.conditions, "components": statuses})
