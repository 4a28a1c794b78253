"""`pulumi preview --json` -> what changes in the cluster: graph -> component -> Kubernetes object ->
fields, with pod restarts judged per object. Pure (no Pulumi, no cluster).

Our dynamic resources carry their rendered manifests as inputs (`objects`: manifests keyed
`apiVersion/kind/namespace/name`; `manifest`, `dgd`, `adapters`, `checkpoint`, `job`); the
platform's pulumi-kubernetes resources are manifests themselves. The JSON has no `detailedDiff` for
them, so field changes are computed here from old and new inputs. Values Pulumi marks secret and
the data of Secret objects never leave this module unmasked. A resource deleted with `retainOnDelete`
leaves its objects in the cluster: they are `keep`, or, when another resource of the same preview
writes them (the platform's CRDs moving into one resource), that resource's change from them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

from dynamo_infra.api.manifest import unpack
from dynamo_infra.errors import DynamoInfraError

# Pulumi's sentinel for a value known only after apply (an unknown in the JSON).
UNKNOWN_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
# Pulumi's signature key of a secret value ({SIG: SECRET_SIG, "value": ...}).
SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
# How a secret value appears in `pulumi preview --json` (without --show-secrets).
SECRET_TEXT = "[secret]"
# Prefix of the CLI's display of an unknown (`output<string>`).
UNKNOWN_TEXT_PREFIX = "output<"


class Masked:
    """A value never shown: a Pulumi secret, or the data of a Secret object."""

    def __repr__(self) -> str:
        return "Masked()"


class Unknown:
    """A value known only after apply."""

    def __repr__(self) -> str:
        return "Unknown()"


SECRET = Masked()
UNKNOWN = Unknown()
# Inputs holding manifests: one manifest, or a mapping of manifests.
SINGLE_OBJECT_INPUTS = ("manifest", "dgd", "checkpoint", "job")
MAPPED_OBJECT_INPUTS = ("objects", "adapters", "manifests")
# Inputs that are plumbing (connection, identity, copies derived from the manifests): never shown.
PLUMBING_INPUTS = frozenset(
    [
        "kubeconfig",
        "kubeconfigFrom",
        "context",
        "namespace",
        "graph",
        "component",
        "observe",
        "components",
        "annotations",
        "features",
        "admission",
        "name",
        "owner",
        "graphAwaitsDeletion",
        "definitions",
        "fieldManager",
    ]
)
# Step operations that change nothing in the cluster, or repeat another step of the same resource
# (a replacement is shown once, by its `replace` step).
SKIPPED_OPS = frozenset(
    {"same", "read", "refresh", "create-replacement", "delete-replaced", "discard", "remove-pending-replace"}
)
# The platform layer's ComponentResource type: its children form the group `platform`.
PLATFORM_TYPE = "dynamo-infra:index:Platform"
# Where each workload kind keeps its pod template(s); a change below it replaces the pods.
POD_TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec.template",),
    "StatefulSet": ("spec.template",),
    "DaemonSet": ("spec.template",),
    "Job": ("spec.template",),
    "LeaderWorkerSet": ("spec.leaderWorkerTemplate",),
    "PodClique": ("spec.podSpec",),
    "PodCliqueSet": ("spec.template",),
    "PodCliqueScalingGroup": (),
}
# Fields listed for a created or deleted object (its whole manifest would drown the rest).
HIGHLIGHT_FIELDS = ("replicas", ".image", "requests.storage")
# Path segments whose change scales a workload without replacing its pods.
SCALE_FIELDS = frozenset({"replicas", "minAvailable"})


class PreviewJsonError(DynamoInfraError):
    """The input is not `pulumi preview --json` output."""


@dataclasses.dataclass(frozen=True)
class FieldChange:
    """One changed leaf (or list) at `path`; values are JSON-like, SECRET or UNKNOWN; None = absent."""

    path: str
    old: Any
    new: Any
    absent_old: bool = False
    absent_new: bool = False


@dataclasses.dataclass
class ObjectChange:
    key: str
    kind: str
    # create, update, delete, replace (a new name: the old object is deleted, e.g. a new worker hash),
    # keep (its resource left the stack with `retainOnDelete`: the object stays as it is)
    op: str
    fields: list[FieldChange] = dataclasses.field(default_factory=list)
    old_key: str = ""
    # Why pods restart ("" when they do not), or how they change without a restart (scaled, new).
    restart: str = ""
    scale: str = ""
    secret: bool = False
    unknown: bool = False


@dataclasses.dataclass
class ComponentChange:
    name: str
    op: str
    objects: list[ObjectChange] = dataclasses.field(default_factory=list)
    # Other inputs (not manifests) that changed: await policy, scale, replica ownership.
    settings: list[FieldChange] = dataclasses.field(default_factory=list)
    # Manifests known only after apply (rendered during `up`).
    unknown_objects: bool = False


@dataclasses.dataclass
class GraphChange:
    name: str
    components: list[ComponentChange] = dataclasses.field(default_factory=list)

    def objects(self) -> Iterator[ObjectChange]:
        for c in self.components:
            yield from c.objects

    @property
    def rollouts(self) -> list[str]:
        return [c.name for c in self.components if any(o.restart for o in c.objects)]


@dataclasses.dataclass
class PreviewSummary:
    stack: str
    graphs: list[GraphChange]
    # Pulumi's own counts of resource operations (`changeSummary`).
    resource_counts: dict[str, int]

    def count(self, op: str) -> int:
        return sum(1 for g in self.graphs for o in g.objects() if o.op == op)


def load_preview(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise PreviewJsonError(f"not JSON ({e}); give the output of `pulumi preview --json`") from e
    if not isinstance(data, dict) or not isinstance(data.get("steps", []), list):
        raise PreviewJsonError("no `steps`: give the output of `pulumi preview --json`")
    return data


def clean(value: Any) -> Any:
    """Pulumi's JSON value with secrets and unknowns as SECRET and UNKNOWN."""
    if isinstance(value, dict):
        if value.get(SIG_KEY) == SECRET_SIG:
            return SECRET
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v) for v in value]
    if value == SECRET_TEXT:
        return SECRET
    if value == UNKNOWN_SENTINEL or (isinstance(value, str) and value.startswith(UNKNOWN_TEXT_PREFIX)):
        return UNKNOWN
    return value


