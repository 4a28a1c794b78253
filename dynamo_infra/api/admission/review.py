"""What admission answers: the problems that deny an object, and the warnings it returns anyway."""

from __future__ import annotations

from dataclasses import dataclass

from dynamo_infra.api.errors import DynamoValidationError, Problem


class AdmissionDenied(DynamoValidationError):
    """The operator's validating webhook would deny the object; `problems` are its causes."""


@dataclass(frozen=True)
class Review:
    problems: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        return not self.problems

    def __add__(self, other: Review) -> Review:
        return Review(self.problems + other.problems, self.warnings + other.warnings)

    def raise_denied(self, source: str | None = None) -> None:
        """Raise AdmissionDenied when the review denies the object."""
        if self.problems:
            raise AdmissionDenied(self.problems, source)
