"""One error type for every problem found in user input, each with its field path."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class Problem:
    """One invalid value: where (`spec.services.Frontend.replicas`) and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class DynamoWarning(UserWarning):
    """Something tolerated in lenient mode (e.g. an unknown field dropped from the typed model)."""


class DynamoValidationError(ValueError):
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
        return DynamoValidationError(
            [Problem(join_path(prefix, p.path), p.message) for p in self.problems], self.source
        )


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


def path_of(loc: Sequence[Any]) -> str:
    return join_path(*(p if isinstance(p, int) else str(p) for p in loc))
