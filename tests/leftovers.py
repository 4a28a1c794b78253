"""No process the test run starts may outlive it.

Every process started by the run inherits a marker in its environment (set when the run starts); at
the end, any process still carrying it — a Pulumi plugin, a language host, a control-plane binary,
the Dynamo runtime, reparented or not — is a leftover: listed, killed, and the run fails.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

# The environment variable that marks the run's processes.
MARKER = "DYNAMO_INFRA_TEST_RUN"
# How long processes still shutting down (a plugin the CLI has just told to stop) get to exit.
GRACE_S = 15.0
# How often they are looked for meanwhile.
POLL_S = 0.5
PROC = Path("/proc")


@dataclass(frozen=True)
class Leftover:
    pid: int
    command: str


def mark_run() -> str:
    """Mark this process's environment (inherited by all it starts); the run's marker value."""
    value = os.environ.get(MARKER) or uuid.uuid4().hex
    os.environ[MARKER] = value
    return value


def _marked(pid: int, needle: bytes) -> bool:
    try:
        return needle in (PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return False  # gone, a zombie, or not ours to read


def _command(pid: int) -> str:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(a.decode(errors="replace") for a in raw.split(b"\0") if a)[:300]


def marked_processes(value: str, own: frozenset[int]) -> list[Leftover]:
    """Live processes carrying the marker, but for `own` (this process and its parents)."""
    needle = f"{MARKER}={value}".encode()
    pids = [int(p.name) for p in PROC.iterdir() if p.name.isdigit()]
    return [Leftover(pid, _command(pid)) for pid in pids if pid not in own and _marked(pid, needle)]


def _ancestors() -> frozenset[int]:
    pids, pid = {os.getpid()}, os.getppid()
    while pid > 1:
        pids.add(pid)
        try:
            stat = (PROC / str(pid) / "stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return frozenset(pids)


def leftovers(value: str, grace_s: float = GRACE_S) -> list[Leftover]:
    """The run's processes still alive after `grace_s`; each is killed before this returns."""
    own = _ancestors()
    deadline = time.monotonic() + grace_s
    found = marked_processes(value, own)
    while found and time.monotonic() < deadline:
        time.sleep(POLL_S)
        found = marked_processes(value, own)
    for p in found:
        with contextlib.suppress(OSError):
            os.kill(p.pid, signal.SIGKILL)
    return found
