"""What a stack (or a set of graph files) applies, as files of manifests: from the pure plans.

The graph's objects come from `dynamo_infra.components.graph_plan.plan_graph`, the cluster layer's from
`dynamo_infra.components.platform_plan.plan_platform`, each stamped as its provider stamps it (inventory label,
owner annotation). What a plan leaves to the cluster is decided as on an empty cluster: the stack owns
the namespace, its service accounts and every CRD it installs; no image pull secrets are discovered;
no MPI SSH key secret is copied (its source is read from the cluster) and no checkpoint capture Job
runs (the DynamoCheckpoint is rendered). `RenderResult.notes` says which of these applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.graph_plan import GraphPlan, plan_graph
from dynamo_infra.components.platform_plan import (
    CRD_API_VERSION,
    DEFAULT_CRD_DIR,
    DEVICE_CLASS_API_VERSION,
    Ownership,
    PlatformArgs,
    PlatformPlan,
    plan_platform,
)
from dynamo_infra.components.records import records_props
from dynamo_infra.config import ClusterOptions
from dynamo_infra.graph_source import load_graph
from dynamo_infra.kube.client import object_key
from dynamo_infra.reconcile.inputs import RECORDS_COMPONENT, apply_order
from dynamo_infra.reconcile.ownership import inventory_id, with_inventory
from dynamo_infra.render.features.autoscaling import autoscaler_object, scale_target
from dynamo_infra.render.go.goyaml import marshal
from dynamo_infra.render.names import LABEL_COMPONENT, LABEL_GRAPH
from dynamo_infra.render.runtime.records import COMPONENTS_ANNOTATION, components_annotation, graph_record
from dynamo_infra.render.runtime.replicas import REPLICAS_GRAPH
from dynamo_infra.stack_config import StackConfig

# The program's platform name (its children are named after it).
PLATFORM_NAME = "platform"
# File of the cluster layer, first in the stream.
PLATFORM_FILE = "_platform.yaml"
# Graph-level parts (not components) start with this, so they sort apart from component files.
GRAPH_PART_PREFIX = "_"
# apiVersion of the agent's kinds, as the Platform creates them with pulumi-kubernetes.
AGENT_API_VERSIONS = {
    "ServiceAccount": "v1",
    "Deployment": "apps/v1",
    "Role": "rbac.authorization.k8s.io/v1",
    "RoleBinding": "rbac.authorization.k8s.io/v1",
}
# Said once when a graph's pods get the image pull secrets a live `up` finds in the namespace.
NOTE_PULL_SECRETS = "image pull secrets found in the namespace at `up` are added to pods: none rendered"
_SNAKE = re.compile(r"_([a-z])")


@dataclass(frozen=True)
class RenderedFile:
    """One output file: its relative name and its objects, in apply order."""

    name: str
    objects: tuple[Manifest, ...]
    # Replicas are written at creation only (an autoscaler, adapter or the agent owns them after).
    replicas_external: bool = False
    # Created when missing, never modified (claims): only their presence matters.
    create_only: bool = False


@dataclass
class RenderResult:
    files: list[RenderedFile] = field(default_factory=list)
    # What the rendering assumed or left out (printed on stderr).
    notes: list[str] = field(default_factory=list)

    def objects(self) -> list[Manifest]:
        return [o for f in self.files for o in f.objects]

    def stream(self) -> str:
        """Every object as one multi-document YAML stream, each file's name as a comment."""
        return "".join(f"---\n# {f.name}\n{dump_yaml(list(f.objects))}" for f in self.files if f.objects)

    def write(self, out: Path) -> list[Path]:
        """One file per entry under `out` (created); returns the paths written."""
        written = []
        for f in self.files:
            if not f.objects:
                continue
            path = out / f.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(dump_yaml(list(f.objects)))
            written.append(path)
        return written


def dump_yaml(objects: list[Manifest]) -> str:
    """Objects as Kubernetes' own YAML writer prints them (strings such as `n` or `on` quoted, so they
    read back as strings in kubectl's YAML 1.1 too; keys sorted)."""
    return "---\n".join(marshal(o) for o in objects)


def file_name(graph: str, part: str) -> str:
    """`<graph>/<part>.yaml`; a part of no component (claims, records) is `_<part>`."""
    return f"{graph}/{part}.yaml"


