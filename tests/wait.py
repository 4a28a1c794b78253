"""Waiting in tests: on a condition (`wait_until`), never a fixed time, except where the wait proves
that something does NOT happen within a window (`hold_for`, named so at each call)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# How often a condition is checked unless the caller says otherwise.
INTERVAL_S = 0.5
# How much of the last value a timeout message shows.
LAST_CHARS = 300


class WaitTimeout(AssertionError):
    """A condition a test waited for did not hold in time (a test failure, as an assert is)."""


def wait_until(
    predicate: Callable[[], T | None],
    timeout: float,
    interval: float = INTERVAL_S,
    *,
    what: str = "the condition",
    detail: Callable[[], str] | None = None,
) -> T:
    """The first truthy value of `predicate`, checked every `interval` seconds (at once, first) until
    `timeout` seconds passed; on timeout, raises `WaitTimeout` naming `what`, the last value seen and
    `detail()` (a log tail, say). Exceptions of `predicate` propagate."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() >= deadline:
            extra = detail() if detail is not None else ""
            raise WaitTimeout(
                f"timed out after {timeout:g}s waiting for {what} (last: {repr(got)[:LAST_CHARS]})"
                + (f"\n{extra}" if extra else "")
            )
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))


def hold_for(seconds: float, why: str) -> None:
    """A deliberate fixed wait: the window in which something must NOT happen (a write, a scale, a
    model showing up), checked by the caller afterwards. `why` says what the window proves."""
    assert why, "say what the window proves"
    time.sleep(seconds)


def wait_stable(read: Callable[[], T], quiet: float, timeout: float, *, what: str = "the value") -> T:
    """The value of `read` once it stayed the same for `quiet` seconds (checked every tenth of that),
    within `timeout` seconds; raises `WaitTimeout` if it kept changing."""
    deadline = time.monotonic() + timeout
    last, since = read(), time.monotonic()
    while True:
        time.sleep(quiet / 10)
        now = read()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"{what} kept changing for {timeout:g}s (last: {repr(now)[:LAST_CHARS]})")
