"""Kubernetes sub-objects checked against the CRD's own OpenAPI schema (which embeds the real
Kubernetes schemas: PodSpec, Container, Probe, EnvVar, Volume, ResourceRequirements, quantities).

The models keep those sub-objects as plain dicts (`KubeObject`); this module finds them in a
document, cuts the matching subtree out of the CRD schema shipped in `schemas/` and validates with
`jsonschema_rs` (a compiled validator per subtree, built on first use). It runs once, when a
document is parsed; the renderer never calls it.
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Iterator
from importlib import resources
from typing import Any

from pydantic import BaseModel

from dynamo_infra.api.base import QUANTITY_PATTERN, UNKNOWN_FIELD, kind_of, quantity_message, warn_unknown
from dynamo_infra.api.errors import Problem, join_path

# A path pattern into a document: wire keys, "*" (any map value) and "[]" (any list item).
Pattern = tuple[str, ...]
ANY_KEY = "*"
ANY_ITEM = "[]"
SCHEMA_PACKAGE = "dynamo_infra.api.schemas"

_TYPE_WORDS = {
    "integer": "an integer",
    "string": "a string",
    "object": "a mapping",
    "array": "a list",
    "boolean": "a boolean",
    "number": "a number",
    "null": "null",
}


def schema_file(kind: str, version: str) -> str:
    return f"{kind}.{version}.json"


@functools.cache
def crd_schema(kind: str, version: str) -> dict[str, Any] | None:
    """The openAPIV3Schema of a Dynamo CRD version as shipped in the package (None if absent)."""
    path = resources.files(SCHEMA_PACKAGE).joinpath(schema_file(kind, version))
    if not path.is_file():
        return None
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _strip(annotation: Any) -> Any:
    """`X | None` and `Annotated[X, ...]` -> X."""
    while True:
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Annotated:
            annotation = args[0]
        elif origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
            rest = [a for a in args if a is not type(None)]
            if len(rest) != 1:
                return annotation
            annotation = rest[0]
        else:
            return annotation


def _is_kube(annotation: Any) -> bool:
    return typing.get_origin(annotation) is dict and typing.get_args(annotation) == (str, Any)


@functools.cache
def kube_patterns(model: type[BaseModel]) -> tuple[Pattern, ...]:
    """Where a model (recursively) holds Kubernetes sub-objects, as wire-key patterns."""
    out: list[Pattern] = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        out.extend((key, *p) for p in _annotation_patterns(field.annotation))
    return tuple(out)


def _annotation_patterns(annotation: Any) -> list[Pattern]:
    ann = _strip(annotation)
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if _is_kube(ann):
        return [()]
    if origin is list and args:
        item = _strip(args[0])
        if _is_kube(item):
            return [()]
        return [(ANY_ITEM, *p) for p in _annotation_patterns(item)]
    if origin is dict and len(args) == 2:
        return [(ANY_KEY, *p) for p in _annotation_patterns(args[1])]
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return list(kube_patterns(ann))
    return []


def _subschema(schema: dict[str, Any], pattern: Pattern) -> dict[str, Any] | None:
    node: Any = schema
    for part in pattern:
        if not isinstance(node, dict):
            return None
        if part == ANY_KEY:
            node = node.get("additionalProperties")
        elif part == ANY_ITEM:
            node = node.get("items")
        else:
            node = (node.get("properties") or {}).get(part)
    return node if isinstance(node, dict) else None


def _matches(
    data: Any, pattern: Pattern, at: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if not pattern:
        yield at, data
        return
    head, rest = pattern[0], pattern[1:]
    if head == ANY_KEY:
        if isinstance(data, dict):
            for k, v in data.items():
                yield from _matches(v, rest, (*at, str(k)))
    elif head == ANY_ITEM:
        if isinstance(data, list):
            for i, v in enumerate(data):
                yield from _matches(v, rest, (*at, i))
    elif isinstance(data, dict) and data.get(head) is not None:
        yield from _matches(data[head], rest, (*at, head))


@functools.cache
def _validator(kind: str, version: str, pattern: Pattern) -> Any:
    import jsonschema_rs  # imported on first validation only

    schema = crd_schema(kind, version)
    sub = _subschema(schema, pattern) if schema else None
    if sub is None:
        return None
    return jsonschema_rs.Draft7Validator(sub)


def validate(model: type[BaseModel], data: Any, *, lenient: bool = False) -> list[Problem]:
    """Problems of every Kubernetes sub-object in `data` (a wire document of `model`'s kind)."""
    kind, api_version = getattr(model, "KIND", None), getattr(model, "API_VERSION", None)
    if not kind or not api_version or not isinstance(data, dict):
        return []
    version = api_version.split("/")[-1]
    problems: list[Problem] = []
    for pattern in kube_patterns(model):
        validator = _validator(kind, version, pattern)
        if validator is None:
            continue
        for at, value in _matches(data, pattern):
            problems.extend(_problems(validator, at, value))
    if lenient:
        unknown = [p for p in problems if p.message == UNKNOWN_FIELD]
        if unknown:
            warn_unknown(unknown)
        problems = [p for p in problems if p.message != UNKNOWN_FIELD]
    return problems


def _problems(validator: Any, at: tuple[str | int, ...], value: Any) -> Iterator[Problem]:
    for err in validator.iter_errors(value):
        where = (*at, *err.instance_path)
        kind = type(err.kind).__name__
        got = err.instance
        if kind == "AdditionalProperties":
            for key in err.kind.unexpected:
                yield Problem(join_path(*where, key), UNKNOWN_FIELD)
            continue
        if kind == "Required":
            yield Problem(join_path(*where, err.kind.property), "required field is missing")
            continue
        yield Problem(join_path(*where), _message(kind, err, got))


def _message(kind: str, err: Any, got: Any) -> str:
    k = err.kind
    if kind == "Type":
        want = " or ".join(_TYPE_WORDS.get(str(t), str(t)) for t in k.types)
        return f"must be {want} (got {kind_of(got)})"
    if kind == "AnyOf":
        types = sorted(
            {w for sub in k.context for e in sub if type(e.kind).__name__ == "Type" for w in e.kind.types}
        )
        if types:
            return f"must be {' or '.join(_TYPE_WORDS.get(t, t) for t in types)} (got {kind_of(got)})"
    if kind == "Pattern":
        if k.pattern == QUANTITY_PATTERN:
            return quantity_message(got)
        return f"must match {k.pattern} (got {got!r})"
    if kind == "Enum":
        return f"must be one of {list(k.options)} (got {got!r})"
    if kind == "Minimum":
        return f"must be ≥ {k.limit} (got {got!r})"
    if kind == "Maximum":
        return f"must be ≤ {k.limit} (got {got!r})"
    if kind == "MinLength":
        return f"must be at least {k.limit} characters long (got {got!r})"
    if kind == "MaxLength":
        return f"must be at most {k.limit} characters long"
    if kind == "MaxItems":
        return f"must have at most {k.limit} items (got {len(got)})"
    if kind == "MinItems":
        return f"must have at least {k.limit} items (got {len(got)})"
    return str(err.message)
