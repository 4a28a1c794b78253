"""One measured figure of a benchmark section (until `benchmarks.common.Figure` exists)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Figure:
    name: str
    value: float
    unit: str
    # The figure it is held against (issue 15's targets), and whether it met it.
    target: str | None = None
    met: bool | None = None
    # Context: repeats, object counts, raw samples.
    detail: dict[str, Any] | None = None

    def line(self) -> str:
        """One printable line: name, value, unit, target."""
        target = f"  [target {self.target}: {'met' if self.met else 'NOT met'}]" if self.target else ""
        return f"{self.name:<58} {self.value:12.3f} {self.unit}{target}"
