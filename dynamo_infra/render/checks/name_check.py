"""The names a rendering derives, checked as the API server will check them: each object's
metadata.name by its kind's rule and every label value, so a graph whose derived names cannot exist
fails before anything is written, naming the field the name comes from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dynamo_infra.api import AnyDGD, DynamoValidationError, Problem, v1alpha1
from dynamo_infra.api.admission.paths import Paths
from dynamo_infra.api.kubenames import DNS1123_LABEL, LABEL_VALUE, key_broken, name_rule
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import names

if TYPE_CHECKING:
    from dynamo_infra.render.rendered import RenderedGraph

# Keys under which a manifest holds label maps (object, pod template and selector labels).
_LABEL_MAPS = frozenset({"labels", "matchLabels"})
# Keys whose subtrees hold no label maps (containers and volumes are most of a pod spec).
_NO_LABELS = frozenset(
    {"containers", "initContainers", "volumes", "env", "args", "command", "data", "annotations", "resources"}
)
# Labels whose values come from the graph's name (and namespace), not a component's.
_GRAPH_LABELS = frozenset({names.LABEL_GRAPH, names.LABEL_NAMESPACE})


class DerivedNameError(DynamoValidationError):
    """A name or label value the rendering derives that the API server would reject."""


def _label_maps(node: Any) -> list[dict[str, Any]]:
    out = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if isinstance(value, dict):
                    if key in _LABEL_MAPS:
                        out.append(value)
                    elif key not in _NO_LABELS:
                        stack.append(value)
                elif isinstance(value, list) and key not in _NO_LABELS:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, dict | list))
    return out


@dataclass(frozen=True)
class _Blame:
    """Where a derived value comes from: the component whose base name (`{graph}-{component}`)
    begins it, else `default`; labels that carry the graph's name always blame `graph_at`."""

    graph_at: str
    bases: Mapping[str, str]

    def of(self, value: str, default: str) -> str:
        found = [base for base in self.bases if value.startswith(base)]
        return self.bases[max(found, key=len)] if found else default


def object_problems(obj: Manifest, at: str, blame: _Blame, seen: set[tuple[str, str]]) -> list[Problem]:
    """Problems of one rendered object, at the field its name or label value derives from (`at` for
    an object of one component); a label value already in `seen` is not repeated."""
    kind = str(obj.get("kind", ""))
    name = str((obj.get("metadata") or {}).get("name", ""))
    out = []
    if why := name_rule(kind).broken(name):
        out.append(Problem(blame.of(name, at), f"{kind} name {name!r} {_would(why)}"))
    for labels in _label_maps(obj):
        for key, value in labels.items():
            if (key, str(value)) in seen:
                continue
            seen.add((key, str(value)))
            if why := key_broken(str(key)):
                out.append(Problem(at, f"{kind} {name!r}: label key {key!r} {_would(why)}"))
            if isinstance(value, str) and (why := LABEL_VALUE.broken(value)):
                where = blame.graph_at if key in _GRAPH_LABELS else blame.of(value, at)
                out.append(Problem(where, f"{kind} {name!r}: label {key} value {value!r} {_would(why)}"))
    return out


def _would(why: str) -> str:
    """`is 64 characters; …` -> `would be 64 characters; …` (the object does not exist yet)."""
    if why.startswith("is not "):
        return "would not be " + why.removeprefix("is not ")
    return "would be " + why.removeprefix("is ") if why.startswith("is ") else why


def rendered_name_problems(rendered: RenderedGraph, dgd: AnyDGD) -> list[Problem]:
    """Every rendered name or label value (and the namespace) the API server would reject, at the
    field it derives from: a component's name for its objects, `spec.pvcs[i].name` for a PVC, else
    `metadata.name`."""
    paths = Paths(isinstance(dgd, v1alpha1.DynamoGraphDeployment))
    graph_at = "metadata.name"
    blame = _Blame(
        graph_at,
        {
            names.component_base_name(rendered.name, c): paths.component(c)("name")
            for c in rendered.components
        },
    )
    out: list[Problem] = []
    if why := DNS1123_LABEL.broken(rendered.namespace):
        out.append(Problem("metadata.namespace", f"namespace {rendered.namespace!r} {why}"))
    seen: set[tuple[str, str]] = set()
    for obj in (*rendered.shared, *rendered.workloads, *rendered.checkpoints):
        out += object_problems(obj, graph_at, blame, seen)
    for component in rendered.components.values():
        at = paths.component(component.name)("name")
        for obj in (*component.objects, *(o for o in (component.dcd, component.adapter) if o)):
            out += object_problems(obj, at, blame, seen)
        if component.scale_target:
            target = {**component.scale_target, "metadata": {"name": component.scale_target.get("name")}}
            out += object_problems(target, at, blame, seen)
    claims = [p.name for p in getattr(dgd.spec, "pvcs", None) or []]
    for pvc in rendered.pvcs:
        claim = str(pvc["metadata"]["name"])
        at = paths.spec("pvcs", claims.index(claim), "name") if claim in claims else graph_at
        out += object_problems(pvc, at, blame, seen)
    return out
