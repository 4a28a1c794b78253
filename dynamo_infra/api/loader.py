"""Load Dynamo custom resources from YAML (files may hold other Kubernetes documents too) and dump them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml

from dynamo_infra.api import conversion, kube, v1alpha1, v1beta1
from dynamo_infra.api.admission import AdmissionDenied
from dynamo_infra.api.admission import review as admission_review
from dynamo_infra.api.base import Resource
from dynamo_infra.api.errors import DynamoValidationError, Problem, join_path, prefixed
from dynamo_infra.api.manifest import Manifest, dump_yaml

AnyDGD = v1alpha1.DynamoGraphDeployment | v1beta1.DynamoGraphDeployment
R = TypeVar("R", bound=Resource)

# Every Dynamo kind and version we model, by (apiVersion, kind).
KINDS: dict[tuple[str, str], type[Resource]] = {
    (m.API_VERSION, m.KIND): m
    for m in (
        v1alpha1.DynamoGraphDeployment,
        v1alpha1.DynamoComponentDeployment,
        v1alpha1.DynamoCheckpoint,
        v1alpha1.DynamoGraphDeploymentScalingAdapter,
        v1alpha1.DynamoModel,
        v1alpha1.DynamoGraphDeploymentRequest,
        v1beta1.DynamoGraphDeployment,
        v1beta1.DynamoComponentDeployment,
        v1beta1.DynamoGraphDeploymentScalingAdapter,
        v1beta1.DynamoGraphDeploymentRequest,
    )
}
# Largest YAML input accepted (bytes): real graphs are a few kB; this stops runaway inputs early.
MAX_YAML_BYTES = 8 * 1024 * 1024
_DYNAMO_GROUP = "nvidia.com/"


@dataclass
class Loaded:
    """The documents of a YAML stream: Dynamo resources (typed) and every other document as it was,
    and the warnings admission returned for them."""

    documents: list[Resource] = field(default_factory=list)
    others: list[Manifest] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def graphs(self) -> list[AnyDGD]:
        """The DynamoGraphDeployments, in file order."""
        return [d for d in self.documents if isinstance(d, AnyDGD)]


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML loading that rejects duplicate keys (as the API server's strict decoding does)."""


def _mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = cast(Any, loader).construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool | None):
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"a mapping key must be a scalar (line {mark.line + 1}, column {mark.column + 1})",
                mark,
            )
        if isinstance(key, bool):
            key = "true" if key else "false"
        elif key is None:
            key = "null"
        elif not isinstance(key, str):
            key = str(key)  # as Kubernetes' YAML-to-JSON conversion does
        if key in out:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {mark.line + 1}, column {mark.column + 1})", mark
            )
        out[key] = cast(Any, loader).construct_object(value_node, deep=True)
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
# Timestamps stay strings, as Kubernetes' YAML decoding keeps them.
_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _read(source: str | Path) -> tuple[str, str]:
    is_path = isinstance(source, Path) or ("\n" not in source and source.endswith((".yaml", ".yml")))
    if not is_path:
        return "<yaml>", str(source)
    path = Path(source)
    name = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_YAML_BYTES:
            raise DynamoValidationError(
                [Problem("", f"file is too large ({size} bytes; at most {MAX_YAML_BYTES})")], name
            )
        return name, path.read_text(encoding="utf-8")
    except OSError as e:
        raise DynamoValidationError([Problem("", f"cannot read file: {e.strerror}")], name) from None
    except UnicodeDecodeError as e:
        raise DynamoValidationError(
            [Problem("", f"not UTF-8 text: {e.reason} at byte {e.start}")], name
        ) from None


def parse_documents(text: str, name: str = "<yaml>") -> list[Any]:
    """The non-empty YAML documents of `text`; syntax errors name line and column."""
    if len(text.encode("utf-8", errors="replace")) > MAX_YAML_BYTES:
        raise DynamoValidationError(
            [Problem("", f"input is too large (at most {MAX_YAML_BYTES} bytes)")], name
        )
    try:
        docs = [d for d in yaml.load_all(text, Loader=_StrictLoader) if d is not None]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise DynamoValidationError([Problem("", f"invalid YAML: {where}{problem}")], name) from None
    except RecursionError:
        raise DynamoValidationError([Problem("", "invalid YAML: nested too deeply")], name) from None
    if not docs:
        raise DynamoValidationError([Problem("", "no YAML documents found")], name)
    return docs


