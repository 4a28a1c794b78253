"""Stand-in for NVIDIA's `aisimulate_core` (PyPI `aisimulate`, only on NVIDIA's own index).

Dynamo 1.6's planner imports it at module load (`dynamo/planner/core/perf_model/ais_adapter.py`,
`engine_query.py`) but only calls into it for its AISimulate performance model (the SLA
optimization target, `ais_perf_model`). Importing works; any use of a name it stands for raises
`StandInCalled`, a BaseException so that no `except Exception` (nor the planner's
`except (ImportError, RuntimeError)` fallbacks) hides it, after writing MARKER to stderr.
Installed by tools/dynamo_runtime.py into the 1.6 runtime virtualenv; a listed substitution of the
harness (tools/podprocs.py SUBSTITUTIONS).
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

# The line a process's log shows when anything called into the stand-in.
MARKER = "aisimulate_core stand-in called"


class StandInCalled(BaseException):
    """Something called into the aisimulate_core stand-in (not installable here)."""


def called(what: str) -> NoReturn:
    message = f"{MARKER}: {what} (aisimulate is not installed; the harness runs no AISimulate model)"
    print(message, file=sys.stderr, flush=True)
    raise StandInCalled(message)


class _Absent(type):
    """A class standing for one of aisimulate_core's names: instantiating it or reading from it raises."""

    def __call__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        called(f"{cls.__qualname__}(...)")

    def __getattr__(cls, name: str) -> NoReturn:
        called(f"{cls.__qualname__}.{name}")


def absent(module: str, name: str) -> type:
    """The stand-in for `module.name`."""
    if name.startswith("__"):
        raise AttributeError(name)
    return _Absent(name, (), {"__module__": module, "__qualname__": f"{module}.{name}"})


def __getattr__(name: str) -> type:
    return absent(__name__, name)
