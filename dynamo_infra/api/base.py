"""Shared base of every Dynamo model: camelCase on the wire, unknown fields rejected, errors with paths."""

from __future__ import annotations

import math
import re
import typing
import warnings
from typing import Any, ClassVar, Self

import pydantic
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from dynamo_infra.api.errors import DynamoValidationError, DynamoWarning, Problem, join_path, path_of

# Kubernetes sub-objects (pod specs, containers, probes, env, volumes, resources) are kept as the
# plain dicts the user wrote; they are checked against the CRD's own OpenAPI schema, not re-typed.
KubeObject = dict[str, Any]

UNKNOWN_FIELD = "unknown field"
# Kubernetes resource.Quantity as the CRDs spell it (int-or-string with this pattern).
QUANTITY_PATTERN = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"


def quantity_message(value: object) -> str:
    return f"must be a quantity such as 500m, 2Gi or 1 (got {value!r})"


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
        # Schemas are built on first use, so importing the API stays fast.
        defer_build=True,
    )

    @classmethod
    def parse(cls, data: Any, *, lenient: bool = False, kube_schema: bool = True) -> Self:
        """Validate wire-format data; raise DynamoValidationError with one problem per bad field.

        With `lenient`, unknown fields are dropped from the typed model and reported as
        `DynamoWarning`s (never silently). `kube_schema=False` skips the CRD-schema check of
        Kubernetes sub-objects (for data built from an already validated object).
        """
        problems = json_problems(data)
        if problems:
            raise DynamoValidationError(problems)
        problems = _model_problems(cls, data)
        unknown = [p for p in problems if p.message == UNKNOWN_FIELD]
        if lenient and unknown:
            problems = [p for p in problems if p.message != UNKNOWN_FIELD]
            data = strip_unknown(cls, data)
        if kube_schema:
            problems += cls._extra_problems(data, lenient=lenient)
        if problems:
            raise DynamoValidationError(problems)
        if lenient and unknown:
            warn_unknown(unknown)
        return cls.model_validate(data)

    @classmethod
    def _extra_problems(cls, data: Any, *, lenient: bool) -> list[Problem]:
        """Checks beyond the pydantic model (the CRD schema of Kubernetes sub-objects)."""
        return []

    def to_wire(self) -> dict[str, Any]:
        """The object as `kubectl apply` accepts it: camelCase, unset fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


class ApiModel(DynamoModel):
    """A model of a custom resource's schema: strict types, as the API server checks them."""

    model_config = ConfigDict(strict=True)


def json_problems(data: Any, at: tuple[str | int, ...] = ()) -> list[Problem]:
    """Values that have no JSON form (YAML sets, binary, non-string keys, NaN): Kubernetes rejects them."""
    if isinstance(data, dict):
        out: list[Problem] = []
        for k, v in data.items():
            if not isinstance(k, str):
                out.append(
                    Problem(join_path(*at, str(k)), f"mapping keys must be strings (got {kind_of(k)})")
                )
            else:
                out.extend(json_problems(v, (*at, k)))
        return out
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in json_problems(v, (*at, i))]
    if isinstance(data, float) and not math.isfinite(data):
        return [Problem(join_path(*at), f"must be a finite number (got {data})")]
    if data is None or isinstance(data, str | int | float | bool):
        return []
    return [Problem(join_path(*at), f"unsupported value of type {type(data).__name__}")]


def _model_problems(cls: type[BaseModel], data: Any) -> list[Problem]:
    try:
        cls.model_validate(data)
    except pydantic.ValidationError as e:
        return problems_of(e)
    return []


def warn_unknown(unknown: list[Problem]) -> None:
    """Report tolerated unknown fields (lenient mode)."""
    for p in unknown:
        warnings.warn(f"{p.path}: unknown field ignored", DynamoWarning, stacklevel=3)


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


def kind_of(value: Any) -> str:
    """The YAML-level kind of a value, for messages: `(got string)`."""
    if value is None:
        return "null"
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}
    return names.get(type(value), type(value).__name__)


def _loc(loc: tuple[Any, ...]) -> str:
    # Drop the function/type tags pydantic inserts for unions and validators.
    kept = [p for p in loc if isinstance(p, int) or not _is_tag(str(p))]
    return path_of(kept)


def _is_tag(part: str) -> bool:
    return part in _TAGS or part.startswith(("function-", "constrained-", "json-or-python", "literal["))


_TAGS = {"str", "int", "float", "bool", "list", "dict", "none", "null", "lax-or-strict"}


def problems_of(e: pydantic.ValidationError) -> list[Problem]:
    """Translate pydantic errors into plain `(path, message)` problems."""
    by_path: dict[str, list[Problem]] = {}
    for err in e.errors(include_url=False):
        path = _loc(tuple(err["loc"]))
        by_path.setdefault(path, []).append(Problem(path, _message(err)))
    out: list[Problem] = []
    for path, found in by_path.items():
        # A union (e.g. int-or-string quantity) fails once per member: keep the most useful one.
        types = [p for p in found if _TYPE_MESSAGE.match(p.message)]
        if len(types) > 1 and len(types) == len(found):
            kinds = " or ".join(sorted({p.message.split(" (got")[0].removeprefix("must be ") for p in types}))
            out.append(Problem(path, f"must be {kinds} (got {types[0].message.split('(got ')[1]}"))
        elif len(found) > 1 and types:
            out.extend(p for p in found if p not in types)
        else:
            out.extend(found)
    return out