def object_key(obj: dict[str, Any]) -> str:
    meta: dict[str, Any] = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    parts = [obj.get("apiVersion"), obj.get("kind"), meta.get("namespace"), meta.get("name")]
    return "/".join(str(p) for p in parts if isinstance(p, str) and p)


def manifests(resource_type: str, inputs: dict[str, Any]) -> dict[str, Any] | Unknown:
    """The Kubernetes objects a resource writes, by key (UNKNOWN when known only after apply)."""
    if is_kubernetes(resource_type):
        manifest = {k: v for k, v in inputs.items() if not k.startswith("__")}
        return {object_key(manifest): manifest}
    found: dict[str, Any] = {}
    for name in SINGLE_OBJECT_INPUTS:
        obj: Any = inputs.get(name)
        if isinstance(obj, Unknown):
            return UNKNOWN
        if isinstance(obj, dict) and obj.get("kind"):
            found[object_key(obj)] = obj
    for name in MAPPED_OBJECT_INPUTS:
        objs: Any = unpack(inputs.get(name))
        if isinstance(objs, Unknown):
            return UNKNOWN
        if isinstance(objs, dict):
            for key, obj in objs.items():
                found[key if name == "objects" else object_key(obj) if isinstance(obj, dict) else key] = obj
    return found


def is_kubernetes(resource_type: str) -> bool:
    """A pulumi-kubernetes resource: its inputs are the manifest itself."""
    return resource_type.startswith("kubernetes:")


