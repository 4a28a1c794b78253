"""DynamoGraphDeployment as a Pulumi ComponentResource; DynamoComponentDeployment, its component's dynamic
resource."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.admission import GraphAdmission, admission_props
from dynamo_infra.components.args import Kubeconfig, args_of
from dynamo_infra.components.checkpoint import Checkpoint
from dynamo_infra.components.graph_plan import GraphPlan, WorkloadPlan, plan_graph
from dynamo_infra.components.pvc import PersistentVolumeClaim
from dynamo_infra.components.records import GraphRecords
from dynamo_infra.components.scaling import ScalingAdapter
from dynamo_infra.components.workload import ComponentWorkload
from dynamo_infra.config import ClusterOptions
from dynamo_infra.graph_source import GraphSource
from dynamo_infra.kube.client import object_key, stub
from dynamo_infra.reconcile.takeover import merged_take_overs
from dynamo_infra.render import RenderedComponent, RenderedGraph
from dynamo_infra.render.runtime.records import DGD_KIND, RECORD_API_VERSION
from dynamo_infra.render.runtime.replicas import REPLICAS_AGENT, REPLICAS_GRAPH, ReplicaOwner
from dynamo_infra.render.runtime.status import ComponentStatus, graph_status

GRAPH_TYPE = "dynamo-infra:index:DynamoGraphDeployment"
# The component resource a component's workload was a child of in stacks made before (an alias).
COMPONENT_TYPE = "dynamo-infra:index:DynamoComponentDeployment"
# A component's resource: the component's name and this suffix (the name its workload always had).
WORKLOAD_SUFFIX = "-workload"
# The type of every Python dynamic resource.
WORKLOAD_TYPE = "pulumi-python:dynamic:Resource"


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


def former_urn(name: str, parent: pulumi.Resource | None) -> pulumi.Output[str]:
    """The URN component `name`'s resource had as the child of a DynamoComponentDeployment component
    resource of that name, under the same parent."""
    component = pulumi.create_urn(name, COMPONENT_TYPE, parent=parent)
    return pulumi.create_urn(f"{name}{WORKLOAD_SUFFIX}", WORKLOAD_TYPE, parent=component)


def objects_of(component: str, rendered: RenderedGraph) -> list[Manifest]:
    return list(rendered.components[component].objects)


def waiting_of(component: str, rendered: RenderedGraph) -> bool:
    return rendered.components[component].waiting_for_checkpoint


@dataclass(frozen=True)
class DynamoComponentDeploymentArgs:
    """The inputs of a DynamoComponentDeployment (the same as its keyword arguments)."""

    # The component as rendered, and the graph it belongs to.
    rendered: RenderedComponent
    graph: RenderedGraph
    kubeconfig: Kubeconfig
    options: ClusterOptions
    context: str | None = None
    # The component's objects when they depend on its checkpoint (None: the rendering's).
    objects: pulumi.Input[list[Manifest]] | None = None
    # Whether it waits for its checkpoint (reported in its status).
    waiting: pulumi.Input[bool] | None = None
    # Who owns its replicas at run time: all but the graph get them written at creation only.
    replicas: ReplicaOwner = REPLICAS_GRAPH
    # Whether its graph's shared workload, deleted after it, waits at destroy for its objects to be gone.
    graph_awaits_deletion: bool = False


class DynamoComponentDeployment(ComponentWorkload):
    """One component of a graph: the dynamic resource that reconciles its workload, Service and the rest
    as one unit, named `<name>-workload`.

    `objects` and `waiting` override the rendering's when they depend on the component's checkpoint
    (rendered again once its readiness is known). `replicas` names the owner of its replicas at run
    time (`render.runtime.replicas`; a scaling adapter or legacy HPA hands them over whatever it says).
    Stacks made when a component was a component resource holding this one keep its state: the former
    URN is an alias (`former_urn`), and the component resource leaves the stack.
    """

    def __init__(
        self,
        name: str,
        rendered: RenderedComponent | DynamoComponentDeploymentArgs,
        *,
        graph: RenderedGraph | None = None,
        kubeconfig: Kubeconfig | None = None,
        context: str | None = None,
        options: ClusterOptions | None = None,
        objects: pulumi.Input[list[Manifest]] | None = None,
        waiting: pulumi.Input[bool] | None = None,
        replicas: ReplicaOwner | None = None,
        graph_awaits_deletion: bool | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        a = args_of(
            "DynamoComponentDeployment",
            DynamoComponentDeploymentArgs,
            rendered,
            {
                "graph": graph,
                "kubeconfig": kubeconfig,
                "context": context,
                "options": options,
                "objects": objects,
                "waiting": waiting,
                "replicas": replicas,
                "graph_awaits_deletion": graph_awaits_deletion,
            },
        )
        rendered, graph, options, objects, waiting = a.rendered, a.graph, a.options, a.objects, a.waiting
        replicas_external = rendered.scaling_adapter or rendered.autoscaled or a.replicas != REPLICAS_GRAPH
        target = rendered.scale_target
        observe = [observed(target, graph.namespace)] if target else []
        # Grove: the component's replicas go to its PodClique / scaling group, as the operator does.
        scale = (
            {object_key(observe[0]): int(target["replicas"])}
            if target and target.get("replicas") is not None
            else {}
        )
        super().__init__(
            f"{name}{WORKLOAD_SUFFIX}",
            kubeconfig=a.kubeconfig,
            context=a.context,
            namespace=graph.namespace,
            graph=graph.name,
            component=rendered.name,
            objects=list(rendered.objects) if objects is None else objects,
            replicas_external=replicas_external,
            pull_secret_discovery=rendered.pull_secret_discovery,
            observe=observe or None,
            scale=None if replicas_external else scale or None,
            # A new workload of a component the agent scales (its worker hash changed) starts from the
            # replicas the planner chose, as the operator's new DCD would.
            replicas_from={
                "record": stub(RECORD_API_VERSION, DGD_KIND, graph.namespace, graph.name),
                "component": rendered.name,
            }
            if a.replicas == REPLICAS_AGENT
            else None,
            await_policy={
                "mode": options.await_policy.mode,
                "timeoutSeconds": options.await_policy.timeout_seconds,
            },
            graph_awaits_deletion=a.graph_awaits_deletion,
            opts=pulumi.ResourceOptions.merge(
                opts,
                pulumi.ResourceOptions(aliases=[former_urn(name, opts.parent if opts else None)]),
            ),
        )
        self.rendered = rendered
        self.dcd_name = rendered.dcd_name
        # The resource that holds the component's objects: this one.
        self.workload: ComponentWorkload = self
        if waiting is not None:
            self.status = pulumi.Output.all(self.__dict__["status"], waiting).apply(with_waiting)


@dataclass(frozen=True)
class DynamoGraphDeploymentArgs:
    """The inputs of a DynamoGraphDeployment (the same as its keyword arguments)."""

    # A v1alpha1 or v1beta1 DGD, or the path of a YAML file holding one.
    graph: GraphSource
    kubeconfig: Kubeconfig
    context: str | None = None
    options: ClusterOptions | None = None
    # Where the graph runs (None: the options' namespace).
    namespace: str | None = None
    delete_pvcs_on_destroy: bool = False
    # Per component: the autoscaler that owns its replicas (the component must set scalingAdapter).
    autoscalers: Mapping[str, Autoscaler] | None = None
    # Whether the dynamo-infra agent runs for the graph's namespace (it owns planner-scaled and
    # adapted replicas at run time).
    agent: bool = False
    # The current worker hash of the graph's DGD record when it runs (`read_running_worker_hashes`): a
    # generation an earlier dynamo-infra rendered keeps running until its workers change.
    running_worker_hash: str | None = None


def graph_args(
    graph: GraphSource | DynamoGraphDeploymentArgs,
    kubeconfig: Kubeconfig | None,
    **keywords: Any,
) -> DynamoGraphDeploymentArgs:
    """The args given, or those of the keyword arguments (one or the other, not both)."""
    if isinstance(graph, DynamoGraphDeploymentArgs):
        if kubeconfig is not None or any(v not in (None, False) for v in keywords.values()):
            raise TypeError(
                "DynamoGraphDeployment: pass DynamoGraphDeploymentArgs or keyword arguments, not both"
            )
        return graph
    if kubeconfig is None:
        raise TypeError("DynamoGraphDeployment: kubeconfig is required")
    return DynamoGraphDeploymentArgs(graph, kubeconfig, **keywords)


def split_depends_on(
    opts: pulumi.ResourceOptions | None,
) -> tuple[pulumi.ResourceOptions | None, list[pulumi.Resource]]:
    """A graph's options without their `depends_on` resources, and those resources.

    They must exist before the graph's objects are written, so every child that writes waits for them;
    the graph's own registration and a `<name>-admission` (a graph without shared objects) do not, so
    the dynamic-provider process starts while they are still being checked (the SDK registers a
    resource only once what it depends on is done). A `depends_on` given as an Output stays on the graph.
    """
    if opts is None or opts.depends_on is None:
        return opts, []
    deps = opts.depends_on
    listed: list[Any] = (
        [deps] if isinstance(deps, pulumi.Resource) else deps if isinstance(deps, list) else []
    )
    if not listed or not all(isinstance(d, pulumi.Resource) for d in listed):
        return opts, []
    own = copy.copy(opts)
    own.depends_on = None
    return own, list(listed)


def statuses_by_name(names: list[str], values: list[Any]) -> dict[str, Any]:
    return {n: (v or {}) for n, v in zip(names, values, strict=True)}


def overall_status(statuses: Mapping[str, Any]) -> dict[str, Any]:
    """The graph's `state` and `conditions` from its components' statuses, as the operator computes them."""
    return graph_status(
        {
            n: ComponentStatus(
                bool(v.get("ready")),
                str(v.get("reason", "")),
                str(v.get("message", "")),
                waiting_for_checkpoint=bool(v.get("waitingForCheckpoint")),
            )
            for n, v in statuses.items()
        }
    ).to_dict()


class DynamoGraphDeployment(pulumi.ComponentResource):
    """A Dynamo inference graph deployed as the operator would, without the operator.

    `graph` is a v1alpha1 or v1beta1 DGD (typed object, or a YAML file path), or all inputs as
    DynamoGraphDeploymentArgs. Outputs: `state`, `conditions` and per-component `components` status,
    computed as the operator does; `taken_over`: what it took over from the Dynamo operator ({} when
    nothing; docs/how-to/take-over.md); `records`: the graph's DGD and DGDSAs in the
    cluster with live status (docs/concepts/records.md). Claims the graph creates survive `pulumi
    destroy` unless `delete_pvcs_on_destroy` is set.

    With `agent` (the dynamo-infra agent runs for its namespace), replicas the planner or a scaling
    adapter changes at run time are written at creation only (`render.runtime.replicas`); without it, a
    planner that needs the operator's services is deployed with a warning saying what will not work.

    Components with `experimental.checkpoint.enabled` (and the cluster's `checkpoint.enabled`) get a
    `Checkpoint` first; their objects are rendered from its readiness, so `Immediate` components
    start at once and `WaitForCheckpoint` ones start restore-wired once the capture is Ready.
    Output `checkpoints`: per component `{checkpointName, checkpointID, identityHash, ready, phase}`.

    What it creates is `plan_graph`'s plan (see there), which raises AdmissionDenied for a graph the
    operator's validating webhook would deny with these options. Its `admission` child keeps the graph
    as written, so that a later change the webhook would deny fails the preview (the webhook's warnings
    are logged): the shared objects' workload `<name>-shared`, or `<name>-admission` when the graph has
    no shared objects.

    `opts.depends_on` (resources: the platform) is what must exist before the graph's objects are
    written: every child that writes waits for it; the graph's registration and a `<name>-admission` do
    not (`split_depends_on`).
    """

    state: pulumi.Output[str]
    conditions: pulumi.Output[list[dict[str, Any]]]
    component_statuses: pulumi.Output[dict[str, Any]]
    checkpoint_statuses: pulumi.Output[dict[str, Any]]
    taken_over: pulumi.Output[dict[str, Any]]

    def __init__(
        self,
        name: str,
        graph: GraphSource | DynamoGraphDeploymentArgs,
        *,
        kubeconfig: Kubeconfig | None = None,
        context: str | None = None,
        options: ClusterOptions | None = None,
        namespace: str | None = None,
        delete_pvcs_on_destroy: bool = False,
        autoscalers: Mapping[str, Autoscaler] | None = None,
        agent: bool = False,
        running_worker_hash: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        args = graph_args(
            graph,
            kubeconfig,
            context=context,
            options=options,
            namespace=namespace,
            delete_pvcs_on_destroy=delete_pvcs_on_destroy,
            autoscalers=autoscalers,
            agent=agent,
            running_worker_hash=running_worker_hash,
        )
        own_opts, required = split_depends_on(opts)
        super().__init__(GRAPH_TYPE, name, None, own_opts)
        self.plan: GraphPlan = plan_graph(
            name,
            args.graph,
            args.options,
            args.namespace,
            delete_pvcs_on_destroy=args.delete_pvcs_on_destroy,
            autoscalers=args.autoscalers,
            agent=args.agent,
            running_worker_hash=args.running_worker_hash,
        )
        plan = self.plan
        for warning in plan.warnings:
            pulumi.log.warn(f"admission: {warning}", resource=self)
        for warning in plan.unserved:
            pulumi.log.warn(f"graph {name}: {warning}", resource=self)
        self.rendered = plan.rendered
        self._kubeconfig, self._context = args.kubeconfig, args.context
        # The graph rendered again per set of checkpoints whose readiness it depends on.
        self._renders: dict[tuple[str, ...], pulumi.Output[RenderedGraph]] = {}
        # The graph as written, so its next update is admitted as the operator's webhook would: kept by
        # its shared objects' workload (one resource fewer to write), else by a resource of its own.
        # Every other child waits for it.
        admission = (
            admission_props(plan.dgd.to_manifest(), plan.options.operator_features) if plan.admitted else None
        )
        self.shared: ComponentWorkload | None = (
            self._workload(plan.shared, list(plan.shared.objects), list(required), admission)
            if plan.shared
            else None
        )
        self.admission: pulumi.Resource | None = self.shared if admission and self.shared else None
        if admission and not self.shared:
            self.admission = GraphAdmission(
                f"{name}-admission",
                plan.dgd.to_manifest(),
                plan.options.operator_features,
                plan.rendered.namespace,
                opts=pulumi.ResourceOptions(parent=self),
            )
        admitted: list[pulumi.Resource] = [*([self.admission] if self.admission else []), *required]
        depends: list[pulumi.Resource] = list(admitted)
        self.pvcs = {
            c.claim_name: PersistentVolumeClaim(
                c.name,
                kubeconfig=args.kubeconfig,
                context=args.context,
                namespace=plan.rendered.namespace,
                claim_name=c.claim_name,
                graph=plan.rendered.name,
                manifest=c.manifest,
                delete_on_destroy=c.delete_on_destroy,
                await_policy=c.await_policy,
                opts=pulumi.ResourceOptions(parent=self, depends_on=admitted),
            )
            for c in plan.claims
        }
        depends.extend(self.pvcs.values())
        self.podcliqueset: ComponentWorkload | None = None
        if self.shared and self.shared is not self.admission:
            depends.append(self.shared)
        first = [*self.pvcs.values(), *([self.shared] if self.shared else [])]
        if first and required:
            # The later children wait for what the graph depends on through the claims and shared
            # objects, which wait for it: each lists those few, not every resource of the platform.
            depends = [r for r in depends if all(r is not q for q in required)]
        self.checkpoints = {
            c.component: Checkpoint(
                c.name,
                c.checkpoint,
                kubeconfig=args.kubeconfig,
                context=args.context,
                wait=c.wait,
                timeout_seconds=c.timeout_seconds,
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends)),
            )
            for c in plan.checkpoints
        }
        if plan.podcliqueset:
            p = plan.podcliqueset
            objects = (
                self._rendered_ready(p.checkpoints).apply(lambda r: list(r.workloads))
                if p.checkpoints
                else list(p.objects)
            )
            self.podcliqueset = self._workload(p, objects, list(depends))
            depends.append(self.podcliqueset)
        self.components: dict[str, DynamoComponentDeployment] = {}
        for c in plan.components:
            own = self._rendered_ready(c.checkpoints) if c.checkpoints else None
            self.components[c.rendered.name] = DynamoComponentDeployment(
                c.name,
                c.rendered,
                graph=plan.rendered,
                kubeconfig=args.kubeconfig,
                context=args.context,
                options=plan.options,
                objects=own.apply(functools.partial(objects_of, c.rendered.name))
                if own and c.rerender_objects
                else None,
                waiting=own.apply(functools.partial(waiting_of, c.rendered.name)) if own else None,
                replicas=c.replicas,
                graph_awaits_deletion=self.shared is not None,
                opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
            )
        self.scaling_adapters = {
            s.component: ScalingAdapter(
                s.name,
                graph=plan.rendered,
                component=plan.rendered.components[s.component],
                autoscaler=s.autoscaler,
                kubeconfig=args.kubeconfig,
                context=args.context,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.components[s.component]]),
            )
            for s in plan.scaling
        }
        # The graph's DGD and DGDSAs in the cluster, their status from the workloads once awaited.
        self.records = GraphRecords(
            f"{name}-records",
            kubeconfig=args.kubeconfig,
            context=args.context,
            dgd=plan.dgd,
            rendered=plan.rendered,
            replicas={c.rendered.name: c.replicas for c in plan.components},
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[*self.components.values(), *self.scaling_adapters.values()]
            ),
        )
        names = list(self.components)
        statuses = pulumi.Output.all(*[self.components[n].status for n in names]).apply(
            functools.partial(statuses_by_name, names)
        )
        overall = statuses.apply(overall_status)
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
        holders: list[ComponentWorkload | PersistentVolumeClaim] = [
            *self.pvcs.values(),
            *(w for w in (self.shared, self.podcliqueset) if w),
            *(c.workload for c in self.components.values()),
        ]
        self.taken_over = pulumi.Output.all(*[h.taken_over for h in holders], self.records.taken_over).apply(
            merged_take_overs
        )
        self.register_outputs(
            {
                "state": self.state,
                "conditions": self.conditions,
                "components": statuses,
                "checkpoints": self.checkpoint_statuses,
                "takenOver": self.taken_over,
                "recorded": self.records.recorded,
            }
        )

    def _rendered_ready(self, components: tuple[str, ...]) -> pulumi.Output[RenderedGraph]:
        """The graph rendered again with the observed readiness of these components' checkpoints (once
        per set of checkpoints)."""
        if components not in self._renders:
            plan = self.plan
            self._renders[components] = pulumi.Output.all(
                *[self.checkpoints[c].ready for c in components]
            ).apply(
                lambda ready: plan.rendered_with({c: bool(r) for c, r in zip(components, ready, strict=True)})
            )
        return self._renders[components]

    def _workload(
        self,
        workload: WorkloadPlan,
        objects: pulumi.Input[list[Manifest]],
        depends: list[pulumi.Resource],
        admission: Manifest | None = None,
    ) -> ComponentWorkload:
        return ComponentWorkload(
            workload.name,
            kubeconfig=self._kubeconfig,
            context=self._context,
            namespace=self.plan.rendered.namespace,
            graph=self.plan.rendered.name,
            component="",
            objects=objects,
            pull_secret_discovery=workload.pull_secret_discovery,
            await_policy=workload.await_policy,
            admission=admission,
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
        )