_TYPE_MESSAGE = re.compile(r"^must be an? [a-z]+ \(got [a-z]+\)$")


def _message(err: Any) -> str:
    t, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if t == "extra_forbidden":
        return UNKNOWN_FIELD
    if t == "missing":
        return "required field is missing"
    if t in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": "≥", "greater_than": ">", "less_than_equal": "≤", "less_than": "<"}[t]
        bound = next(iter(ctx.values()))
        return f"must be {op} {bound} (got {value!r})"
    if t in ("literal_error", "enum"):
        return f"must be one of {ctx.get('expected', '')} (got {value!r})"
    if t == "string_pattern_mismatch" and ctx.get("pattern") == QUANTITY_PATTERN:
        return quantity_message(value)
    if t == "string_pattern_mismatch":
        return f"must match {ctx.get('pattern')} (got {value!r})"
    if t == "string_too_short":
        return f"must be at least {ctx.get('min_length')} characters long (got {value!r})"
    if t == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters long"
    if t == "too_long":
        return f"must have at most {ctx.get('max_length')} items (got {ctx.get('actual_length')})"
    if t == "too_short":
        return f"must have at least {ctx.get('min_length')} items (got {ctx.get('actual_length')})"
    if t in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[t]} (got {kind_of(value)})"
    if t == "value_error":
        return str(ctx.get("error", err["msg"]))
    return str(err["msg"])


def strip_unknown(model: type[BaseModel], data: Any) -> Any:
    """Copy of `data` without keys `model` does not know (recursively), for lenient loading."""
    if not isinstance(data, dict):
        return data
    if model.model_config.get("extra") == "allow":
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
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _strip_value(args[0], value)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return strip_unknown(annotation, value)
    if origin is list and args and isinstance(value, list):
        return [_strip_value(args[0], v) for v in value]
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        return {k: _strip_value(args[1], v) for k, v in value.items()}
    if origin is not None and args:  # Optional / Union
        for a in args:
            if typing.get_origin(a) in (list, dict, typing.Annotated) or (
                isinstance(a, type) and issubclass(a, BaseModel)
            ):
                return _strip_value(a, value)
    return value


class ObjectMeta(DynamoModel):
    """Manifest metadata. Fields the API server fills in are accepted (exported YAML) and not re-emitted."""

    model_config = ConfigDict(strict=True)

    name: str | None = None
    namespace: str | None = None
    generate_name: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    uid: str | None = Field(default=None, exclude=True)
    resource_version: str | None = Field(default=None, exclude=True)
    generation: int | None = Field(default=None, exclude=True)
    creation_timestamp: Any = Field(default=None, exclude=True)
    deletion_timestamp: Any = Field(default=None, exclude=True)
    deletion_grace_period_seconds: Any = Field(default=None, exclude=True)
    managed_fields: Any = Field(default=None, exclude=True)
    finalizers: list[str] | None = None
    owner_references: Any = Field(default=None, exclude=True)
    self_link: Any = Field(default=None, exclude=True)


class Resource(ApiModel):
    """A top-level custom resource: apiVersion, kind, metadata, spec and (read-only) status.

    Subclasses set `API_VERSION`/`KIND` and type `spec`/`status`.
    """

    API_VERSION: ClassVar[str]
    KIND: ClassVar[str]

    api_version: str
    kind: str
    metadata: ObjectMeta = ObjectMeta()

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @classmethod
    def _extra_problems(cls, data: Any, *, lenient: bool) -> list[Problem]:
        from dynamo_infra.api import kube  # lazy: loads the CRD schemas on first use

        return kube.validate(cls, data, lenient=lenient)

    def to_manifest(self) -> dict[str, Any]:
        """The custom resource as `kubectl apply` accepts it (no status, no server-set metadata)."""
        out = self.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude_unset=True, exclude={"status"}
        )
        out["apiVersion"] = self.API_VERSION
        out["kind"] = self.KIND
        out["metadata"] = self.metadata.to_wire()
        return {k: out[k] for k in ("apiVersion", "kind", "metadata", *[k for k in out if k not in _HEAD])}

    def to_yaml(self) -> str:
        """`to_manifest()` as a YAML document."""
        from dynamo_infra.api.loader import dump_yaml

        return dump_yaml([self.to_manifest()])

    def with_annotations(self, annotations: dict[str, str] | None) -> Self:
        """A copy whose metadata.annotations are replaced (None or empty removes them)."""
        meta = self.metadata.to_wire()
        meta.pop("annotations", None)
        if annotations:
            meta["annotations"] = dict(annotations)
        return self.model_copy(update={"metadata": ObjectMeta.model_validate(meta)})


_HEAD = ("apiVersion", "kind", "metadata")


def resource_problems(prefix: str, e: DynamoValidationError) -> list[Problem]:
    """Problems of a nested resource, re-rooted under `prefix`."""
    return [Problem(join_path(prefix, p.path), p.message) for p in e.problems]
