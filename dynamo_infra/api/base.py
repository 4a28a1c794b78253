"""Shared base of every Dynamo model: camelCase on the wire, unknown fields rejected, errors with paths."""

from __future__ import annotations

from typing import Any, Self

import pydantic
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from dynamo_infra.api.errors import DynamoValidationError, Problem, path_of

# Kubernetes sub-objects (pod specs, containers, probes, env, volumes, resources) are kept as the
# plain dicts the user wrote; they are checked against the CRD's own OpenAPI schema, not re-typed.
KubeObject = dict[str, Any]


class DynamoModel(BaseModel):
    """Base of the Dynamo API models. Unknown fields are errors unless `lenient` is asked for."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=True,
        use_enum_values=True,
    )

    @classmethod
    def parse(cls, data: Any, *, lenient: bool = False) -> Self:
        """Validate wire-format data; raise DynamoValidationError with one problem per bad field."""
        try:
            return cls.model_validate(data, context={"lenient": lenient})
        except pydantic.ValidationError as e:
            problems = [p for p in problems_of(e) if not (lenient and p.message == UNKNOWN_FIELD)]
            if not problems:
                # Only unknown fields, tolerated: validate again with them removed.
                return cls.model_validate(strip_unknown(cls, data), context={"lenient": lenient})
            raise DynamoValidationError(problems) from None

    def to_wire(self) -> dict[str, Any]:
        """The object as `kubectl apply` accepts it: camelCase, unset fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


UNKNOWN_FIELD = "unknown field"

_TYPE_NAMES: dict[str, str] = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "string_type": "a string",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "float_type": "a number",
    "float_parsing": "a number",
    "dict_type": "a mapping",
    "list_type": "a list",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}.get(
        type(value), type(value).__name__
    )


def _loc(loc: tuple[Any, ...]) -> str:
    # Drop the function/type tags pydantic inserts for unions and validators.
    kept = [p for p in loc if isinstance(p, int) or not (str(p).startswith("function-") or p in _TAGS)]
    return path_of(kept)


_TAGS = {"str", "int", "float", "bool", "list", "dict", "none", "null", "json-or-python[json=function-after[constrained-str]]"}


def problems_of(e: pydantic.ValidationError) -> list[Problem]:
    """Translate pydantic errors into plain `(path, message)` problems."""
    out: list[Problem] = []
    for err in e.errors(include_url=False):
        t, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
        path = _loc(tuple(err["loc"]))
        if t == "extra_forbidden":
            msg = UNKNOWN_FIELD
        elif t == "missing":
            msg = "required field is missing"
        elif t in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
            op = {"greater_than_equal": "≥", "greater_than": ">", "less_than_equal": "≤", "less_than": "<"}[t]
            bound = next(iter(ctx.values()))
            msg = f"must be {op} {bound} (got {value!r})"
        elif t in ("literal_error", "enum"):
            allowed = ctx.get("expected", "")
            msg = f"must be one of {allowed} (got {value!r})"
        elif t == "string_pattern_mismatch":
            msg = f"must match {ctx.get('pattern')} (got {value!r})"
        elif t in _TYPE_NAMES:
            msg = f"must be {_TYPE_NAMES[t]} (got {_kind(value)})"
        elif t == "value_error":
            msg = str(ctx.get("error", err["msg"]))
        else:
            msg = err["msg"]
        out.append(Problem(path, msg))
    return out


def strip_unknown(model: type[BaseModel], data: Any) -> Any:
    """Copy of `data` without keys `model` does not know (recursively), for lenient loading."""
    if not isinstance(data, dict):
        return data
    fields = model.model_fields
    by_wire = {(f.alias or n): f for n, f in fields.items()} | dict(fields)
    out: dict[str, Any] = {}
    for key, value in data.items():
        field = by_wire.get(key)
        if field is None:
            continue
        out[key] = _strip_value(field.annotation, value)
    return out


def _strip_value(annotation: Any, value: Any) -> Any:
    import typing

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return strip_unknown(annotation, value)
    if origin in (list,) and args and isinstance(value, list):
        return [_strip_value(args[0], v) for v in value]
    if origin in (dict,) and len(args) == 2 and isinstance(value, dict):
        return {k: _strip_value(args[1], v) for k, v in value.items()}
    if origin is not None and args:  # Optional / Union
        for a in args:
            if isinstance(a, type) and issubclass(a, BaseModel):
                return strip_unknown(a, value)
    return value


class ObjectMeta(DynamoModel):
    """Manifest metadata. Fields the API server fills in are accepted (exported YAML) and not re-emitted."""

    name: str | None = None
    namespace: str | None = None
    generate_name: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    uid: str | None = Field(default=None, exclude=True)
    resource_version: str | None = Field(default=None, exclude=True)
    generation: int | None = Field(default=None, exclude=True)
    creation_timestamp: Any = Field(default=None, exclude=True)
    managed_fields: Any = Field(default=None, exclude=True)
    finalizers: list[str] | None = None
    owner_references: Any = Field(default=None, exclude=True)
