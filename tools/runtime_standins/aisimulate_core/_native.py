"""Stand-in for `aisimulate_core._native`: every name is an absent class (see the package docstring)."""

from __future__ import annotations

from . import absent


def __getattr__(name: str) -> type:
    return absent(__name__, name)