def load_documents(
    docs: list[Any], *, lenient: bool = False, name: str | None = None, admission: bool = True
) -> Loaded:
    """Type every Dynamo document of `docs`; keep the others. Problems are collected across documents.

    With `admission` (the default) every Dynamo document also passes the rules of the operator's
    validating webhook that need no cluster (`api.admission`): AdmissionDenied names its causes, and
    its warnings are kept in `Loaded.warnings`. `admission=False` loads what the webhook would deny
    (tooling, and tests that render such graphs as the operator's controllers would).
    """
    out = Loaded()
    problems: list[Problem] = []
    denied: list[Problem] = []
    for i, doc in enumerate(docs):
        prefix = f"documents[{i}]" if len(docs) > 1 else ""
        if not isinstance(doc, dict):
            problems.append(Problem(prefix, f"must be a mapping (got {type(doc).__name__})"))
            continue
        api_version, kind = str(doc.get("apiVersion")), str(doc.get("kind"))
        model = KINDS.get((api_version, kind))
        if model is None:
            if api_version.startswith(_DYNAMO_GROUP) and kind.startswith("Dynamo"):
                known = sorted(v for v, k in KINDS if k == kind)
                hint = f"; known versions: {', '.join(known)}" if known else ""
                problems.append(
                    Problem(
                        join_path(prefix, "apiVersion"), f"unsupported {kind} version {api_version!r}{hint}"
                    )
                )
            else:
                out.others.append(doc)
            continue
        try:
            resource = model.parse(doc, lenient=lenient)
        except DynamoValidationError as e:
            problems.extend(e.with_prefix(prefix).problems)
            continue
        out.documents.append(resource)
        if admission:
            review = admission_review(resource)
            denied.extend(prefixed(prefix, review.problems))
            out.warnings.extend(f"{prefix}: {w}" if prefix else w for w in review.warnings)
    if problems:
        raise DynamoValidationError(problems + denied, name)
    if denied:
        raise AdmissionDenied(denied, name)
    return out


def load_yaml(source: str | Path, *, lenient: bool = False, admission: bool = True) -> Loaded:
    """Parse a path or YAML text. Errors carry the file name and `documents[i]` when multi-document.

    `admission=False` skips the webhook's rules (see `load_documents`).
    """
    name, text = _read(source)
    return load_documents(parse_documents(text, name), lenient=lenient, name=name, admission=admission)


def to_yaml(resources: list[Resource] | Resource) -> str:
    """Resources as `kubectl apply -f` accepts them."""
    items = resources if isinstance(resources, list) else [resources]
    return dump_yaml([r.to_manifest() for r in items])


def to_hub(dgd: AnyDGD) -> v1beta1.DynamoGraphDeployment:
    """The graph in the hub version (v1beta1) the renderer works on."""
    if isinstance(dgd, v1beta1.DynamoGraphDeployment):
        return dgd
    return conversion.convert_to(dgd, v1beta1.DynamoGraphDeployment)


def with_server_defaults(obj: R) -> R:
    """`obj` with its CRD schema's defaults, as the API server stores it."""
    return _with_server_defaults(obj)[0]


def _with_server_defaults(obj: R) -> tuple[R, Manifest | None]:
    """`with_server_defaults(obj)`, and the result's `to_wire()` when it is at hand (no default
    applied: the dump of `obj` made to default it)."""
    schema = kube.crd_schema(obj.kind, obj.api_version.split("/")[-1])
    # `to_wire` dumps a new document, defaulted in place.
    wire = obj.to_wire()
    if schema and kube.apply_defaults(wire, schema):
        return type(obj).parse(wire, kube_schema=False), None
    return obj, wire


def served_hub(dgd: AnyDGD) -> v1beta1.DynamoGraphDeployment:
    """The graph as the operator reads it: defaulted by the API server in the version it was
    written in, converted to the hub version, and defaulted there."""
    served, wire = _with_server_defaults(dgd)
    if isinstance(served, v1beta1.DynamoGraphDeployment):
        return with_server_defaults(served)
    # Converted from the dump defaulting made, when no default changed it (one dump fewer).
    return with_server_defaults(conversion.convert_to(served, v1beta1.DynamoGraphDeployment, wire=wire))
