"""`dynamo-infra unlock`: a file backend's stale lock is removed only when its process is gone from
this host; any other lock is named with what to run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dynamo_infra.cli import main as cli
from dynamo_infra.cli import unlock

PROJECT = "dynamo-infra"


@pytest.fixture()
def backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    monkeypatch.chdir(tmp_path / "project")
    monkeypatch.setenv("PULUMI_BACKEND_URL", f"file://{tmp_path / 'state'}")
    return tmp_path / "state"


def write_lock(backend: Path, stack: str, pid: int, host: str) -> Path:
    """A lock file as Pulumi 3.259's file backend writes it."""
    folder = backend / ".pulumi" / "locks" / "organization" / PROJECT / stack
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "d3513855-b504-4a02-b8e9-9a67b9e6c2de.json"
    data = {"pid": pid, "username": "root", "hostname": host, "timestamp": "2026-11-23T20:22:27Z"}
    path.write_text(json.dumps(data))
    path.with_name(path.name + ".attrs").write_text("{}")
    return path


def gone_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_lock_whose_process_is_gone_is_removed(backend: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = write_lock(backend, "prod", gone_pid(), socket.gethostname())
    assert cli.main(["unlock", "--stack", "prod"]) == cli.EXIT_OK
    assert not lock.exists() and not lock.with_name(lock.name + ".attrs").exists()
    assert "removed the lock of root@" in capsys.readouterr().out
    assert cli.main(["unlock", "--stack", "prod"]) == cli.EXIT_OK
    assert "stack prod is not locked" in capsys.readouterr().out


def pulumi_like(tmp_path: Path, code: str) -> subprocess.Popen[bytes]:
    """A process whose program is named `pulumi`, as a running `pulumi up` is."""
    program = tmp_path / "bin" / "pulumi"
    program.parent.mkdir(exist_ok=True)
    program.symlink_to(sys.executable)
    return subprocess.Popen([str(program), "-c", code])


def test_a_lock_of_a_running_pulumi_is_kept(
    backend: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    holder = pulumi_like(tmp_path, "import time; time.sleep(60)")
    try:
        lock = write_lock(backend, "prod", holder.pid, socket.gethostname())
        assert cli.main(["unlock", "--stack", "prod"]) == cli.EXIT_FINDINGS
    finally:
        holder.kill()
        holder.wait()
    assert lock.exists()
    err = capsys.readouterr().err
    assert f"(pid {holder.pid})" in err and "still running" in err


def test_a_pulumi_that_exited_and_was_not_reaped_holds_nothing(backend: Path, tmp_path: Path) -> None:
    """A killed `pulumi up` whose parent has not waited for it yet (a zombie) is gone."""
    holder = pulumi_like(tmp_path, "pass")
    try:
        while Path(f"/proc/{holder.pid}/stat").read_text().rpartition(")")[2].split()[0] != unlock.ZOMBIE:
            time.sleep(0.01)
        lock = write_lock(backend, "prod", holder.pid, socket.gethostname())
        assert cli.main(["unlock", "--stack", "prod"]) == cli.EXIT_OK
        assert not lock.exists()
    finally:
        holder.wait()


def test_a_reused_pid_holds_nothing(backend: Path) -> None:
    """The pid now belongs to a process that is not Pulumi (this test): the lock is stale."""
    lock = write_lock(backend, "prod", os.getpid(), socket.gethostname())
    assert cli.main(["unlock", "--stack", "prod"]) == cli.EXIT_OK
    assert not lock.exists()


def test_a_lock_from_another_host_names_its_holder_and_pulumi_cancel(
    backend: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = write_lock(backend, "prod", 4242, "ci-runner-7")
    assert cli.main(["unlock", "--stack", "organization/dynamo-infra/prod"]) == cli.EXIT_FINDINGS
    assert lock.exists()
    err = capsys.readouterr().err
    assert "root@ci-runner-7 (pid 4242)" in err and "another host" in err
    assert "pulumi cancel --stack organization/dynamo-infra/prod --yes" in err


def test_other_backends_are_told_to_use_pulumi_cancel(
    backend: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["unlock", "--stack", "prod", "--backend-url", "s3://bucket/state"]) == cli.EXIT_ERROR
    assert "pulumi cancel --stack prod --yes" in capsys.readouterr().err


def test_the_hint_says_what_to_run() -> None:
    assert "run: dynamo-infra unlock --stack prod" in unlock.hint("prod")


def test_backend_root_of_file_urls() -> None:
    assert unlock.backend_root("file:///srv/state?no_tmp_dir=true") == Path("/srv/state")
    assert unlock.backend_root("file://~/state") == Path.home() / "state"
    assert unlock.backend_root("s3://bucket") is None
