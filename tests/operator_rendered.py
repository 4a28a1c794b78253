"""Our objects against what the real operator created (`tests/data/corpus/operator-rendered/`).

Each file there holds the objects the operator (the parity pin, cluster-wide mode) created for one
corpus graph file in one pass (`single/`, `lws/`, `grove/`, each with its cluster options), read back
from its API server. We render the same graphs with the same options and add what our platform layer
creates in the namespace instead of the operator (the planner/EPP accounts and bindings, the MPI SSH
key copy); both sides are normalised as the corpus README says and keyed `(kind, name)`.

A graph the operator failed on (the file then holds what it created before the failing step) is
refused by `render_graph` before any write: REFUSED gives the reason that must be among our
problems, and `render.partial` says what the operator creates for it all the same.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import yaml

from dynamo_infra.api import AnyDGD, DynamoValidationError, to_hub
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components import Ownership, PlatformArgs, plan_platform
from dynamo_infra.components.platform_plan import OWNER_ANNOTATION
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph
from dynamo_infra.render.components.epp import has_epp
from dynamo_infra.render.graph import has_multinode_component
from tests.conftest import CORPUS, DATA, REPO, load_corpus
from tests.partial import operator_partial

RENDERED = CORPUS / "operator-rendered"
GRAPHS = CORPUS / "graphs"
# The operator's source MPI SSH key secret in that run (copied into namespaces with multinode graphs).
MPI_SOURCE = DATA / "operator-rendered-inputs" / "mpi-run-ssh-secret.yaml"
# Cluster options of each pass besides the namespace (corpus README).
PASSES: Mapping[str, Manifest] = {
    "single": {},
    "lws": {"multinode": {"orchestrator": "lws"}},
    "grove": {"multinode": {"orchestrator": "grove"}},
}
# Every pass: DRA (the operator detects resource.k8s.io/v1 on Kubernetes 1.36); the operator at our pin
# had no runtime-version gates (a 1.5.1 image rendered as any other).
COMMON_OPTIONS: Manifest = {"dra": {"enabled": True}, "runtimeVersionGates": False}
# Stack the platform objects are planned for (its name only lands in OWNER_ANNOTATION).
STACK = "dynamo-infra/operator-rendered"

# Files holding what the operator created before a step failed, or objects of a graph its webhook
# denies (the run had the webhook off): the reason that must be among our problems. `render.partial`
# gives the objects the operator created all the same.
NO_ORCHESTRATOR = "no multinode orchestrator available"
TRTLLM_FAILOVER = "failover is currently supported only for vLLM (detected: trtllm)"
DEFAULT_TYPE = 'spec.type: Unsupported value: "default"'
CHECKPOINT_OFF = "checkpoint functionality is disabled in the operator configuration"
# Intra-pod failover on LWS: the DCD controller finds no container named `main` in the pod spec.
MAIN_CONTAINER_NOT_FOUND = "main container not found in pod spec"
REFUSED: Mapping[str, str] = {
    "single/v1alpha1__trtllm__agg_failover_eagle.yaml": TRTLLM_FAILOVER,
    "single/v1alpha1__trtllm__disagg-multinode.yaml": NO_ORCHESTRATOR,
    "single/v1alpha1__vllm__disagg-multinode.yaml": NO_ORCHESTRATOR,
    "single/v1alpha1__vllm__docs-topology-service-level.yaml": NO_ORCHESTRATOR,
    "single/v1alpha1__vllm__hplanner-gpu-budget.yaml": DEFAULT_TYPE,
    "single/v1alpha1__vllm__vllm-multinode-failover.yaml": NO_ORCHESTRATOR,
    "single/v1beta1__vllm__dgd-gms-failover-multinode.yaml": NO_ORCHESTRATOR,
    "single/v1beta1__trtllm__snapshot-restore.yaml": CHECKPOINT_OFF,
    "single/v1beta1__vllm__agg_snapshot_tp8.yaml": CHECKPOINT_OFF,
    "lws/v1alpha1__vllm__vllm-multinode-failover.yaml": MAIN_CONTAINER_NOT_FOUND,
    "grove/v1alpha1__trtllm__agg_failover_eagle.yaml": TRTLLM_FAILOVER,
    "grove/v1beta1__trtllm__snapshot-restore.yaml": CHECKPOINT_OFF,
    "grove/v1beta1__vllm__agg_snapshot_tp8.yaml": CHECKPOINT_OFF,
}
# Kinds the operator creates before any component's: in a refused file they must match both ways;
# component objects the operator created must be among ours (it stops at a random component).
GRAPH_LEVEL_KINDS = frozenset(
    {"ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Secret", "ResourceClaimTemplate", "InferencePool"}
)
DCD = "DynamoComponentDeployment"

# Normalised away on both sides (corpus README), and on ours the stack's ownership record.
DROPPED_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "managedFields",
    "generation",
    "selfLink",
    "ownerReferences",
)
DROPPED_ANNOTATIONS = (
    "nvidia.com/last-applied-hash",
    "nvidia.com/last-applied-generation",
    "deployment.kubernetes.io/revision",
    "nvidia.com/dcd-spec",
    OWNER_ANNOTATION,
)
# PersistentVolumeClaim fields the binding sets.
PVC_BINDING_SPEC = ("volumeName",)
PVC_BINDING_ANNOTATIONS = (
    "pv.kubernetes.io/bind-completed",
    "pv.kubernetes.io/bound-by-controller",
    "volume.beta.kubernetes.io/storage-provisioner",
    "volume.kubernetes.io/storage-provisioner",
)

Key = tuple[str, str]


def docs(path: Path) -> list[Manifest]:
    return [d for d in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader) if d]


def normalised(obj: Manifest) -> Manifest:
    """`obj` without what the corpus README normalises away."""
    out = copy.deepcopy(obj)
    out.pop("status", None)
    meta = out.get("metadata") or {}
    for k in DROPPED_METADATA:
        meta.pop(k, None)
    annotations = meta.get("annotations") or {}
    dropped = DROPPED_ANNOTATIONS + (
        PVC_BINDING_ANNOTATIONS if out.get("kind") == "PersistentVolumeClaim" else ()
    )
    for k in dropped:
        annotations.pop(k, None)
    if "annotations" in meta and not annotations:
        meta.pop("annotations")
    spec = out.get("spec") or {}
    if out.get("kind") == "Service" and spec.get("clusterIP") != "None":
        spec.pop("clusterIP", None)
        spec.pop("clusterIPs", None)
    if out.get("kind") == "PersistentVolumeClaim":
        for k in PVC_BINDING_SPEC:
            spec.pop(k, None)
    return out


def key(obj: Manifest) -> Key:
    return str(obj["kind"]), str(obj["metadata"]["name"])


def keyed(objects: Iterable[Manifest]) -> dict[Key, Manifest]:
    return {key(o): normalised(o) for o in objects}


@dataclass(frozen=True)
class Ours:
    """Our side of one file: objects of the graphs we render, or of the ones we refuse what the
    operator creates all the same (`render.partial`), and our refusals."""

    objects: list[Manifest]
    refusals: list[DynamoValidationError] = field(default_factory=list)


@dataclass(frozen=True)
class Case:
    """One file of operator-rendered: a graph file rendered in one pass."""

    pass_: str
    path: Path

    @property
    def name(self) -> str:
        return f"{self.pass_}/{self.path.name}"

    @property
    def source(self) -> Path:
        version, rest = self.path.name.split("__", 1)
        return GRAPHS / version / rest

    @cached_property
    def expected(self) -> list[Manifest]:
        return docs(self.path)

    @property
    def namespace(self) -> str:
        return str(self.expected[0]["metadata"]["namespace"])

    @property
    def options(self) -> ClusterOptions:
        return ClusterOptions.parse({"namespace": self.namespace, **COMMON_OPTIONS, **PASSES[self.pass_]})

    @cached_property
    def graphs(self) -> list[AnyDGD]:
        return list(load_corpus(self.source).graphs)

    @property
    def refused_because(self) -> str | None:
        return REFUSED.get(self.name)

    def platform_objects(self) -> list[Manifest]:
        """What our platform layer creates in the namespace for these graphs."""
        multinode = any(has_multinode_component(g) for g in self.graphs)
        source = docs(MPI_SOURCE)[0] if multinode else None
        args = PlatformArgs(
            self.namespace,
            Ownership(STACK),
            crd_dir=REPO / "stacks" / "crds",
            epp=any(has_epp(to_hub(g)) for g in self.graphs),
            mpi_ssh_secret=source,
            mpi_ssh_secret_name=self.options.mpi.ssh_secret_name,
        )
        plan = plan_platform("platform", args)
        out = [m for a in plan.accounts for m in a.manifests()]
        if plan.mpi_ssh_secret is not None:
            out.append({"apiVersion": "v1", "kind": "Secret", "metadata": plan.mpi_ssh_secret.metadata,
                        **plan.mpi_ssh_secret.inputs})  # fmt: skip
        return out

    def ours(self, defaults: Callable[[Manifest], Manifest] = lambda o: o) -> Ours:
        """Our objects, each through `defaults` (the API server's defaulting when pure)."""
        objects = [defaults(o) for o in self.platform_objects()]
        refusals = []
        for g in self.graphs:
            try:
                r = render_graph(g, self.options, self.namespace)
                graph = r.all_objects() + [c.dcd for c in r.components.values() if c.dcd is not None]
            except DynamoValidationError as e:
                refusals.append(e)
                graph = list(operator_partial(g, self.options, self.namespace).objects)
            objects.extend(defaults(o) for o in graph)
        return Ours(objects, refusals)


def cases() -> list[Case]:
    return [Case(p, f) for p in PASSES for f in sorted((RENDERED / p).glob("*.yaml"))]


@dataclass(frozen=True)
class Comparison:
    """Per object key: equal, different (with a unified diff), missing on our side, extra on ours."""

    equal: list[Key]
    different: dict[Key, str]
    missing: list[Key]
    extra: list[Key]

    def problems(self) -> list[str]:
        out = [f"missing {k[0]}/{k[1]}" for k in self.missing]
        out += [f"extra {k[0]}/{k[1]}" for k in self.extra]
        out += [f"{k[0]}/{k[1]} differs:\n{d}" for k, d in self.different.items()]
        return out


def diff(expected: Manifest, actual: Manifest) -> str:
    a = yaml.safe_dump(expected, sort_keys=True, width=200).splitlines()
    b = yaml.safe_dump(actual, sort_keys=True, width=200).splitlines()
    return "\n".join(difflib.unified_diff(a, b, "operator", "ours", n=2, lineterm=""))


def compare(case: Case, expected: list[Manifest], ours: Ours, kinds: Callable[[str], bool]) -> Comparison:
    """Objects of the kinds `kinds` accepts, ours against the operator's. In a refused file, ours may
    hold component objects the operator did not get to (it stops at a component in random order)."""
    theirs = {k: v for k, v in keyed(expected).items() if kinds(k[0])}
    mine = {k: v for k, v in keyed(ours.objects).items() if kinds(k[0])}
    equal = [k for k in theirs if k in mine and mine[k] == theirs[k]]
    different = {k: diff(theirs[k], mine[k]) for k in theirs if k in mine and mine[k] != theirs[k]}
    missing = [k for k in theirs if k not in mine]
    extra = [
        k for k in mine if k not in theirs and not (case.refused_because and k[0] not in GRAPH_LEVEL_KINDS)
    ]
    return Comparison(equal, different, missing, extra)


def refusal_problems(case: Case, ours: Ours) -> list[str]:
    """Our refusals against the operator's failure: refused exactly when it failed, for its reason."""
    messages = [str(p) for e in ours.refusals for p in e.problems]
    reason = case.refused_because
    if reason is None:
        return [f"refused: {m}" for m in messages]
    if not any(reason in m for m in messages):
        return [f"not refused for {reason!r} (our problems: {messages})"]
    return []


def summary(defaults: Callable[[Manifest], Manifest]) -> dict[str, dict[str, int]]:
    """Per pass: objects equal / different / missing / extra (DCDs counted apart), files refused."""
    out: dict[str, dict[str, int]] = {}
    for case in cases():
        counts = out.setdefault(case.pass_, dict.fromkeys(
            ("equal", "different", "missing", "extra", "dcd equal", "dcd different", "refused"), 0))  # fmt: skip
        ours = case.ours(defaults)
        counts["refused"] += bool(ours.refusals)
        for label, kinds in (("", lambda k: k != DCD), ("dcd ", lambda k: k == DCD)):
            c = compare(case, case.expected, ours, kinds)
            counts[f"{label}equal"] += len(c.equal)
            counts[f"{label}different"] += len(c.different) + (len(c.missing) + len(c.extra) if label else 0)
            if not label:
                counts["missing"] += len(c.missing)
                counts["extra"] += len(c.extra)
    return out


if __name__ == "__main__":
    from tests.apiserver_defaults import with_defaults

    for pass_, counts in summary(with_defaults).items():
        print(pass_, ", ".join(f"{k} {v}" for k, v in counts.items()))
