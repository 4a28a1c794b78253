"""DynamoGraphDeployment and DynamoComponentDeployment as Pulumi ComponentResources."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi

from components.checkpoint import Checkpoint
from components.pvc import PersistentVolumeClaim
from components.scaling import ScalingAdapter
from components.workload import ComponentWorkload
from dynamo_infra.api import AnyDGD, DynamoValidationError, Problem, load_yaml
from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.config import ClusterOptions
from dynamo_infra.reconcile.kube import Obj, object_key
from dynamo_infra.render import RenderedComponent, RenderedGraph, render_graph
from dynamo_infra.render.names import LABEL_COMPONENT
from dynamo_infra.render.preflight import unmet_needs
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


def with_waiting(values: list[Any]) -> dict[str, Any]:
    """A component status, marked while its replicas are held at 0 for its checkpoint."""
    status, waiting = dict(values[0] or {}), bool(values[1])
    return {**status, "waitingForCheckpoint": True} if waiting else status


def objects_of(component: str, rendered: RenderedGraph) -> list[Obj]:
    return list(rendered.components[component].objects)


def waiting_of(component: str, rendered: RenderedGraph) -> bool:
    return rendered.components[component].waiting_for_checkpoint


def checkpoint_owners(rendered: RenderedGraph) -> dict[str, Obj]:
    """The graph's DGD-managed DynamoCheckpoints by the component they capture."""
    return {str(o["metadata"]["labels"][LABEL_COMPONENT]): o for o in rendered.checkpoints}


def checked_autoscalers(
    rendered: RenderedGraph, autoscalers: Mapping[str, Autoscaler]
) -> dict[str, Autoscaler]:
    """Autoscalers only for components that exist and hand their replicas over (`scalingAdapter`)."""
    problems = []
    for component in autoscalers:
        c = rendered.components.get(component)
        if c is None:
            problems.append(
                Problem(f"autoscalers.{component}", f"graph {rendered.name} has no component {component!r}")
            )
        elif not c.scaling_adapter:
            problems.append(
                Problem(
                    f"autoscalers.{component}",
                    "the component must set scalingAdapter so the autoscaler owns its replicas",
                )
            )
    if problems:
        raise DynamoValidationError(problems)
    return dict(autoscalers)


