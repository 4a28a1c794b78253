"""The cyclic garbage collector held off while a graph renders.

A render allocates tens of thousands of dicts, lists and strings that are freed by reference counting
(they hold no cycles); each allocation burst would otherwise trigger generation-0 collections, which
promote the survivors and, every few of them, walk every long-lived object of the process again (a
fresh process rendering a 1,000-component fleet spent ~15% of its time there). Collection resumes as
the render returns; nested and concurrent renders re-enable it only when the outermost one ends.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_lock = threading.Lock()
# Renders in progress, and whether the collector was enabled when the first of them began.
_depth = 0
_was_enabled = False


def _hold() -> None:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1


def _release() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0 and _was_enabled:
            gc.enable()


def without_cycle_collection(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn` with the cyclic collector disabled while it runs (re-enabled after, if it was)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        _hold()
        try:
            return fn(*args, **kwargs)
        finally:
            _release()

    return run
