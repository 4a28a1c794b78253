"""Shared fixtures: paths of the repository and the shared corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"the shared corpus is missing at {CORPUS}")
    return CORPUS


@pytest.fixture()
def event_loop_for_mocks() -> None:
    """Pulumi mocks need a current asyncio loop; earlier tests (Automation API) may leave none."""
    import asyncio

    asyncio.set_event_loop(asyncio.new_event_loop())
