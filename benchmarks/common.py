"""What the benchmarks share: the `Figure` record every section returns, its table, and a Pulumi
project of this repository's program in a temporary folder."""

from __future__ import annotations

import json
import math
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pulumi import automation as auto

    from tools.localcluster import LocalCluster

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Figure:
    """One measured figure. `target` bounds `value` from above (from below when `higher_is_better`);
    None: no target, the figure is informative. `detail` goes to the JSON only."""

    name: str
    value: float
    unit: str
    target: float | None = None
    higher_is_better: bool = False
    note: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def met(self) -> bool | None:
        """Whether the value meets the target (None without a target or without a value)."""
        if self.target is None or math.isnan(self.value):
            return None
        return self.value >= self.target if self.higher_is_better else self.value <= self.target

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["value"] = None if math.isnan(self.value) else self.value
        out["met"] = self.met
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Figure:
        """A figure as `to_json` wrote it (a missing value is NaN again; `met` is recomputed)."""
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["value"] = math.nan if data.get("value") is None else float(data["value"])
        return cls(**fields)


def figure_name(section: str, *parts: object) -> str:
    """`section.part.part`: a figure's dotted name, each part in lower case with `_` for other characters."""
    return ".".join([section, *(re.sub(r"[^a-z0-9]+", "_", str(p).lower()).strip("_") for p in parts)])


def format_value(value: float) -> str:
    """A figure's value with 3 significant digits (integers as they are)."""
    if math.isnan(value):
        return "n/a"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def format_target(figure: Figure) -> str:
    if figure.target is None:
        return ""
    return ("≥ " if figure.higher_is_better else "≤ ") + format_value(figure.target)


def table(figures: list[Figure]) -> str:
    """The figures as an aligned text table: figure, value, unit, target, met?"""
    met = {True: "yes", False: "NO", None: ""}
    rows = [("figure", "value", "unit", "target", "met?")] + [
        (f.name, format_value(f.value), f.unit, format_target(f), met[f.met]) for f in figures
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.rjust(widths[i]) if i == 1 else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def memory_mib(pid: int | str = "self") -> dict[str, float]:
    """VmRSS and VmHWM (its peak) of a process, in MiB, from /proc. Unlike getrusage's ru_maxrss, which
    a child keeps from the process it was forked from, VmHWM counts only the program it runs now."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


def local_stack(root: Path, cluster: LocalCluster, name: str, graph: Path, namespace: str) -> auto.Stack:
    """A stack of a copy of the program (file backend in `root`) deploying `graph` to `cluster`."""
    from pulumi import automation as auto

    project = root / "project"
    project.mkdir()
    for file in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO / file, project / file)
    (project / "stacks").mkdir()
    (project / "stacks" / "crds").symlink_to(REPO / "stacks" / "crds")
    (project / ".venv").symlink_to(REPO / ".venv")
    opts = auto.LocalWorkspaceOptions(
        work_dir=str(project), env_vars={"PULUMI_BACKEND_URL": f"file://{root}"}
    )
    stack = auto.create_stack(name, work_dir=str(project), opts=opts)
    stack.set_all_config(
        {
            "dynamo-infra:kubeconfigPath": auto.ConfigValue(str(cluster.kubeconfig)),
            "dynamo-infra:cluster": auto.ConfigValue(json.dumps({"namespace": namespace})),
            "dynamo-infra:graphs": auto.ConfigValue(json.dumps([str(graph)])),
        }
    )
    return stack
