"""The tests' waits (tests/wait.py): on a condition, failing with what was awaited."""

from __future__ import annotations

import itertools
import time

import pytest

from tests.wait import WaitTimeout, hold_for, wait_stable, wait_until


def test_wait_until_returns_the_first_truthy_value_checking_at_once() -> None:
    calls = itertools.count(1)
    started = time.monotonic()
    assert wait_until(lambda: next(calls) >= 3 and "ready", 5, 0.01) == "ready"
    assert next(calls) == 4 and time.monotonic() - started < 1
    assert wait_until(lambda: 7, 0) == 7  # a true condition needs no time at all


def test_wait_until_names_what_it_waited_for_and_the_last_value() -> None:
    with pytest.raises(WaitTimeout) as failed:
        wait_until(lambda: [], 0.05, 0.01, what="the pods", detail=lambda: "log tail")
    assert isinstance(failed.value, AssertionError)
    assert str(failed.value) == "timed out after 0.05s waiting for the pods (last: [])\nlog tail"


def test_wait_until_lets_the_conditions_errors_through() -> None:
    def broken() -> bool:
        raise KeyError("status")

    with pytest.raises(KeyError):
        wait_until(broken, 1, 0.01)


def test_wait_stable_returns_the_value_once_it_stopped_changing() -> None:
    values = iter([1, 2, 3])
    assert wait_stable(lambda: next(values, 3), 0.05, 5) == 3
    ticks = itertools.count()
    with pytest.raises(WaitTimeout, match="the DGD kept changing"):
        wait_stable(lambda: next(ticks), 0.05, 0.2, what="the DGD")


def test_a_fixed_wait_says_what_it_proves() -> None:
    with pytest.raises(AssertionError, match="what the window proves"):
        hold_for(0, "")
    hold_for(0, "nothing happens")
