"""`dynamo-infra unlock`: remove the lock a killed `pulumi up` left on a stack of a file backend,
only when the process that took it is gone from this host."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

NAME = "unlock"
HELP = "remove a stack's lock left by a killed `pulumi up` (file backend, its process gone)"
DESCRIPTION = """\
A `pulumi up` that is killed (SIGKILL, a lost CI runner) leaves its stack locked, and every later
`up` fails with `the stack is currently locked by 1 lock(s)`. For a file backend (`file://...`,
PULUMI_BACKEND_URL or --backend-url), this removes each lock of the stack whose process is gone from
this host, and names the holder of any other lock (still running, or taken on another host: if you
know it is gone, `pulumi cancel --stack STACK --yes` removes it). Exit 0 when the stack is left
unlocked, 1 when a lock remains.
"""

# Where a file backend keeps its locks, under the backend's folder.
LOCKS_DIR = Path(".pulumi") / "locks"
# The organization name of a file backend's project-scoped stacks.
DIY_ORGANIZATION = "organization"
# Pulumi's message for a locked stack; our tooling prints the unlock command when it sees it.
LOCKED_MESSAGE = "the stack is currently locked"
# The URL scheme of a file backend (`file://~/state`, `file:///abs/path`).
FILE_SCHEME = "file://"
# A live process holding a lock runs this program (a pid reused by another process holds nothing).
PULUMI_PROGRAM = "pulumi"
# /proc/<pid>/stat state of a process that exited and was not yet reaped.
ZOMBIE = "Z"


@dataclass(frozen=True)
class Lock:
    """One lock file and what Pulumi recorded in it."""

    path: Path
    pid: int
    username: str
    hostname: str
    timestamp: str

    def holder(self) -> str:
        return f"{self.username}@{self.hostname} (pid {self.pid}) since {self.timestamp}"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", required=True, help="the stack name (or organization/project/stack)")
    parser.add_argument("--backend-url", help="the file backend (default: PULUMI_BACKEND_URL)")
    parser.add_argument(
        "--project-dir", type=Path, default=Path(), help="the Pulumi project (default: the current directory)"
    )


def hint(stack: str) -> str:
    """What to tell a user whose `pulumi up` failed on the stack's lock."""
    return (
        f"the stack {stack} is locked by a `pulumi up` that did not finish (killed?). If none is running, "
        f"run: dynamo-infra unlock --stack {stack}   (then run `pulumi up` again)"
    )


def project_name(project_dir: Path) -> str:
    """The `name:` of the project's Pulumi.yaml."""
    import yaml

    path = project_dir / "Pulumi.yaml"
    try:
        return str(yaml.safe_load(path.read_text())["name"])
    except (OSError, KeyError, TypeError) as e:
        from dynamo_infra.errors import DynamoInfraError

        raise DynamoInfraError(f"{path}: no project name ({e})") from e


def lock_folder(backend_root: Path, stack: str, project: str) -> Path:
    """The folder of the stack's lock files (`organization/project/stack` or a bare stack name)."""
    parts = stack.split("/")
    if len(parts) == 3:
        return backend_root / LOCKS_DIR / Path(*parts)
    return backend_root / LOCKS_DIR / DIY_ORGANIZATION / project / stack


def read_locks(folder: Path) -> list[Lock]:
    """The lock files in `folder` (unreadable ones with pid 0: never removed)."""
    locks = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        locks.append(
            Lock(
                path,
                int(data.get("pid") or 0),
                str(data.get("username") or "?"),
                str(data.get("hostname") or "?"),
                str(data.get("timestamp") or "?"),
            )
        )
    return locks


def process_alive(pid: int) -> bool:
    """Whether `pid` is a live Pulumi process on this host. Its program name (`comm`) or command line
    names pulumi; a zombie is gone; an empty command line of a live process (a kernel thread, or a
    process read in the instant after its exec) counts as alive: the lock is then kept."""
    proc = Path(f"/proc/{pid}")
    try:
        state = (proc / "stat").read_text().rpartition(")")[2].split()[0]
        comm = (proc / "comm").read_text().strip()
        cmdline = (proc / "cmdline").read_bytes()
    except (OSError, IndexError):
        return False
    if state == ZOMBIE:
        return False
    return comm == PULUMI_PROGRAM or PULUMI_PROGRAM.encode() in cmdline or not cmdline


def stale(lock: Lock, host: str) -> bool:
    """Taken on this host by a process that is gone."""
    return lock.pid > 0 and lock.hostname == host and not process_alive(lock.pid)


def backend_root(url: str) -> Path | None:
    """The folder of a `file://` backend URL; None for other backends."""
    if not url.startswith(FILE_SCHEME):
        return None
    return Path(os.path.expanduser(url[len(FILE_SCHEME) :].split("?")[0]))


def run(args: argparse.Namespace) -> int:
    from dynamo_infra.cli.main import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK

    url = args.backend_url or os.environ.get("PULUMI_BACKEND_URL") or ""
    root = backend_root(url)
    if root is None:
        print(
            f"dynamo-infra unlock: {url or 'no backend URL'} is not a file backend: its locks are not on "
            f"this machine. If no `pulumi up` of {args.stack} is running, run: "
            f"pulumi cancel --stack {args.stack} --yes",
            file=sys.stderr,
        )
        return EXIT_ERROR
    folder = lock_folder(root, args.stack, project_name(args.project_dir))
    locks = read_locks(folder)
    if not locks:
        print(f"stack {args.stack} is not locked")
        return EXIT_OK
    host = socket.gethostname()
    held = 0
    for lock in locks:
        if stale(lock, host):
            lock.path.unlink(missing_ok=True)
            lock.path.with_name(lock.path.name + ".attrs").unlink(missing_ok=True)
            print(f"removed the lock of {lock.holder()}: that process is gone")
            continue
        held += 1
        where = "still running" if lock.hostname == host else f"taken on another host ({lock.hostname})"
        print(
            f"{args.stack} is locked by {lock.holder()}, {where}; if that `pulumi up` is gone, run: "
            f"pulumi cancel --stack {args.stack} --yes",
            file=sys.stderr,
        )
    return EXIT_FINDINGS if held else EXIT_OK
