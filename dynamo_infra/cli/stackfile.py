"""A stack read from its files, without Pulumi: `Pulumi.yaml` and `Pulumi.<stack>.yaml`.

`read_stack` finds the stack file (a stack name, looked up in the project's `stackConfigDir`, or a
path) and returns its `dynamo-infra:*` keys as a ConfigReader that `StackConfig.from_config` accepts.
Relative paths (`graphs`, `kubeconfigPath`) resolve against the project directory, as the program's
working directory is. Secure values (`{secure: ...}`) cannot be decrypted here: they read as absent
and are listed in `StackFile.secure_keys`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.stack_config import CONFIG_NAMESPACE

# The project file Pulumi reads.
PROJECT_FILE = "Pulumi.yaml"
# Keys holding paths relative to the project directory.
PATH_KEYS = ("kubeconfigPath",)
# The key holding a list of graph paths relative to the project directory.
GRAPHS_KEY = "graphs"


class StackFileError(DynamoInfraError):
    """A stack or project file that cannot be found or read."""


@dataclass(frozen=True)
class StackFile:
    """One stack's `dynamo-infra:*` values, as `pulumi.Config("dynamo-infra")` would give them."""

    project: str
    stack: str
    project_dir: Path
    path: Path
    values: dict[str, Any]
    # Keys whose values are encrypted (`{secure: ...}`): not readable without Pulumi's secrets provider.
    secure_keys: tuple[str, ...] = field(default=())

    @property
    def owner(self) -> str:
        """`<project>/<stack>`, as the program names the stack that owns what it creates."""
        return f"{self.project}/{self.stack}"

    def with_namespace(self, namespace: str | None) -> StackFile:
        """The stack with `cluster.namespace` replaced (None: as it is)."""
        if not namespace:
            return self
        cluster = self.values.get("cluster")
        values = {
            **self.values,
            "cluster": {**(cluster if isinstance(cluster, dict) else {}), "namespace": namespace},
        }
        return replace(self, values=values)

    def with_values(self, values: dict[str, Any]) -> StackFile:
        """The stack with these values instead of its own."""
        return replace(self, values=values)

    def get(self, key: str) -> str | None:
        value = self.values.get(key)
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        return value if isinstance(value, str) else json.dumps(value)

    def get_bool(self, key: str) -> bool | None:
        value = self.values.get(key)
        if value is None or isinstance(value, bool):
            return value
        text = str(value).lower()
        if text not in ("true", "false"):
            raise StackFileError(f"{CONFIG_NAMESPACE}:{key}: must be true or false (got {value!r})")
        return text == "true"

    def get_object(self, key: str) -> Any:
        """The value; a string holds JSON (as `pulumi config set` and the Automation API store objects)."""
        value = self.values.get(key)
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except ValueError:
            raise StackFileError(f"{CONFIG_NAMESPACE}:{key}: not a JSON or YAML object: {value!r}") from None


def _load(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise StackFileError(f"{path}: cannot read: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise StackFileError(f"{path}: invalid YAML: {e}") from None


def _project(project_dir: Path) -> dict[str, Any]:
    path = project_dir / PROJECT_FILE
    if not path.is_file():
        raise StackFileError(f"{path} does not exist (give the project directory with --project-dir)")
    data = _load(path)
    if not isinstance(data, dict) or not data.get("name"):
        raise StackFileError(f"{path}: not a Pulumi project file (no name)")
    return data


def _project_dir_of(stack_file: Path) -> Path:
    """The nearest directory above a stack file holding a Pulumi.yaml."""
    for parent in stack_file.resolve().parents:
        if (parent / PROJECT_FILE).is_file():
            return parent
    raise StackFileError(f"{stack_file}: no {PROJECT_FILE} above it (give --project-dir)")


def stack_path(ref: str, project_dir: Path | None = None) -> tuple[Path, Path]:
    """(stack file, project directory) of a stack name or a `Pulumi.<stack>.yaml` path."""
    candidate = Path(ref)
    if candidate.suffix in (".yaml", ".yml") or "/" in ref:
        if not candidate.is_file():
            raise StackFileError(f"{ref}: no such stack file")
        return candidate, (project_dir or _project_dir_of(candidate))
    root = project_dir or Path.cwd()
    project = _project(root)
    path = root / str(project.get("stackConfigDir") or ".") / f"Pulumi.{ref}.yaml"
    if not path.is_file():
        raise StackFileError(f"stack {ref}: {path} does not exist")
    return path, root


def _values(config: Any, where: Path) -> tuple[dict[str, Any], list[str]]:
    """The `dynamo-infra:*` values of a `config:` block (project defaults as `{default: ...}` or plain)."""
    if config is None:
        return {}, []
    if not isinstance(config, dict):
        raise StackFileError(f"{where}: config must be a mapping")
    values: dict[str, Any] = {}
    secure: list[str] = []
    prefix = f"{CONFIG_NAMESPACE}:"
    for full, value in config.items():
        if not str(full).startswith(prefix):
            continue
        name = str(full)[len(prefix) :]
        if isinstance(value, dict) and set(value) == {"secure"}:
            secure.append(str(full))
            continue
        if isinstance(value, dict) and "default" in value and where.name == PROJECT_FILE:
            value = value["default"]
        values[name] = value
    return values, secure


def _resolved(values: dict[str, Any], project_dir: Path) -> dict[str, Any]:
    """Relative graph and kubeconfig paths made absolute against the project directory."""
    out = dict(values)
    for name in PATH_KEYS:
        if isinstance(out.get(name), str) and not Path(out[name]).expanduser().is_absolute():
            out[name] = str(project_dir / out[name])
    graphs = out.get(GRAPHS_KEY)
    if isinstance(graphs, list):
        out[GRAPHS_KEY] = [
            str(project_dir / g) if isinstance(g, str) and not Path(g).is_absolute() else g for g in graphs
        ]
    return out


def read_stack(ref: str, project_dir: Path | None = None) -> StackFile:
    """The stack `ref` (a name or a stack file path) with the project's defaults under its own values."""
    path, root = stack_path(ref, project_dir)
    project = _project(root)
    defaults, secure_defaults = _values(project.get("config"), root / PROJECT_FILE)
    data = _load(path)
    if data is not None and not isinstance(data, dict):
        raise StackFileError(f"{path}: not a stack file (a mapping with config:)")
    own, secure = _values((data or {}).get("config"), path)
    name = path.name
    stack = name[len("Pulumi.") : -len(path.suffix)] if name.startswith("Pulumi.") else path.stem
    values = {**defaults, **own}
    secure_keys = sorted({*secure_defaults, *secure} - {f"{CONFIG_NAMESPACE}:{k}" for k in own})
    return StackFile(
        str(project["name"]), stack, root.resolve(), path, _resolved(values, root), tuple(secure_keys)
    )
