"""MkDocs hooks (`mkdocs.yml` `hooks:`): the documentation's generated parts, made from the code at build time.

A page asks for a part with a line `<!-- generated: NAME -->`; `on_page_markdown` puts the part in its
place. Parts: `cli` (the real `--help` of `dynamo-infra` and each subcommand), `stack-keys` (every
`dynamo-infra:*` key the stack configuration reads, with the nested keys of its options models),
`gates` (the runtime-version gates of `dynamo_infra/api/releases.py`) and `releases` (the Dynamo
runtime releases the end-to-end tests run). Nothing generated is checked in, so nothing can drift.
An unknown part, a top-level stack key the stack-configuration guide does not name, or a gate the
parity page's table of sources lacks, fails the build.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import os
import re
import subprocess
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# A page's request for a generated part.
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)
# The guide that must name every top-level stack key (relative to docs/).
STACK_GUIDE = "how-to/stack-configuration.md"
# The page whose hand-written table says where each gate was ported from: it must name every gate.
GATES_PAGE = "reference/parity.md"
# Terminal width the CLI help is formatted for (argparse reads COLUMNS).
HELP_COLUMNS = "100"


def _run_help(args: list[str]) -> str:
    env = {**os.environ, "COLUMNS": HELP_COLUMNS, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "dynamo_infra.cli", *args, "--help"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, check=True)
    return out.stdout.replace("python -m dynamo_infra.cli", "dynamo-infra")


def cli_reference() -> str:
    """`dynamo-infra --help`, then each subcommand's, in the parser's order."""
    from dynamo_infra.cli import main

    parts = ["### `dynamo-infra`", "", "```text", _run_help([]).rstrip(), "```"]
    for module in main.command_modules():
        parts += ["", f"### `dynamo-infra {module.NAME}`", "", "```text", _run_help([module.NAME]).rstrip()]
        parts.append("```")
    return "\n".join(parts)


class _Recorder:
    """A `ConfigReader` that answers nothing and records every key it is asked for, with how."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        self.keys.setdefault(key, "string")
        return None

    def get_bool(self, key: str) -> bool | None:
        self.keys.setdefault(key, "boolean")
        return None

    def get_object(self, key: str) -> Any:
        self.keys.setdefault(key, "object")
        return None


def read_stack_keys() -> dict[str, str]:
    """Every top-level key the program reads, as `StackConfig.from_config` reads them (run, not parsed)."""
    from dynamo_infra import stack_config

    recorder = _Recorder()
    stack_config.StackConfig.from_config(recorder, kubeconfig=False)
    # Neither key set: the program's error; what was asked is recorded.
    with contextlib.suppress(stack_config.StackConfigError):
        stack_config.read_kubeconfig(recorder)
    stack_config.read_kubeconfig(recorder, stack_config.GRAPH_PREFIX, required=False)
    return recorder.keys


def _object_models() -> dict[str, tuple[type, str]]:
    """The model each object-valued key is parsed into, and where it sits under the key."""
    from dynamo_infra.api.autoscaling import Autoscaler
    from dynamo_infra.config import AgentOptions, ClusterOptions
    from dynamo_infra.platform_options import PlatformOptions

    return {
        "cluster": (ClusterOptions, ""),
        "platform": (PlatformOptions, ""),
        "agent": (AgentOptions, ""),
        "autoscalers": (Autoscaler, "<graph>.<component>."),
    }


# Object-valued keys that are no options model: how their value is laid out.
PLAIN_OBJECTS = {"graphs": "list of DynamoGraphDeployment YAML files, relative to the project"}


def _comments(cls: type) -> dict[str, str]:
    """The comment lines right above each field of `cls` (its own source, not its bases')."""
    try:
        src = textwrap.dedent(inspect.getsource(cls)).splitlines()
    except (OSError, TypeError):
        return {}
    tree = ast.parse("\n".join(src))
    out: dict[str, str] = {}
    klass = tree.body[0]
    assert isinstance(klass, ast.ClassDef)
    for node in klass.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above: list[str] = []
            i = node.lineno - 2
            while i >= 0 and src[i].strip().startswith("#"):
                above.insert(0, src[i].strip().lstrip("#").strip())
                i -= 1
            if above:
                out[node.target.id] = " ".join(above)
    return out


def _field_comment(cls: type, name: str) -> str:
    for base in cls.__mro__:
        if name in getattr(base, "__annotations__", {}):
            comment = _comments(base).get(name)
            if comment:
                return comment
    return ""


def _summary(cls: type) -> str:
    """The first paragraph of the class's own docstring, else of its module's ("" for neither)."""
    doc = cls.__dict__.get("__doc__") or ""
    if not doc and cls.__name__ in (sys.modules[cls.__module__].__doc__ or "").split(":")[0]:
        doc = sys.modules[cls.__module__].__doc__ or ""
    return _cell(inspect.cleandoc(doc).split("\n\n")[0])