def _camel(name: str) -> str:
    return _SNAKE.sub(lambda m: m.group(1).upper(), name)


def platform_objects(plan: PlatformPlan) -> list[Manifest]:
    """The cluster layer's objects, as its pulumi-kubernetes resources create them."""
    out: list[Manifest] = []
    if plan.namespace:
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": plan.namespace.metadata})
    for crd in plan.crds:
        out.append(
            {"apiVersion": CRD_API_VERSION, "kind": "CustomResourceDefinition", "metadata": crd.metadata}
            | crd.inputs
        )
    if plan.device_class:
        dc = plan.device_class
        out.append(
            {"apiVersion": DEVICE_CLASS_API_VERSION, "kind": "DeviceClass", "metadata": dc.metadata}
            | dc.inputs
        )
    for role in plan.cluster_roles:
        out.append(
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": role.metadata}
            | role.inputs
        )
    for account in plan.accounts:
        out.extend(account.manifests())
    if plan.mpi_ssh_secret:
        s = plan.mpi_ssh_secret
        out.append({"apiVersion": "v1", "kind": "Secret", "metadata": s.metadata} | s.inputs)
    for kind in ("ServiceAccount", "Role", "RoleBinding", "Deployment"):
        for o in (o for o in plan.agent if o.kind == kind):
            inputs = {_camel(k): v for k, v in o.inputs.items()}
            out.append(
                {"apiVersion": AGENT_API_VERSIONS[kind], "kind": kind, "metadata": o.metadata, **inputs}
            )
    return out


def _stamped(
    objects: list[Manifest], namespace: str, graph: str, component: str, stack: str
) -> tuple[Manifest, ...]:
    """Objects as a ComponentWorkload applies them: in apply order, with its inventory label and the
    stack's stamp (none for graph files rendered outside a stack)."""
    label, inventory = f"{namespace}/{graph}/{component}", inventory_id(namespace, graph, component)
    keyed = {object_key(o): o for o in objects}
    return tuple(with_inventory(keyed[k], label, inventory, stack) for k in apply_order(keyed))


def graph_files(plan: GraphPlan, stack: str = "") -> list[RenderedFile]:
    """A graph's files: claims, shared objects, checkpoints, the PodCliqueSet, one per component,
    autoscalers, and the records (the DGD and DGDSAs); `stack` (`project/stack`) as its objects carry it."""
    r = plan.rendered
    ns, graph = r.namespace, r.name
    files = [
        RenderedFile(
            file_name(graph, "_claims"),
            tuple(c.manifest for c in plan.claims if c.manifest is not None),
            create_only=True,
        )
    ]
    if plan.shared:
        files.append(
            RenderedFile(
                file_name(graph, "_shared"), _stamped(list(plan.shared.objects), ns, graph, "", stack)
            )
        )
    files.append(
        RenderedFile(file_name(graph, "_checkpoints"), tuple(c.checkpoint for c in plan.checkpoints))
    )
    if plan.podcliqueset:
        files.append(
            RenderedFile(
                file_name(graph, "_podcliqueset"),
                _stamped(list(plan.podcliqueset.objects), ns, graph, "", stack),
            )
        )
    for c in plan.components:
        name = c.rendered.name
        external = bool(c.rendered.scaling_adapter or c.rendered.autoscaled or c.replicas != REPLICAS_GRAPH)
        objects = _stamped(list(c.rendered.objects), ns, graph, name, stack)
        files.append(RenderedFile(file_name(graph, name), objects, replicas_external=external))
    autoscalers: list[Manifest] = []
    for s in plan.scaling:
        component = r.components[s.component]
        labels = {LABEL_GRAPH: graph, LABEL_COMPONENT: component.name}
        obj = autoscaler_object(
            scale_target(component.objects, component.scale_target), ns, s.autoscaler, labels
        )
        autoscalers.extend(_stamped([obj], ns, graph, f"{component.name}-autoscaler", stack))
    files.append(RenderedFile(file_name(graph, "_autoscalers"), tuple(autoscalers)))
    files.append(RenderedFile(file_name(graph, "_records"), records(plan, stack)))
    return [f for f in files if f.objects]


