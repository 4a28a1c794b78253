"""Kubeconfig files as kubectl reads them: relative paths against the file's folder, and a `KUBECONFIG`
list merged into one configuration.

The rules are client-go's (k8s.io/client-go/tools/clientcmd/loader.go: `ClientConfigLoadingRules.Load`,
`ResolveLocalPaths`, `GetAuthInfoFileReferences`): the list is split at os.pathsep, empty elements and
repeated files are dropped, missing files are skipped (a file that exists but cannot be read or parsed
is an error); clusters, users and contexts are merged by name, the first file to name one giving all of
it; the first file to set `current-context` sets it; a file path in a cluster or user entry is relative
to the folder of the file that holds it, as is an exec plugin's command with a path separator.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from dynamo_infra.kube.errors import KubeconfigError

# Kubeconfig fields holding a file path, by section.
PATH_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}
# The sections merged by entry name.
NAMED_SECTIONS = ("clusters", "users", "contexts")


def make_paths_absolute(cfg: dict[str, Any], base_dir: Path) -> bool:
    """Make the relative paths of a kubeconfig's entries (files, exec commands with a path separator)
    absolute against `base_dir`, in place; whether any was."""
    changed = False
    for section, keys in PATH_FIELDS.items():
        for item in cfg.get(section) or []:
            entry = item.get(section[:-1]) if isinstance(item, dict) else None
            if not isinstance(entry, dict):
                continue
            exec_config = entry.get("exec") if section == "users" else None
            fields = [(entry, k) for k in keys]
            if isinstance(exec_config, dict) and os.sep in str(exec_config.get("command", "")):
                fields.append((exec_config, "command"))
            for holder, k in fields:
                value = holder.get(k)
                if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
                    holder[k] = str(base_dir / value)
                    changed = True
    return changed


def with_absolute_paths(text: str, base_dir: Path) -> str:
    """The kubeconfig text of a file in `base_dir` with its relative paths made absolute, so its content
    reads the same from anywhere; unchanged when it has none (or cannot be parsed: `connection.parse`
    says why)."""
    try:
        cfg = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if not isinstance(cfg, dict):
        return text
    return yaml.safe_dump(cfg, sort_keys=False) if make_paths_absolute(cfg, base_dir) else text


# A stack configuration key naming a kubeconfig file (`kubeconfigPath`, `graphKubeconfigPath`) ends so;
# any other kubeconfig key holds the content.
PATH_KEY_SUFFIX = "Path"


def from_stack_value(key: str, value: str) -> str:
    """The kubeconfig a stack configuration value gives: the value itself, or, for a key ending in
    PATH_KEY_SUFFIX, the content of the file it names (`~` expanded, relative to the working directory)
    with its relative paths made absolute against the file's folder."""
    if not key.endswith(PATH_KEY_SUFFIX):
        return value
    path = Path(value).expanduser()
    if not path.exists():
        raise KubeconfigError(f"{key}: {path} does not exist (is the cluster up?)")
    return with_absolute_paths(path.read_text(), path.parent.resolve())


def read_file(path: Path) -> dict[str, Any] | None:
    """One kubeconfig file with its paths made absolute; None when it does not exist."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {e.strerror}") from e
    try:
        cfg = yaml.safe_load(text)
    except yaml.YAMLError:
        # Not chained: the parser's message quotes the kubeconfig, credentials included.
        raise KubeconfigError(f"kubeconfig {path} is not valid YAML") from None
    if cfg is None:
        return {}
    if not isinstance(cfg, dict):
        raise KubeconfigError(f"kubeconfig {path} must be a mapping")
    make_paths_absolute(cfg, path.parent.resolve())
    return cfg


def files(value: str) -> list[Path]:
    """The files of a `KUBECONFIG` value, in order, without empty elements or repeats."""
    out: list[Path] = []
    for element in value.split(os.pathsep):
        if element and Path(element).expanduser() not in out:
            out.append(Path(element).expanduser())
    return out


def merge(paths: list[Path]) -> dict[str, Any] | None:
    """The kubeconfig the files make together (paths absolute); None when none of them exists."""
    merged: dict[str, Any] = {section: [] for section in NAMED_SECTIONS}
    named: dict[str, set[str]] = {section: set() for section in NAMED_SECTIONS}
    current = ""
    found = False
    for path in paths:
        cfg = read_file(path)
        if cfg is None:
            continue
        found = True
        current = current or str(cfg.get("current-context") or "")
        for section in NAMED_SECTIONS:
            for item in cfg.get(section) or []:
                name = item.get("name") if isinstance(item, dict) else None
                if isinstance(name, str) and name not in named[section]:
                    named[section].add(name)
                    merged[section].append(item)
    if not found:
        return None
    if current:
        merged["current-context"] = current
    return merged


def merged_text(value: str) -> str:
    """A `KUBECONFIG` value's files merged (`merge`), as kubeconfig text; "" when none of them exists."""
    merged = merge(files(value))
    return yaml.safe_dump(merged, sort_keys=False) if merged is not None else ""
