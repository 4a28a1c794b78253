"""Shared base of every Dynamo model: camelCase on the wire, unknown fields rejected, errors with paths."""

from __future__ import annotations

import math
import re
import typing
from typing import Any, ClassVar, Self, TypeVar

import pydantic
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from dynamo_infra.api import kube, kubenames
from dynamo_infra.api.errors import (
    REQUIRED,
    UNKNOWN_FIELD,
    DynamoValidationError,
    Problem,
    constraint_message,
    join_path,
    kind_of,
    path_of,
    split_unknown,
    type_message,
    warn_unknown,
)
from dynamo_infra.api.manifest import Manifest, dump_yaml
from dynamo_infra.api.typeinfo import unwrap

M = TypeVar("M", bound=BaseModel)


class WireModel(BaseModel):
    """Base of every pydantic model (camelCase wire form); not the `DynamoModel` custom resource.

    Unknown fields are errors unless `lenient` is asked for.
    """

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
        problems = json_problems(data) or cls._refused(data)
        if problems:
            raise DynamoValidationError(problems)
        model, problems = _validated(cls, data)
        known, unknown = split_unknown(problems)
        if lenient and unknown:
            problems, data = known, strip_unknown(cls, data)
        if kube_schema:
            problems += cls._extra_problems(data, lenient=lenient)
        if problems:
            raise DynamoValidationError(problems)
        if lenient and unknown:
            warn_unknown(unknown)
        # Validated once: the model of the data as it was checked (stripped data is validated anew).
        return model if model is not None and not (lenient and unknown) else cls.model_validate(data)

    @classmethod
    def _refused(cls, data: Any) -> list[Problem]:
        """What is refused before any other check: a whole feature dynamo-infra does not serve."""
        return []

    @classmethod
    def _extra_problems(cls, data: Any, *, lenient: bool) -> list[Problem]:
        """Checks beyond the pydantic model (the CRD schema of Kubernetes sub-objects)."""
        return []

    def to_wire(self) -> Manifest:
        """The object as `kubectl apply` accepts it: camelCase, unset fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


class CheckedModel(WireModel):
    """Settings whose rules across fields (`problems()`, each naming its key path) `parse` reports."""

    def problems(self) -> list[Problem]:
        return []

    @classmethod
    def _extra_problems(cls, data: Any, *, lenient: bool) -> list[Problem]:
        try:
            settings = cls.model_validate(data)
        except ValueError:
            return []
        return settings.problems()


class ApiModel(WireModel):
    """A model of a custom resource's schema: strict types, as the API server checks them."""

    model_config = ConfigDict(strict=True)


def json_problems(data: Any, at: tuple[str | int, ...] = ()) -> list[Problem]:
    """Values that have no JSON form (YAML sets, binary, non-string keys, NaN): Kubernetes rejects them."""
    # Most documents have none: one walk without paths says so.
    return [] if _is_json(data) else _json_problems(data, at)


def _is_json_leaf(v: Any) -> bool:
    return v is None or isinstance(v, str | int) or (isinstance(v, float) and math.isfinite(v))