def settings(resource_type: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Inputs that are neither manifests nor plumbing."""
    if is_kubernetes(resource_type):
        return {}
    skip = PLUMBING_INPUTS | set(SINGLE_OBJECT_INPUTS) | set(MAPPED_OBJECT_INPUTS)
    return {k: v for k, v in inputs.items() if not k.startswith("__") and k not in skip}


def list_labels(items: list[Any]) -> list[str] | None:
    """Labels matching list items by `name` (containers, env, ports, volumes), None when not all named."""
    names = [i.get("name") for i in items if isinstance(i, dict)]
    if (
        len(names) != len(items)
        or not all(isinstance(n, str) for n in names)
        or len(set(names)) != len(names)
    ):
        return None
    return [str(n) for n in names]


def diff_values(old: Any, new: Any, path: str = "", named: bool = False) -> list[FieldChange]:
    """Leaf changes between two JSON values; lists of named items are matched by name (`[name]`)."""
    if old is SECRET or new is SECRET:
        # Pulumi shows both sides as "[secret]": whether the value changed is not in the JSON.
        return [FieldChange(path, SECRET, SECRET)]
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[FieldChange] = []
        for k in sorted(set(old) | set(new)):
            sub = f"{path}[{k}]" if named else f"{path}.{k}" if path else str(k)
            if k not in old:
                out.append(FieldChange(sub, None, new[k], absent_old=True))
            elif k not in new:
                out.append(FieldChange(sub, old[k], None, absent_new=True))
            else:
                out += diff_values(old[k], new[k], sub)
        return out
    if isinstance(old, list) and isinstance(new, list):
        lo, ln = list_labels(old), list_labels(new)
        if lo is not None and ln is not None:
            return diff_values(dict(zip(lo, old, strict=True)), dict(zip(ln, new, strict=True)), path, True)
        if len(old) == len(new):
            out = []
            for i, (a, b) in enumerate(zip(old, new, strict=True)):
                out += diff_values(a, b, f"{path}[{i}]")
            return out
    if old == new and type(old) is type(new):
        return []
    return [FieldChange(path, old, new)]


def highlights(obj: Any, path: str = "", created: bool = True) -> list[FieldChange]:
    """The HIGHLIGHT_FIELDS of a created (or deleted) object, as changes from (or to) nothing."""
    if isinstance(obj, dict):
        return [
            f for k, v in sorted(obj.items()) for f in highlights(v, f"{path}.{k}" if path else k, created)
        ]
    if isinstance(obj, list):
        labels = list_labels(obj) or [str(i) for i in range(len(obj))]
        return [f for k, v in zip(labels, obj, strict=True) for f in highlights(v, f"{path}[{k}]", created)]
    if not path.endswith(HIGHLIGHT_FIELDS):
        return []
    return [
        FieldChange(path, None, obj, absent_old=True)
        if created
        else FieldChange(path, obj, None, absent_new=True)
    ]


def mask_secret_object(obj: Any) -> Any:
    """A Secret manifest with its data replaced by SECRET (whatever Pulumi marked)."""
    if not isinstance(obj, dict) or obj.get("kind") != "Secret":
        return obj
    return {k: (SECRET if k in ("data", "stringData") and v is not None else v) for k, v in obj.items()}


def judge_restart(kind: str, op: str, fields: list[FieldChange]) -> tuple[str, str]:
    """(why pods restart, how they scale) for one object change."""
    if kind not in POD_TEMPLATE_PATHS:
        return "", ""
    if op == "create":
        return "", "new pods"
    if op == "delete":
        return "", "its pods are deleted"
    if op == "replace":
        return "pods replaced by the new workload", ""
    templates = POD_TEMPLATE_PATHS[kind]
    restart, scale = "", ""
    for f in fields:
        last = f.path.rsplit(".", 1)[-1]
        if last in SCALE_FIELDS:
            scale = f"replicas {plain(f.old)} -> {plain(f.new)}" if last == "replicas" else "scaled"
        elif any(f.path == t or f.path.startswith(t + ".") or f.path.startswith(t + "[") for t in templates):
            restart = "pod template changed"
    return restart, scale


def plain(value: Any) -> str:
    if value is SECRET:
        return "(secret)"
    if value is UNKNOWN:
        return "(known after apply)"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)


def base_name(key: str) -> str:
    """A key without its last name segment (`…/mocker-agg-worker-32f5f63c` -> `…/mocker-agg-worker`)."""
    return key.rsplit("-", 1)[0]


def diff_objects(old: dict[str, Any], new: dict[str, Any]) -> list[ObjectChange]:
    """Object changes of one resource: created, deleted, updated, and renamed ones paired as replaced."""
    gone = [k for k in old if k not in new]
    added = [k for k in new if k not in old]
    pairs: dict[str, str] = {}
    for k in added:
        match = [g for g in gone if g not in pairs.values() and base_name(g) == base_name(k)]
        if match:
            pairs[k] = match[0]
    out: list[ObjectChange] = []
    for key in sorted(set(old) | set(new)):
        if key in pairs.values():
            continue
        before = mask_secret_object(old.get(pairs.get(key, key)))
        after = mask_secret_object(new.get(key))
        if key in pairs:
            op, fields = "replace", diff_values(before, after)
        elif before is None:
            op, fields = "create", highlights(after)
        elif after is None:
            op, fields = "delete", highlights(before, created=False)
        else:
            op, fields = "update", diff_values(before, after)
            if not fields:
                continue
        kind = str((after or before or {}).get("kind", "")) if isinstance(after or before, dict) else ""
        restart, scale = judge_restart(kind, op, fields)
        secret = kind == "Secret" or any(f.old is SECRET or f.new is SECRET for f in fields)
        unknown = any(f.old is UNKNOWN or f.new is UNKNOWN for f in fields)
        out.append(ObjectChange(key, kind, op, fields, pairs.get(key, ""), restart, scale, secret, unknown))
    return out


def graph_of(resource_type: str, name: str, inputs: dict[str, Any]) -> str:
    graph = inputs.get("graph")
    if isinstance(graph, str) and graph:
        return graph
    if isinstance(graph, dict):
        return str((graph.get("metadata") or {}).get("name") or name)
    if PLATFORM_TYPE in resource_type:
        return "platform"
    return "stack"


def component_of(graph: str, name: str, inputs: dict[str, Any]) -> str:
    component = inputs.get("component")
    if isinstance(component, str):
        return component or "shared"
    return name.removeprefix(f"{graph}-")


def state_of(step: dict[str, Any], which: str) -> dict[str, Any]:
    state = step.get(which)
    return state if isinstance(state, dict) else {}


def retained(step: dict[str, Any]) -> bool:
    """A delete that leaves the resource's objects in the cluster (`retainOnDelete`)."""
    return step.get("op") == "delete" and bool(state_of(step, "oldState").get("retainOnDelete"))


def summarize(data: dict[str, Any], stack: str = "") -> PreviewSummary:
    """The cluster changes of a parsed `pulumi preview --json`."""
    graphs: dict[str, GraphChange] = {}
    steps = [s for s in data.get("steps") or [] if s.get("op", "") not in SKIPPED_OPS]
    # Objects of retained deletes, and the keys other resources of this preview create.
    released: dict[str, Any] = {}
    created: set[str] = set()
    for step in steps:
        state = state_of(step, "oldState" if retained(step) else "newState")
        rtype = str(state.get("type") or "")
        found = manifests(rtype, clean(state.get("inputs") or {})) if rtype else {}
        if isinstance(found, dict):
            if retained(step):
                released.update(found)
            elif step.get("op") == "create":
                created.update(found)
    for step in steps:
        op = step.get("op", "")
        old, new = state_of(step, "oldState"), state_of(step, "newState")
        if not (old or new).get("custom", True):
            continue  # a ComponentResource: its children carry the changes
        urn = str(step.get("urn", ""))
        rtype = str((new or old).get("type") or urn.split("::")[-2].rsplit("$", 1)[-1])
        if rtype.startswith("pulumi:"):
            continue  # the stack and providers
        full_type = urn.split("::")[-2] if "::" in urn else rtype
        name = urn.rsplit("::", 1)[-1]
        old_in = clean(old.get("inputs") or {}) if op != "create" else {}
        new_in = clean(new.get("inputs") or {}) if op != "delete" else {}
        inputs = new_in or old_in
        graph = graph_of(full_type, name, inputs)
        before = manifests(rtype, old_in) if old_in else {}
        after = manifests(rtype, new_in) if new_in else {}
        if op == "create" and isinstance(after, dict):
            before = {k: released[k] for k in after if k in released}
        component = ComponentChange(component_of(graph, name, inputs), op)
        if isinstance(after, Unknown) or isinstance(before, Unknown):
            component.unknown_objects = True
        elif retained(step):
            kept = sorted(k for k in before if k not in created)
            component.objects = [ObjectChange(k, str(before[k].get("kind", "")), "keep") for k in kept]
        else:
            component.objects = diff_objects(before, after)
        component.settings = (
            diff_values(settings(rtype, old_in), settings(rtype, new_in)) if old_in and new_in else []
        )
        if retained(step):
            component.op = "released"
        elif op == "create":
            component.op = "added"
        elif op == "delete":
            component.op = "removed"
        else:
            component.op = "updated"
        if component.objects or component.settings or component.unknown_objects:
            graphs.setdefault(graph, GraphChange(graph)).components.append(component)
    counts = {k: int(v) for k, v in (data.get("changeSummary") or {}).items() if isinstance(v, int)}
    return PreviewSummary(stack, list(graphs.values()), counts)
