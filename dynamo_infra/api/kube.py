"""Kubernetes sub-objects checked against the CRD's own OpenAPI schema (which embeds the real
Kubernetes schemas: PodSpec, Container, Probe, EnvVar, Volume, ResourceRequirements, quantities).

The models keep those sub-objects as plain dicts (`Manifest`); this module finds them in a
document, cuts the matching subtree out of the CRD schema shipped in `schemas/` and validates with
`jsonschema_rs` (a compiled validator per subtree, built on first use). It runs once, when a
document is parsed; the renderer never calls it. The same schemas give the defaults the API server
adds to a stored object (`with_schema_defaults`).
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

from pydantic import BaseModel

from dynamo_infra.api.errors import (
    REQUIRED,
    UNKNOWN_FIELD,
    Problem,
    constraint_message,
    join_path,
    split_unknown,
    type_message,
    warn_unknown,
)
from dynamo_infra.api.manifest import Manifest, copy_json
from dynamo_infra.api.typeinfo import unwrap

# A path pattern into a document: wire keys, "*" (any map value) and "[]" (any list item).
Pattern = tuple[str, ...]
ANY_KEY = "*"
ANY_ITEM = "[]"
SCHEMA_PACKAGE = "dynamo_infra.api.schemas"

# jsonschema_rs error kinds of a failed constraint (the kind's `value` is its limit), by check.
_CHECKS = {
    "Minimum": "ge",
    "Maximum": "le",
    "Enum": "enum",
    "Pattern": "pattern",
    "MinLength": "min_length",
    "MaxLength": "max_length",
    "MinItems": "min_items",
    "MaxItems": "max_items",
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


def _nullable(schema: dict[str, Any]) -> bool:
    types = schema.get("type")
    return isinstance(types, list) and "null" in types


@dataclass(frozen=True)
class _Defaulting:
    """What defaulting reads of one schema node: its properties with a default (in schema order),
    those that may not be null, those whose null is dropped (no default), and the schemas of its
    members (each property's, None where it is no schema; map values'; list items')."""

    defaults: tuple[tuple[str, Any], ...]
    not_nullable: frozenset[str]
    drop_null: frozenset[str]
    properties: dict[str, dict[str, Any] | None]
    extra: dict[str, Any] | None
    items: dict[str, Any] | None


# Each schema node's _Defaulting, by id (the node is kept beside it, so an id is never reused).
_defaulting: dict[int, tuple[dict[str, Any], _Defaulting]] = {}


def _defaulting_of(schema: dict[str, Any]) -> _Defaulting:
    entry = _defaulting.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    properties = schema.get("properties") or {}
    extra, items = schema.get("additionalProperties"), schema.get("items")
    found = _Defaulting(
        tuple((k, p["default"]) for k, p in properties.items() if "default" in p),
        frozenset(k for k, p in properties.items() if not _nullable(p)),
        frozenset(k for k, p in properties.items() if not _nullable(p) and "default" not in p),
        {k: p if isinstance(p, dict) else None for k, p in properties.items()},
        extra if isinstance(extra, dict) else None,
        items if isinstance(items, dict) else None,
    )
    _defaulting[id(schema)] = (schema, found)
    return found


def apply_defaults(data: Any, schema: dict[str, Any]) -> bool:
    """Structural defaulting, in place: each absent (or non-nullable null) property with a schema
    `default` gets a copy of it, at every depth (defaults of defaults included); other nulls of
    non-nullable properties are dropped. Whether it changed `data`."""
    changed = False
    if isinstance(data, dict):
        d = _defaulting_of(schema)
        for key, default in d.defaults:
            if key not in data:
                data[key] = copy_json(default)
                changed = True
            elif data[key] is None and key in d.not_nullable:
                data[key] = copy_json(default)
                changed = changed or default is not None
        dropped = [k for k, v in data.items() if v is None and k in d.drop_null]
        for key in dropped:
            del data[key]
        changed = changed or bool(dropped)
        for key, value in data.items():
            if isinstance(value, dict | list):
                sub = d.properties.get(key, d.extra)
                if sub is not None:
                    changed = apply_defaults(value, sub) or changed
    elif isinstance(data, list):
        items = _defaulting_of(schema).items
        if items is not None:
            for value in data:
                changed = apply_defaults(value, items) or changed
    return changed


def prune_nulls(data: Any, schema: dict[str, Any]) -> None:
    """In place: drop every null of a property (or map value) the schema does not mark `nullable`,
    as the API server does before validating; list items are kept (null items stay errors)."""
    if isinstance(data, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key in list(data):
            sub = properties.get(key, extra)
            if not isinstance(sub, dict):
                continue
            if data[key] is None and not _nullable(sub):
                del data[key]
            else:
                prune_nulls(data[key], sub)
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        for value in data:
            prune_nulls(value, schema["items"])


def without_null_fields(data: Any, kind: str, version: str) -> Any:
    """A copy of a wire document with its non-nullable nulls pruned (`data` itself when it has none)."""
    schema = crd_schema(kind, version)
    if not schema or not isinstance(data, dict) or not _has_null(data):
        return data
    out = copy_json(data)
    prune_nulls(out, schema)
    return out


def _has_null(data: Any) -> bool:
    """Whether some mapping in `data` holds a null (null list items do not count)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for v in item.values():
                if v is None:
                    return True
                if isinstance(v, dict | list):
                    stack.append(v)
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, dict | list))
    return False


def with_schema_defaults(data: Manifest, kind: str, version: str) -> Manifest:
    """A copy of a wire document with its CRD schema's defaults, as the API server stores it."""
    out: Manifest = copy_json(data)
    schema = crd_schema(kind, version)
    if schema:
        apply_defaults(out, schema)
    return out


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
    ann = unwrap(annotation)
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if _is_kube(ann):
        return [()]
    if origin is list and args:
        item = unwrap(args[0])
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
        # A subtree's validator is compiled only for a document that has something at its path.
        matches = list(_matches(data, pattern))
        validator = _validator(kind, version, pattern) if matches else None
        if validator is None:
            continue
        for at, value in matches:
            problems.extend(_problems(validator, at, value))
    if lenient:
        problems, unknown = split_unknown(problems)
        warn_unknown(unknown)
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
            yield Problem(join_path(*where, err.kind.property), REQUIRED)
            continue
        yield Problem(join_path(*where), _message(kind, err, got))


def _message(kind: str, err: Any, got: Any) -> str:
    k = err.kind
    if kind == "Type":
        return type_message([str(t) for t in k.types], got)
    if kind == "AnyOf":
        types = sorted(
            {w for sub in k.context for e in sub if type(e.kind).__name__ == "Type" for w in e.kind.types}
        )
        if types:
            return type_message(types, got)
    if kind in _CHECKS:
        return constraint_message(_CHECKS[kind], k.value, got)
    return str(err.message)
