"""Two `benchmarks/run --json` reports as one before → after table (Markdown):

    python -m benchmarks.compare BEFORE.json AFTER.json [--labels A,B] [--only fleet.100,apply]

A row per figure either report has, in the after report's order (figures only the before report has
come last): its unit and target, both values, the change, and whether the after value meets the
target. A figure one side lacks shows `—`. Above the table: each report's machine load and Pulumi,
so a reader sees the two ran on comparable ground.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import Figure, format_target, format_value

# The cell of a figure a report does not have.
ABSENT = "—"


def figures(report: dict[str, Any]) -> dict[str, Figure]:
    """A report's figures by name, in the report's order."""
    return {
        f["name"]: Figure.from_json(f)
        for section in report.get("sections", {}).values()
        for f in section.get("figures", [])
    }


def _value(figure: Figure | None) -> float | None:
    return None if figure is None or math.isnan(figure.value) else figure.value


def change(before: float | None, after: float | None, unit: str = "") -> str:
    """After against before: relative (`-13%`) when both are positive, else (and for a `fraction`, whose
    relative change says little) their difference (`-0.27`); `=` when equal, `—` when either is missing."""
    if before is None or after is None:
        return ABSENT
    if after == before:
        return "="
    if unit == "fraction" or before <= 0 or after < 0:
        return f"{after - before:+.2g}"
    return f"{(after - before) / before * 100:+.0f}%"


def _cell(value: float | None) -> str:
    return ABSENT if value is None else format_value(value)


def _met(figure: Figure | None) -> str:
    met = None if figure is None else figure.met
    return "" if met is None else "yes" if met else "NO"


def rows(before: dict[str, Any], after: dict[str, Any], only: list[str] | None = None) -> list[list[str]]:
    """The table's rows: figure, unit, target, before, after, change, met (after)."""
    old, new = figures(before), figures(after)
    names = [*new, *(n for n in old if n not in new)]
    if only:
        names = [n for n in names if any(n == p or n.startswith(p + ".") for p in only)]
    out = []
    for name in names:
        a, b = old.get(name), new.get(name)
        either = b or a
        assert either is not None
        out.append(
            [
                f"`{name}`",
                either.unit,
                format_target(either),
                _cell(_value(a)),
                _cell(_value(b)),
                change(_value(a), _value(b), either.unit),
                _met(b),
            ]
        )
    return out


def _ground(label: str, report: dict[str, Any]) -> str:
    machine = report.get("machine", {})
    load = machine.get("load_average") or []
    tools = report.get("toolchain", {})
    return (
        f"- {label}: {machine.get('cores', '?')} cores, load average at start "
        f"{' / '.join(f'{x:.2f}' for x in load) or '?'}; Pulumi {tools.get('pulumi_cli', '?')}, "
        f"SDK {tools.get('pulumi_sdk', '?')}"
    )


def markdown(
    before: dict[str, Any], after: dict[str, Any], labels: tuple[str, str], only: list[str] | None = None
) -> str:
    """The two reports' ground, then the before → after table."""
    head = ["figure", "unit", "target", labels[0], labels[1], "change", "met?"]
    lines = [_ground(labels[0], before), _ground(labels[1], after), ""]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    lines += ["| " + " | ".join(r) + " |" for r in rows(before, after, only)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--labels", default="before,after", help="the two columns' names (comma-separated)")
    parser.add_argument("--only", help="comma-separated figure-name prefixes (e.g. fleet.100,apply)")
    args = parser.parse_args(argv)
    labels = tuple(args.labels.split(",", 1))
    if len(labels) != 2:
        parser.error("--labels takes two names, comma-separated")
    only = [p.strip() for p in args.only.split(",") if p.strip()] if args.only else None
    before = json.loads(args.before.read_text())
    after = json.loads(args.after.read_text())
    print(markdown(before, after, (labels[0], labels[1]), only))
    return 0


if __name__ == "__main__":
    sys.exit(main())
