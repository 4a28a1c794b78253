"""Field paths (`spec.services.Frontend.replicas`, `spec.components[worker].image`) back to YAML lines.

The YAML is composed (PyYAML's `compose_all`), keeping each node's start mark; a path is walked
through the nodes. Keys may hold dots (`metadata.annotations.nvidia.com/x`): at a mapping the longest
key the rest of the path starts with wins. `[i]` indexes a list, `[name]` picks the list item whose
`name` is `name` (v1beta1 components) or a mapping key. A path that leaves the YAML (a missing
field) points at the deepest node it reached.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

# `documents[i]` prefixes paths in a multi-document file.
DOCUMENTS = "documents"
# What a YAML syntax error's message says of its position (`line 3, column 5`).
_SYNTAX_POSITION = re.compile(r"line (\d+), column (\d+)")
_INDEX = re.compile(r"\[([^\]]*)\]")


@dataclass(frozen=True)
class Position:
    """1-based line and column."""

    line: int
    column: int


def compose(text: str) -> list[yaml.Node]:
    """The non-empty documents' root nodes ([] when the YAML does not parse)."""
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return []
    return [
        n for n in nodes if n is not None and not (isinstance(n, yaml.ScalarNode) and n.tag.endswith(":null"))
    ]


def _position(node: yaml.Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


def _key_text(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else ""


def _step_mapping(node: yaml.MappingNode, rest: str) -> tuple[yaml.Node, yaml.Node, str] | None:
    """(key node, value node, rest of the path) for the longest key `rest` starts with."""
    best: tuple[yaml.Node, yaml.Node, str] | None = None
    for key, value in node.value:
        k = _key_text(key)
        fits = k and rest.startswith(k) and (len(rest) == len(k) or rest[len(k)] in ".[")
        if fits and (best is None or len(k) > len(_key_text(best[0]))):
            best = (key, value, rest[len(k) :])
    return best


def _step_index(node: yaml.Node, index: str) -> tuple[yaml.Node, yaml.Node] | None:
    """(where to point, the item) for `[index]` in a list or mapping."""
    if isinstance(node, yaml.SequenceNode):
        if index.isdigit():
            i = int(index)
            return (node.value[i], node.value[i]) if i < len(node.value) else None
        for item in node.value:
            if isinstance(item, yaml.MappingNode):
                for key, value in item.value:
                    if _key_text(key) == "name" and _key_text(value) == index:
                        return item, item
        return None
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if _key_text(key) == index:
                return key, value
    return None


def locate(documents: list[yaml.Node], path: str) -> Position | None:
    """Where `path` is in the documents (None when there are none)."""
    if not documents:
        return None
    rest = path
    node = documents[0]
    m = re.match(rf"{DOCUMENTS}\[(\d+)\]\.?", rest)
    if m and len(documents) > 1:
        i = int(m.group(1))
        if i >= len(documents):
            return None
        node, rest = documents[i], rest[m.end() :]
    where = node
    while rest:
        if rest.startswith("."):
            rest = rest[1:]
            continue
        index = _INDEX.match(rest)
        if index:
            found = _step_index(node, index.group(1))
            if found is None:
                break
            where, node = found
            rest = rest[index.end() :]
            continue
        if not isinstance(node, yaml.MappingNode):
            break
        step = _step_mapping(node, rest)
        if step is None:
            break
        where, node, rest = step
    return _position(where)


def syntax_position(message: str) -> Position | None:
    """The position a YAML syntax error's message names."""
    m = _SYNTAX_POSITION.search(message)
    return Position(int(m.group(1)), int(m.group(2))) if m else None