def records(plan: GraphPlan, stack: str = "") -> tuple[Manifest, ...]:
    """The graph's DGD record and DGDSAs, as the records provider writes them on a first `up`."""
    r = plan.rendered
    props = records_props(plan.dgd, r, {c.rendered.name: c.replicas for c in plan.components})
    label = f"{r.namespace}/{r.name}/{RECORDS_COMPONENT}"
    inventory = inventory_id(r.namespace, r.name, RECORDS_COMPONENT)
    annotations = {**props["annotations"], COMPONENTS_ANNOTATION: components_annotation(props["components"])}
    record = graph_record(props["dgd"], r.namespace, annotations, {})
    adapters = [with_inventory(a, label, inventory, stack) for a in props["adapters"].values()]
    return (with_inventory(record, label, inventory, stack), *adapters)


def _notes(plan: GraphPlan) -> list[str]:
    graph = plan.rendered.name
    notes = [f"graph {graph}: {w}" for w in (*plan.warnings, *plan.unserved)]
    # A DynamoCheckpoint's capture Job is the provider's; a SnapshotJob (runtime >= 1.5.0) captures itself.
    if any(c.checkpoint.get("kind") == "DynamoCheckpoint" for c in plan.checkpoints):
        notes.append(f"graph {graph}: checkpoint capture Jobs are created by `up` and not rendered")
    return notes


def render_stack(stack: StackConfig, owner: str, project_dir: Path) -> RenderResult:
    """A stack's objects as its `pulumi up` on an empty cluster creates them."""
    options = stack.cluster
    result = RenderResult()
    if (
        options.mpi.ssh_secret_namespace
        and options.mpi.ssh_secret_namespace != options.namespace
        and stack.has_multinode()
    ):
        result.notes.append(
            f"the MPI SSH key secret {options.mpi.ssh_secret_name} is copied from "
            f"{options.mpi.ssh_secret_namespace} at `up`: not rendered"
        )
    args = PlatformArgs(
        namespace=options.namespace,
        ownership=Ownership(owner),
        keep_namespace=stack.keeps_namespace(),
        crds=stack.platform.install_crds,
        crd_dir=project_dir / DEFAULT_CRD_DIR,
        device_class=options.dra.device_class if stack.platform.creates_device_class(options) else None,
        epp=stack.has_epp(),
        mpi_ssh_secret_name=options.mpi.ssh_secret_name,
        agent=stack.agent,
        agent_await=options.await_policy.mode != "skip",
    )
    result.files.append(
        RenderedFile(PLATFORM_FILE, tuple(platform_objects(plan_platform(PLATFORM_NAME, args))))
    )
    plans: list[GraphPlan] = []
    for dgd in stack.graphs:
        plan = plan_graph(
            dgd.name,
            dgd,
            options,
            options.namespace,
            delete_pvcs_on_destroy=stack.delete_pvcs_on_destroy,
            autoscalers=stack.autoscalers.get(dgd.name),
            agent=stack.agent is not None,
        )
        plans.append(plan)
        result.files.extend(graph_files(plan, owner))
        result.notes.extend(_notes(plan))
    result.notes.extend(_pull_secrets_note(plans))
    return result


def _pull_secrets_note(plans: list[GraphPlan]) -> list[str]:
    """The one note on image pull secrets, when a graph's pods get those found in the namespace."""
    discovering = any(
        (p.podcliqueset and p.podcliqueset.pull_secret_discovery)
        or any(c.rendered.pull_secret_discovery for c in p.components)
        for p in plans
    )
    return [NOTE_PULL_SECRETS] if discovering else []


def render_files(paths: list[Path], options: ClusterOptions) -> RenderResult:
    """Graph files' objects with these cluster options (no platform layer)."""
    result = RenderResult()
    plans: list[GraphPlan] = []
    for path in paths:
        dgd = load_graph(path, admission=options.admission.enabled)
        plans.append(plan_graph(dgd.name, dgd, options, options.namespace))
        result.files.extend(graph_files(plans[-1]))
        result.notes.extend(_notes(plans[-1]))
    result.notes.extend(_pull_secrets_note(plans))
    return result


def cluster_options(data: Any, namespace: str | None) -> ClusterOptions:
    """`--cluster` (the shape of `dynamo-infra:cluster`) with `--namespace` over its namespace."""
    values = dict(data or {})
    if namespace:
        values["namespace"] = namespace
    return ClusterOptions.from_config(values)
