"""One error type for every problem found in user input, each with its field path, and the wording
shared by the pydantic checks and the CRD-schema checks."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dynamo_infra.errors import DynamoInfraError


@dataclass(frozen=True, order=True)
class Problem:
    """One invalid value: where (`spec.services.Frontend.replicas`) and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class DynamoWarning(UserWarning):
    """Something tolerated in lenient mode (e.g. an unknown field dropped from the typed model)."""


class DynamoValidationError(DynamoInfraError, ValueError):
    """Invalid Dynamo input. `problems` lists every problem found, not only the first."""

    def __init__(self, problems: Iterable[Problem], source: str | None = None) -> None:
        self.problems: list[Problem] = sorted(set(problems))
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        head = f"{self.source}: " if self.source else ""
        if len(self.problems) == 1:
            return f"{head}{self.problems[0]}"
        lines = "\n".join(f"  {p}" for p in self.problems)
        return f"{head}{len(self.problems)} problems:\n{lines}"

    def with_source(self, source: str) -> DynamoValidationError:
        return DynamoValidationError(self.problems, source)

    def with_prefix(self, prefix: str) -> DynamoValidationError:
        return DynamoValidationError(prefixed(prefix, self.problems), self.source)


def join_path(*parts: str | int) -> str:
    """`spec`, `services`, `X`, 0 -> `spec.services.X[0]`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "":
            continue
        elif out:
            out += f".{part}"
        else:
            out = str(part)
    return out


def prefixed(prefix: str, problems: Iterable[Problem]) -> list[Problem]:
    """`problems` with their paths re-rooted under `prefix`."""
    return [Problem(join_path(prefix, p.path), p.message) for p in problems]


def path_of(loc: Sequence[Any]) -> str:
    return join_path(*(p if isinstance(p, int) else str(p) for p in loc))


# Wording shared by the pydantic checks (`base`) and the CRD-schema checks (`kube`).
UNKNOWN_FIELD = "unknown field"
REQUIRED = "required field is missing"
# Kubernetes resource.Quantity as the CRDs spell it (int-or-string with this pattern).
QUANTITY_PATTERN = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
# JSON Schema type names as messages say them.
TYPE_WORDS = {
    "integer": "an integer",
    "string": "a string",
    "object": "a mapping",
    "array": "a list",
    "boolean": "a boolean",
    "number": "a number",
    "null": "null",
}
# A failed constraint, by check: `limit` is the schema's bound, pattern, length or allowed values.
_CONSTRAINTS = {
    "ge": "must be ≥ {limit} (got {got!r})",
    "gt": "must be > {limit} (got {got!r})",
    "le": "must be ≤ {limit} (got {got!r})",
    "lt": "must be < {limit} (got {got!r})",
    "enum": "must be one of {limit} (got {got!r})",
    "pattern": "must match {limit} (got {got!r})",
    "min_length": "must be at least {limit} characters long (got {got!r})",
    "max_length": "must be at most {limit} characters long",
    "min_items": "must have at least {limit} items (got {count})",
    "max_items": "must have at most {limit} items (got {count})",
}


def kind_of(value: Any) -> str:
    """The YAML-level kind of a value, for messages: `(got string)`."""
    if value is None:
        return "null"
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}
    return names.get(type(value), type(value).__name__)


def type_message(types: Iterable[str], got: Any) -> str:
    """`must be an integer or a string (got list)`, from JSON Schema type names."""
    return f"must be {' or '.join(TYPE_WORDS.get(t, t) for t in types)} (got {kind_of(got)})"


def constraint_message(check: str, limit: Any, got: Any) -> str:
    """The message of a failed constraint (`ge`, `enum`, `pattern`, `max_items`, ...)."""
    if check == "pattern" and limit == QUANTITY_PATTERN:
        return f"must be a quantity such as 500m, 2Gi or 1 (got {got!r})"
    count = len(got) if isinstance(got, list | dict) else got
    return _CONSTRAINTS[check].format(limit=limit, got=got, count=count)


def split_unknown(problems: list[Problem]) -> tuple[list[Problem], list[Problem]]:
    """(other problems, unknown-field problems)."""
    unknown = [p for p in problems if p.message == UNKNOWN_FIELD]
    return [p for p in problems if p.message != UNKNOWN_FIELD], unknown


def warn_unknown(unknown: list[Problem]) -> None:
    """Report tolerated unknown fields (lenient mode)."""
    for p in unknown:
        warnings.warn(f"{p.path}: unknown field ignored", DynamoWarning, stacklevel=3)
