"""A PreviewSummary as a Markdown pull-request comment that fits a size limit.

Detail is cut in a fixed order until the comment fits, and the comment says what was cut:
1. the field lists of created and deleted objects (their keys stay),
2. the field lists of objects whose change restarts no pod,
3. every field list (objects keep a count of changed fields),
4. whole graphs, one line each, those without a rollout first, the largest first,
5. as a last resort, the text itself (cut at a line, with a note).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from dynamo_infra.cli.preview_model import (
    SECRET,
    UNKNOWN,
    ComponentChange,
    FieldChange,
    GraphChange,
    ObjectChange,
    PreviewSummary,
)

# GitHub's limit on an issue or pull-request comment, in characters.
GITHUB_COMMENT_LIMIT = 65_536
# Room kept below it for what a workflow adds around the comment (a marker, a link).
LIMIT_MARGIN = 1_536
# The default size limit of a comment.
DEFAULT_LIMIT = GITHUB_COMMENT_LIMIT - LIMIT_MARGIN
# Longest value shown in a field line; longer ones are cut with an ellipsis.
VALUE_WIDTH = 120
HIDDEN = "changed (value hidden)"
AFTER_APPLY = "known only after apply"
CUTS = (
    "field values of created and deleted objects",
    "field lists of objects whose change restarts no pods",
    "all field lists (counts kept)",
)


@dataclasses.dataclass(frozen=True)
class Detail:
    """How much to show: the collapse level (0 = all) and the graphs shown as one line."""

    level: int = 0
    collapsed: frozenset[str] = frozenset()


def placeholder(v: Any) -> str:
    """A nested secret or unknown inside a shown value."""
    return "(value hidden)" if v is SECRET else f"({AFTER_APPLY})"


def value(v: Any) -> str:
    if v is SECRET:
        return HIDDEN
    if v is UNKNOWN:
        return f"({AFTER_APPLY})"
    text = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=placeholder)
    if len(text) > VALUE_WIDTH:
        text = text[: VALUE_WIDTH - 1] + "…"
    return "`" + text.replace("`", "'").replace("\n", "\\n") + "`"


def field_line(f: FieldChange) -> str:
    if f.old is SECRET or f.new is SECRET:
        return f"`{f.path}`: {HIDDEN}"
    if f.absent_old:
        return f"`{f.path}`: added {value(f.new)}"
    if f.absent_new:
        return f"`{f.path}`: removed (was {value(f.old)})"
    return f"`{f.path}`: {value(f.old)} → {value(f.new)}"


OP_WORDS = {
    "create": "created",
    "delete": "deleted",
    "update": "updated",
    "replace": "replaced",
    "keep": "kept in the cluster, no longer in the stack",
}


def object_lines(o: ObjectChange, level: int) -> list[str]:
    head = f"- {OP_WORDS.get(o.op, o.op)} `{o.key}`"
    if o.old_key:
        head += f" (was `{o.old_key.rsplit('/', 1)[-1]}`)"
    notes = []
    if o.restart:
        notes.append(f"**pods restart**: {o.restart}")
    elif o.scale.startswith("replicas"):
        notes.append(f"scaled, no restart: {o.scale}")
    elif o.scale:
        notes.append(o.scale)
    if o.secret:
        notes.append("secret data hidden")
    if notes:
        head += " — " + "; ".join(notes)
    fields = o.fields
    hide = level >= 3 or (level >= 2 and not o.restart) or (level >= 1 and o.op in ("create", "delete"))
    if hide or not fields:
        return [head + (f" ({len(fields)} fields changed)" if fields and o.op != "create" else "")]
    return [head, *(f"  - {field_line(f)}" for f in fields)]


def component_lines(c: ComponentChange, level: int) -> list[str]:
    rollout = any(o.restart for o in c.objects)
    head = f"#### `{c.name}` ({c.op}{', pods restart' if rollout else ''})"
    lines = [head, ""]
    if c.unknown_objects:
        lines.append(
            f"- its Kubernetes objects are {AFTER_APPLY}: they depend on something `pulumi up` creates"
            " first (e.g. a checkpoint becoming ready), so the preview cannot list them"
        )
    for o in c.objects:
        lines += object_lines(o, level)
    for f in c.settings:
        lines.append(f"- setting {field_line(f)}")
    lines.append("")
    return lines


def graph_headline(g: GraphChange) -> str:
    objs = list(g.objects())
    counts = {op: sum(1 for o in objs if o.op == op) for op in OP_WORDS}
    parts = [f"{n} {OP_WORDS[op]}" for op, n in counts.items() if n]
    rollouts = g.rollouts
    if rollouts:
        parts.append(f"pods restart in {', '.join(rollouts)}")
    return ", ".join(parts) or "settings only"


def graph_lines(g: GraphChange, detail: Detail) -> list[str]:
    head = f"<b>{g.name}</b>: {graph_headline(g)}"
    if g.name in detail.collapsed:
        return [f"- {head} (details cut to fit)", ""]
    opened = " open" if g.rollouts else ""
    lines = [f"<details{opened}><summary>{head}</summary>", ""]
    for c in g.components:
        lines += component_lines(c, detail.level)
    lines += ["</details>", ""]
    return lines


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# Groups of a summary that are not graphs: the platform layer and the stack's other resources.
NOT_GRAPHS = ("platform", "stack")


def headline(s: PreviewSummary) -> str:
    graphs = [g for g in s.graphs if g.name not in NOT_GRAPHS]
    extra = [f"the {g.name}" for g in s.graphs if g.name in NOT_GRAPHS]
    counted = [f"**{plural(len(graphs), 'graph')}**"] if graphs or not extra else []
    who = " and ".join([*counted, *extra])
    parts = [
        f"{plural(s.count('update'), 'object')} updated",
        f"{s.count('create')} created",
        f"{s.count('delete')} deleted",
    ]
    if s.count("replace"):
        parts.insert(1, f"{s.count('replace')} replaced by a new name")
    rollouts = [f"{g.name}/{c}" for g in s.graphs for c in g.rollouts]
    tail = f"{plural(len(rollouts), 'rollout')} of pods"
    if rollouts:
        tail += (
            " (" + ", ".join(f"`{r}`" for r in rollouts[:10]) + (", …" if len(rollouts) > 10 else "") + ")"
        )
    return f"{who}: {', '.join(parts)}; {tail}"


def legend(s: PreviewSummary) -> list[str]:
    lines = []
    if any(o.secret for g in s.graphs for o in g.objects()) or any(
        f.old is SECRET or f.new is SECRET for g in s.graphs for c in g.components for f in c.settings
    ):
        lines.append(
            "Secret values (Pulumi secrets, the data of Secret objects) are never shown: "
            f'"{HIDDEN}" marks them (Pulumi\'s JSON does not say whether a secret value changed).'
        )
    unknown = any(c.unknown_objects for g in s.graphs for c in g.components) or any(
        o.unknown for g in s.graphs for o in g.objects()
    )
    if unknown:
        lines.append(
            f"Values {AFTER_APPLY} come from resources this update creates or changes; "
            "`pulumi up` fills them in."
        )
    return lines


def render(s: PreviewSummary, detail: Detail, cut: list[str], limit: int) -> str:
    title = f"### Pulumi preview{f' of stack `{s.stack}`' if s.stack else ''}"
    lines = [title, "", headline(s), ""]
    if not s.graphs:
        lines.append("No change to any Kubernetes object.")
    for g in s.graphs:
        lines += graph_lines(g, detail)
    for note in legend(s):
        lines += [f"> {note}", ""]
    if cut:
        lines += [f"> Cut to fit the {limit:,}-character limit of the comment: {'; '.join(cut)}.", ""]
    return "\n".join(lines)


def collapse_order(s: PreviewSummary) -> list[str]:
    """Graphs in the order they collapse: those without a rollout first, then the largest."""

    def weight(g: GraphChange) -> tuple[bool, int]:
        return (bool(g.rollouts), -sum(len(o.fields) + 1 for o in g.objects()))

    return [g.name for g in sorted(s.graphs, key=weight)]


def comment(s: PreviewSummary, limit: int = DEFAULT_LIMIT) -> str:
    """The Markdown comment, at most `limit` characters."""
    cut: list[str] = []
    text = render(s, Detail(), cut, limit)
    level = 0
    while len(text) > limit and level < len(CUTS):
        cut.append(CUTS[level])
        level += 1
        text = render(s, Detail(level), cut, limit)
    collapsed: list[str] = []
    order = collapse_order(s)
    while len(text) > limit and len(collapsed) < len(order):
        collapsed.append(order[len(collapsed)])
        note = f"{len(collapsed)} of {len(order)} graphs shown as one line"
        text = render(s, Detail(level, frozenset(collapsed)), [*cut, note], limit)
    if len(text) > limit:
        note = "\n\n> Cut here to fit the comment limit (run `pulumi preview --diff` for everything)."
        text = text[: max(0, limit - len(note))].rsplit("\n", 1)[0] + note
        text = text[:limit]
    return text
