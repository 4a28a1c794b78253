"""What tools/serving.py prints of the harness: one short block of releases and substitutions, and
each pod's own command on one line (the harness's wrapper stays in the process's log)."""

from __future__ import annotations

from pathlib import Path

from tools.podprocs import SUBSTITUTIONS, PodProcess, with_var_run
from tools.serving import LINE_WIDTH, harness_lines, pod_lines


def test_the_release_and_the_substitutions_are_one_short_block() -> None:
    root = Path("/cache/dynamo-runtime-1.6.1-abc")
    lines = harness_lines([("1.6.1", root, 41.0)])
    assert lines[0] == f"Dynamo runtime 1.6.1 (installed in 41.0s): {root}"
    assert len(lines) <= 5 and all(len(line) <= LINE_WIDTH for line in lines[1:]), lines
    # Every name, whole, in order (lines break between names only).
    assert ", ".join(line.strip() for line in lines[2:]).split(", ") == [s.name for s in SUBSTITUTIONS]
    assert all("\n" not in s.name and len(s.name) < 30 for s in SUBSTITUTIONS)


def test_a_pod_shows_its_own_command_not_the_wrapper(tmp_path: Path) -> None:
    command = [
        "python3",
        "-m",
        "dynamo.mocker",
        "--model-path",
        "/models/tiny-chat",
        "--model-name",
        "tiny-chat",
    ]
    wrapped = with_var_run(command, {"/var/run/secrets/kubernetes.io/serviceaccount": tmp_path})
    assert wrapped[0] == "unshare"
    procs = [
        PodProcess(pod, "u", "c", tmp_path / pod, argv=wrapped, env={}, ports={}, command=command)
        for pod in ("g-worker-1", "g-frontend-1")
    ]
    lines = pod_lines(procs, Path(".local/pods"))
    assert lines == [
        "  pod g-frontend-1: python3 -m dynamo.mocker --model-path /models/tiny-chat --model-name tiny-chat",
        "  pod g-worker-1: python3 -m dynamo.mocker --model-path /models/tiny-chat --model-name tiny-chat",
        "  logs: .local/pods/<pod>/main.log (the exact argv and env: command.json beside it)",
    ]
