"""The end-of-run check finds the processes a run started and left running, and only those."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests import leftovers


def _sleeper(env: dict[str, str]) -> subprocess.Popen[bytes]:
    # Its own session: reparented to init once this test lets go of it, as an orphaned plugin is.
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], env=env, start_new_session=True
    )


def test_a_marked_process_left_running_is_found_and_killed() -> None:
    value = "unit-test-run"
    marked = _sleeper({**os.environ, leftovers.MARKER: value})
    other = _sleeper({**os.environ, leftovers.MARKER: "another-run"})
    try:
        found = leftovers.leftovers(value, grace_s=0.5)
        assert [p.pid for p in found] == [marked.pid]
        assert "time.sleep(60)" in found[0].command
        assert marked.wait(timeout=10) == -9  # killed
        assert other.poll() is None  # another run's process is not ours
    finally:
        for p in (marked, other):
            p.kill()
            p.wait()


def test_a_process_that_exits_within_the_grace_period_is_not_a_leftover() -> None:
    value = "unit-test-grace"
    quick = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(0.3)"], env={**os.environ, leftovers.MARKER: value}
    )
    start = time.monotonic()
    assert leftovers.leftovers(value, grace_s=5) == []
    assert time.monotonic() - start < 5
    quick.wait()


def test_the_run_marks_its_environment() -> None:
    assert os.environ.get(leftovers.MARKER)