def _cell(text: str) -> str:
    """Text as one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" if a != "" else '`""`' for a in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in args if a is not type(None)) + " (optional)"
    if origin in (list, tuple):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict or annotation is dict:
        return "object"
    if isinstance(annotation, type) and _is_model(annotation):
        return "object"
    return {str: "string", bool: "boolean", int: "integer", float: "number"}.get(annotation, str(annotation))


def _is_model(annotation: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _default(field: Any) -> str:
    from pydantic_core import PydanticUndefined

    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if _is_model(type(value)):
        return ""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return '`""`' if value == "" else f"`{value}`"


def _model_rows(cls: Any, prefix: str) -> Iterator[tuple[str, str, str, str]]:
    """(key path, type, default, meaning) for each field of `cls`, its sub-models' fields after it."""
    from pydantic.alias_generators import to_camel

    for name, field in cls.model_fields.items():
        wire = field.alias or to_camel(name)
        annotation = field.annotation
        nested = next((a for a in (annotation, *typing.get_args(annotation)) if _is_model(a)), None)
        meaning = _cell(_field_comment(cls, name)) or (_summary(nested) if nested is not None else "")
        yield f"{prefix}{wire}", _type_name(annotation), _default(field), meaning
        if nested is not None:
            yield from _model_rows(nested, f"{prefix}{wire}.")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def stack_keys() -> str:
    """The table of every key, top-level keys first as the program reads them, then each model's."""
    from dynamo_infra.stack_config import StackConfig

    keys = read_stack_keys()
    models = _object_models()
    fields = _comments(StackConfig)
    rows = ["| key | value | meaning |", "|---|---|---|"]
    for name, kind in keys.items():
        if kind == "object" and name not in models and name not in PLAIN_OBJECTS:
            raise ValueError(
                f"dynamo-infra:{name} is read as an object; tools/docs_hooks.py names no model for it"
            )
        meaning = _summary(models[name][0]) if name in models else PLAIN_OBJECTS.get(name, "")
        meaning = _cell(fields.get(_snake(name), "")) or meaning
        rows.append(f"| `dynamo-infra:{name}` | {kind} | {meaning} |")
    parts = ["\n".join(rows)]
    for name, (model, under) in models.items():
        if name not in keys:
            raise ValueError(
                f"tools/docs_hooks.py names dynamo-infra:{name}, which the program no longer reads"
            )
        table = [f"### `dynamo-infra:{name}`", "", _summary(model), ""]
        table += ["| key | type | default | meaning |", "|---|---|---|---|"]
        table += [f"| `{k}` | {t} | {d} | {m} |" for k, t, d, m in _model_rows(model, under)]
        parts.append("\n".join(table))
    return "\n\n".join(parts)


def _gate_comments() -> dict[str, str]:
    """The comment above each gate constant of `dynamo_infra/api/releases.py`."""
    from dynamo_infra.api import releases

    src = inspect.getsource(releases).splitlines()
    out = {}
    for node in ast.parse("\n".join(src)).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            above: list[str] = []
            i = node.lineno - 2
            while i >= 0 and src[i].startswith("#"):
                above.insert(0, src[i].lstrip("#").strip())
                i -= 1
            out[node.targets[0].id] = " ".join(above)
    return out


def gates_table() -> str:
    """Every gate of `releases.GATES`, in its order: constant, operator name, release, what, why."""
    from dynamo_infra.api import releases

    constants = {id(v): k for k, v in vars(releases).items() if isinstance(v, releases.Gate)}
    comments = _gate_comments()
    rows = ["| constant | gate | from | what changes | why this release |", "|---|---|---|---|---|"]
    for gate in releases.GATES:
        constant = constants[id(gate)]
        rows.append(f"| `{constant}` | `{gate.name}` | {gate.since} | {comments[constant]} | {gate.reason} |")
    return "\n".join(rows)


def releases_table() -> str:
    """The runtime releases the end-to-end harness runs, and the release of the parity pin."""
    from dynamo_infra.config import DEFAULT_OPERATOR_ORIGIN_VERSION
    from tools import dynamo_runtime

    rows = ["| runtime release | images it serves | extra pins | import stand-ins |", "|---|---|---|---|"]
    for version, release in dynamo_runtime.RELEASES.items():
        major, minor = release.series
        extra = ", ".join(f"`tools/{r}`" for r in release.requirements) or "—"
        standins = ", ".join(f"`{s}`" for s in release.standins) or "—"
        rows.append(f"| {version} | `{major}.{minor}.x` tags | {extra} | {standins} |")
    pin = (
        f"An image whose tag names no version runs on {dynamo_runtime.DYNAMO_VERSION}, the release of "
        f"the parity pin; the origin version stamped on a DGD that has none is "
        f"`{DEFAULT_OPERATOR_ORIGIN_VERSION}` (`cluster.operatorOriginVersion`)."
    )
    return "\n".join(rows) + "\n\n" + pin


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "stack-keys": stack_keys,
    "gates": gates_table,
    "releases": releases_table,
}


@cache
def generated(name: str) -> str:
    if name not in GENERATORS:
        raise ValueError(f"unknown generated part {name!r} (known: {', '.join(GENERATORS)})")
    return GENERATORS[name]()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Each `<!-- generated: NAME -->` line replaced by its part; the stack guide checked for every key."""
    if page.file.src_uri == STACK_GUIDE:
        missing = [
            k for k in read_stack_keys() if f"dynamo-infra:{k}" not in markdown and f"`{k}`" not in markdown
        ]
        if missing:
            raise ValueError(f"{STACK_GUIDE} does not name the stack keys {missing}")
    if page.file.src_uri == GATES_PAGE:
        from dynamo_infra.api import releases

        unported = [g.name for g in releases.GATES if f"| `{g.name}` |" not in markdown]
        if unported:
            raise ValueError(f"{GATES_PAGE}: no row says where the gates {unported} were ported from")
    return MARKER.sub(lambda m: generated(m.group(1)), markdown)