def _is_json(data: Any) -> bool:
    """Whether `json_problems(data)` is empty."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for k, v in item.items():
                if not isinstance(k, str):
                    return False
                if isinstance(v, dict | list):
                    stack.append(v)
                elif not _is_json_leaf(v):
                    return False
        elif isinstance(item, list):
            for v in item:
                if isinstance(v, dict | list):
                    stack.append(v)
                elif not _is_json_leaf(v):
                    return False
        elif not _is_json_leaf(item):
            return False
    return True


def _json_problems(data: Any, at: tuple[str | int, ...]) -> list[Problem]:
    if isinstance(data, dict):
        out: list[Problem] = []
        for k, v in data.items():
            if not isinstance(k, str):
                out.append(
                    Problem(join_path(*at, str(k)), f"mapping keys must be strings (got {kind_of(k)})")
                )
            else:
                out.extend(_json_problems(v, (*at, k)))
        return out
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in _json_problems(v, (*at, i))]
    if isinstance(data, float) and not math.isfinite(data):
        return [Problem(join_path(*at), f"must be a finite number (got {data})")]
    if data is None or isinstance(data, str | int | float | bool):
        return []
    return [Problem(join_path(*at), f"unsupported value of type {type(data).__name__}")]


def _validated(cls: type[M], data: Any) -> tuple[M | None, list[Problem]]:
    """The model of `data`, or None and the problems pydantic finds."""
    try:
        return cls.model_validate(data), []
    except pydantic.ValidationError as e:
        return None, problems_of(e)


# pydantic error types of a wrong type, by the JSON type wanted.
_WANTED_TYPE = {
    t: want
    for want, names in {
        "integer": ("int_type", "int_parsing", "int_from_float"),
        "string": ("string_type",),
        "boolean": ("bool_type", "bool_parsing"),
        "number": ("float_type", "float_parsing"),
        "object": ("dict_type", "model_type", "model_attributes_type"),
        "array": ("list_type",),
    }.items()
    for t in names
}
# pydantic error types of a failed constraint: the check and the context key of its limit.
_CHECKS = {
    "greater_than_equal": ("ge", "ge"),
    "greater_than": ("gt", "gt"),
    "less_than_equal": ("le", "le"),
    "less_than": ("lt", "lt"),
    "literal_error": ("enum", "expected"),
    "enum": ("enum", "expected"),
    "string_pattern_mismatch": ("pattern", "pattern"),
    "string_too_short": ("min_length", "min_length"),
    "string_too_long": ("max_length", "max_length"),
    "too_short": ("min_items", "min_length"),
    "too_long": ("max_items", "max_length"),
}


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
        return REQUIRED
    if t in _CHECKS:
        check, key = _CHECKS[t]
        return constraint_message(check, ctx.get(key, ""), value)
    if t in _WANTED_TYPE:
        return type_message([_WANTED_TYPE[t]], value)
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
    ann = unwrap(annotation)
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return strip_unknown(ann, value)
    if origin is list and args and isinstance(value, list):
        return [_strip_value(args[0], v) for v in value]
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        return {k: _strip_value(args[1], v) for k, v in value.items()}
    return value


class ObjectMeta(WireModel):
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

    Subclasses type `spec`/`status` and pin `api_version`/`kind` as `Literal` fields whose defaults
    become `API_VERSION`/`KIND`.
    """

    API_VERSION: ClassVar[str]
    KIND: ClassVar[str]

    api_version: str
    kind: str
    metadata: ObjectMeta = ObjectMeta()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        for attr, field in (("API_VERSION", "api_version"), ("KIND", "kind")):
            default = cls.model_fields[field].default
            if isinstance(default, str):
                setattr(cls, attr, default)

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @classmethod
    def parse(cls, data: Any, *, lenient: bool = False, kube_schema: bool = True) -> Self:
        """`WireModel.parse` of the document as the API server sees it: nulls where the CRD schema
        is not `nullable` pruned first (the API server prunes them before validating)."""
        kind, api_version = getattr(cls, "KIND", None), getattr(cls, "API_VERSION", None)
        if kind and api_version:
            data = kube.without_null_fields(data, kind, api_version.split("/")[-1])
        return super().parse(data, lenient=lenient, kube_schema=kube_schema)

    @classmethod
    def _extra_problems(cls, data: Any, *, lenient: bool) -> list[Problem]:
        meta = data.get("metadata") if isinstance(data, dict) else None
        return kubenames.metadata_problems(meta) + kube.validate(cls, data, lenient=lenient)

    def to_manifest(self) -> Manifest:
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
        return dump_yaml([self.to_manifest()])

    def with_annotations(self, annotations: dict[str, str] | None) -> Self:
        """A copy whose metadata.annotations are replaced (None or empty removes them)."""
        meta = self.metadata.to_wire()
        meta.pop("annotations", None)
        if annotations:
            meta["annotations"] = dict(annotations)
        return self.model_copy(update={"metadata": ObjectMeta.model_validate(meta)})


_HEAD = ("apiVersion", "kind", "metadata")