class DynamoComponentDeployment(pulumi.ComponentResource):
    """One component of a graph: its workload, Service and the rest, reconciled as one unit.

    `objects` and `waiting` override the rendering's when they depend on the component's checkpoint
    (rendered again once its readiness is known).
    """

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
        objects: pulumi.Input[list[Obj]] | None = None,
        waiting: pulumi.Input[bool] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(COMPONENT_TYPE, name, None, opts)
        self.rendered = rendered
        replicas_external = rendered.scaling_adapter or rendered.autoscaled
        target = rendered.scale_target
        observe = [observed(target, graph.namespace)] if target else []
        # Grove: the component's replicas go to its PodClique / scaling group, as the operator does.
        scale = (
            {object_key(observe[0]): int(target["replicas"])}
            if target and target.get("replicas") is not None
            else {}
        )
        self.workload = ComponentWorkload(
            f"{name}-workload",
            kubeconfig=kubeconfig,
            context=context,
            namespace=graph.namespace,
            graph=graph.name,
            component=rendered.name,
            objects=list(rendered.objects) if objects is None else objects,
            replicas_external=replicas_external,
            pull_secret_discovery=rendered.pull_secret_discovery,
            observe=observe or None,
            scale=None if replicas_external else scale or None,
            await_policy={
                "mode": options.await_policy.mode,
                "timeoutSeconds": options.await_policy.timeout_seconds,
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.status = self.workload.status
        if waiting is not None:
            self.status = pulumi.Output.all(self.workload.status, waiting).apply(with_waiting)
        self.register_outputs({"dcdName": rendered.dcd_name, "status": self.status})


class DynamoGraphDeployment(pulumi.ComponentResource):
    """A Dynamo inference graph deployed as the operator would, without the operator.

    `graph` is a v1alpha1 or v1beta1 DGD (typed object, or a YAML file path). Outputs: `state`,
    `conditions` and per-component `components` status, computed as the operator does. Claims the
    graph creates survive `pulumi destroy` unless `delete_pvcs_on_destroy` is set.

    Components with `experimental.checkpoint.enabled` (and the cluster's `checkpoint.enabled`) get a
    `Checkpoint` first; their objects are rendered from its readiness, so `Immediate` components
    start at once and `WaitForCheckpoint` ones start restore-wired once the capture is Ready.
    Output `checkpoints`: per component `{checkpointName, checkpointID, identityHash, ready, phase}`.

    A graph with components that need what only the operator serves (a planner in its kubernetes
    environment) is refused: DynamoValidationError naming each (`render.preflight`).
    """

    state: pulumi.Output[str]
    conditions: pulumi.Output[list[dict[str, Any]]]
    component_statuses: pulumi.Output[dict[str, Any]]
    checkpoint_statuses: pulumi.Output[dict[str, Any]]

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
        autoscalers: Mapping[str, Autoscaler] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(GRAPH_TYPE, name, None, opts)
        options = options or ClusterOptions()
        dgd = load_graph(graph)
        unmet = unmet_needs(dgd)
        if unmet:
            raise DynamoValidationError(unmet)
        self.rendered = render_graph(dgd, options, namespace)
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
        self.checkpoints = {
            component: Checkpoint(
                f"{name}-checkpoint-{component.lower()}",
                obj,
                kubeconfig=kubeconfig,
                context=context,
                # Only WaitForCheckpoint components wait for the capture (and not where nothing runs pods).
                wait=self.rendered.components[component].waiting_for_checkpoint
                and options.await_policy.mode != "skip",
                timeout_seconds=options.checkpoint.timeout_seconds,
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends)),
            )
            for component, obj in checkpoint_owners(self.rendered).items()
        }

        def rendered_ready(components: list[str]) -> pulumi.Output[RenderedGraph]:
            """The graph rendered again with the observed readiness of these components' checkpoints."""
            readiness = [self.checkpoints[c].ready for c in components]
            return pulumi.Output.all(*readiness).apply(
                lambda ready: render_graph(
                    dgd,
                    options,
                    namespace,
                    checkpoint_ready={c: bool(r) for c, r in zip(components, ready, strict=True)},
                )
            )

        # Grove: one PodCliqueSet for the graph, rendered once every checkpoint's readiness is known.
        everything = (
            rendered_ready(list(self.checkpoints)) if self.checkpoints and self.rendered.workloads else None
        )
        if self.rendered.workloads:
            # Grove: one PodCliqueSet runs every component; components hold their Services.
            self.podcliqueset = ComponentWorkload(
                f"{name}-podcliqueset",
                kubeconfig=kubeconfig,
                context=context,
                namespace=self.rendered.namespace,
                graph=self.rendered.name,
                component="",
                objects=list(self.rendered.workloads)
                if everything is None
                else everything.apply(lambda r: list(r.workloads)),
                pull_secret_discovery=True,
                await_policy={"mode": "skip", "timeoutSeconds": options.await_policy.timeout_seconds},
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends)),
            )
            depends.append(self.podcliqueset)
        self.components: dict[str, DynamoComponentDeployment] = {}
        for c in self.rendered.components.values():
            objects: pulumi.Input[list[Obj]] | None = None
            waiting: pulumi.Output[bool] | None = None
            if c.name in self.checkpoints:
                # Grove: the PodCliqueSet carries the pods, the component only its Services.
                own = everything if self.rendered.workloads else rendered_ready([c.name])
                assert own is not None
                if not self.rendered.workloads:
                    objects = own.apply(functools.partial(objects_of, c.name))
                waiting = own.apply(functools.partial(waiting_of, c.name))
            self.components[c.name] = DynamoComponentDeployment(
                f"{name}-{c.name.lower()}",
                c,
                graph=self.rendered,
                kubeconfig=kubeconfig,
                context=context,
                options=options,
                objects=objects,
                waiting=waiting,
                opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
            )
        self.scaling_adapters = {
            component: ScalingAdapter(
                f"{name}-{component.lower()}-scaling",
                graph=self.rendered,
                component=self.rendered.components[component],
                autoscaler=spec,
                kubeconfig=kubeconfig,
                context=context,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.components[component]]),
            )
            for component, spec in checked_autoscalers(self.rendered, autoscalers or {}).items()
        }
        names = list(self.components)
        statuses = pulumi.Output.all(*[self.components[n].status for n in names]).apply(
            lambda values: {n: (v or {}) for n, v in zip(names, values, strict=True)}
        )
        overall = statuses.apply(
            lambda s: graph_status(
                {
                    n: ComponentStatus(
                        bool(v.get("ready")),
                        str(v.get("reason", "")),
                        str(v.get("message", "")),
                        waiting_for_checkpoint=bool(v.get("waitingForCheckpoint")),
                    )
                    for n, v in s.items()
                }
            ).to_dict()
        )
        self.component_statuses = statuses
        self.state = overall.apply(lambda o: o["state"])
        self.conditions = overall.apply(lambda o: o["conditions"])
        self.checkpoint_statuses = pulumi.Output.from_input(
            {
                c: {
                    "checkpointName": cp.checkpoint_name,
                    "checkpointID": cp.checkpoint_id,
                    "identityHash": cp.identity_hash,
                    "ready": cp.ready,
                    "phase": cp.phase,
                }
                for c, cp in self.checkpoints.items()
            }
        )
        self.register_outputs(
            {
                "state": self.state,
                "conditions": self.conditions,
                "components": statuses,
                "checkpoints": self.checkpoint_statuses,
            }
        )
