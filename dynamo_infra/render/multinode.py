"""Multinode building blocks shared by the backends and orchestrators: pod roles, the orchestrator's
addressing (leader host, node rank), flag injection into launch commands, GPU counting."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from dynamo_infra.api.manifest import Manifest

# A command whose first word runs a Python interpreter gets flags appended to its args.
_PYTHON_COMMAND = re.compile(r"^(.*/)?(python\d*(\.\d+)*)$")
# Characters that make a token need double quotes inside `sh -c`.
_SHELL_SPECIAL = set(" \t\n'\"\\{}[]$`!")
# Tokens literal to the shell in every context (no quoting needed).
_SHELL_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")
# Whitespace as Go's regexp `\s` and strings.Fields see it.
_WS = "[\t\n\f\r ]"


class Role(StrEnum):
    """The part a pod plays in its component."""

    MAIN = "main"
    LEADER = "leader"
    WORKER = "worker"
    GMS = "gms"


class Deployer(Protocol):
    """How an orchestrator addresses the pods of one multinode group."""

    def leader_hostname(self, component: str) -> str: ...

    def node_rank(self) -> tuple[str, bool]:
        """The pod's rank expression, and whether a shell must evaluate it."""
        ...

    def pod_rank(self) -> str:
        """This pod's absolute rank in the group (the leader's is 0), in Kubernetes `$(VAR)` syntax."""
        ...

    def needs_dns_wait(self) -> bool: ...

    def host_names(self, component: str, nodes: int) -> list[str]: ...


# Env LWS sets in every pod: the leader's address and this pod's index in its group.
LWS_LEADER_ADDRESS = "$(LWS_LEADER_ADDRESS)"
LWS_WORKER_INDEX = "$(LWS_WORKER_INDEX)"


class LWSDeployer:
    """Leader address and rank from the env LWS injects; worker hosts derived from the leader's."""

    def leader_hostname(self, component: str) -> str:
        return LWS_LEADER_ADDRESS

    def node_rank(self) -> tuple[str, bool]:
        return LWS_WORKER_INDEX, False

    def pod_rank(self) -> str:
        return LWS_WORKER_INDEX

    def needs_dns_wait(self) -> bool:
        return True

    def host_names(self, component: str, nodes: int) -> list[str]:
        workers = [f"$(echo \"$LWS_LEADER_ADDRESS\" | sed 's/\\./-{i}\\./')" for i in range(1, nodes)]
        return [LWS_LEADER_ADDRESS, *workers]


# LWS addressing (the DCD controller's for every pod, Deployment or LeaderWorkerSet).
LWS_DEPLOYER = LWSDeployer()


@dataclass(frozen=True)
class Placement:
    """Where a pod spec goes: its role, the group size and the orchestrator's addressing."""

    deployer: Deployer
    role: Role = Role.MAIN
    nodes: int = 1
    # GPUs of the main container as the user asked for them (requests, else limits).
    gpus: int = 0
    # Parent graph (names the wait-for-leader ConfigMap).
    graph: str = ""

    @property
    def multinode(self) -> bool:
        return self.nodes > 1


def is_python_command(command: str) -> bool:
    return bool(_PYTHON_COMMAND.match(command))


def shell_quote(token: str) -> str:
    """One token for a generated `sh -c` line: double-quoted with escapes when it has specials."""
    if not any(ch in _SHELL_SPECIAL for ch in token):
        return token
    escaped = token.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")
    escaped = escaped.replace("'", "'\"'\"'")
    return f'"{escaped}"'


def shell_quote_posix(token: str) -> str:
    """Exactly one argv token through `sh -c` (single quotes unless shell-neutral)."""
    if _SHELL_SAFE.match(token):
        return token
    return "'" + token.replace("'", "'\\''") + "'"


def fields(tokens: list[str]) -> list[str]:
    """Every token split on whitespace (Go's strings.Fields over each)."""
    return [part for token in tokens for part in token.split()]


def has_arg(tokens: list[str], flag: str, value: str) -> bool:
    """`flag value`, `flag=value` inside any token, or `flag` followed by `value`."""
    joined, equals = f"{flag} {value}", f"{flag}={value}"
    for i, token in enumerate(tokens):
        if joined in token or equals in token:
            return True
        if token == flag and i + 1 < len(tokens) and tokens[i + 1] == value:
            return True
    return False


def command_line_has_arg(container: Manifest, flag: str, value: str) -> bool:
    line = [*(container.get("command") or []), *(container.get("args") or [])]
    return has_arg(line, flag, value) or has_arg(fields(line), flag, value)


def _inject_into_arg(arg: str, flags: str, framework: str) -> str:
    """Insert flags after the first `python… <framework>…` word run, before any shell operator."""
    pattern = re.compile(rf"(python[0-9.]*{_WS}+[^|&;]*{re.escape(framework)}[^|&;]*?)({_WS}|\Z|[|&;])")
    return pattern.sub(lambda m: f"{m.group(1)} {flags}{m.group(2)}", arg)


def inject_flags(container: Manifest, flags: str, needs_shell: bool, framework: str) -> Manifest:
    """The container with `flags` added to its launch command, as the operator injects them."""
    command = list(container.get("command") or [])
    args = list(container.get("args") or [])
    if command and is_python_command(command[0]):
        if not needs_shell:
            return {**container, "args": [*args, *flags.split()]}
        line = " ".join(shell_quote(t) for t in command)
        if args:
            line = f"{line} {' '.join(shell_quote(a) for a in args)}"
        return {**container, "command": ["sh", "-c"], "args": [f"exec {line} {flags}"]}
    for i, arg in enumerate(args):
        injected = _inject_into_arg(arg, flags, framework)
        if injected != arg:
            return {**container, "args": [*args[:i], injected, *args[i + 1 :]]}
    return container


def is_gpu_resource(name: str) -> bool:
    """`nvidia.com/gpu`, `gpu.intel.com/...`-style names and MIG slices count as GPUs."""
    segment = name.lower().rsplit("/", 1)[-1]
    return segment == "gpu" or segment.startswith("gpu.") or segment.startswith("mig-")


def _quantity(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def gpu_count(resources: Manifest | None) -> int:
    """GPUs of a container's resources: requests first, then limits (first GPU-like name)."""
    for section in ("requests", "limits"):
        for name, value in sorted(((resources or {}).get(section) or {}).items()):
            if is_gpu_resource(name):
                return _quantity(value)
    return 0


def gpu_limit(resources: Manifest | None, name: str = "nvidia.com/gpu") -> int:
    """The container's `limits[name]`, else `requests[name]`, as an integer (0 when unset)."""
    for section in ("limits", "requests"):
        value = ((resources or {}).get(section) or {}).get(name)
        if value is not None:
            return _quantity(value)
    return 0


def without_probes(container: Manifest) -> Manifest:
    return {
        k: v for k, v in container.items() if k not in ("livenessProbe", "readinessProbe", "startupProbe")
    }


def append_env(container: Manifest, *env: Manifest) -> Manifest:
    return {**container, "env": [*(container.get("env") or []), *env]}


def field_ref_env(name: str, path: str) -> Manifest:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def with_empty_resources(pod: Manifest) -> Manifest:
    """Containers as Go serialises them (`resources: {}` always present).

    Pod specs embedded in custom resources are stored as sent (no core defaulting), so the
    operator's objects carry this empty mapping where ours would otherwise omit it.
    """
    out = dict(pod)
    for key in ("initContainers", "containers"):
        if key in out:
            out[key] = [{**c, "resources": c.get("resources") or {}} for c in out[key]]
    return out
