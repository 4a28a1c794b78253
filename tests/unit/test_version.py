"""The package's version comes from its distribution's metadata, in one place (dynamo_infra.__version__)."""

from __future__ import annotations

import importlib.metadata
import tomllib

import pytest

import dynamo_infra
from dynamo_infra.agent import app, lora
from dynamo_infra.kube import client as kube
from tests.conftest import REPO
from tools import serving


def test_the_version_is_the_installed_distributions() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == dynamo_infra.DISTRIBUTION
    assert dynamo_infra.__version__ == importlib.metadata.version(project["name"]) == project["version"]


def test_every_user_agent_carries_it() -> None:
    agents = [kube.USER_AGENT, kube.PROGRAM_USER_AGENT, app.USER_AGENT, lora.USER_AGENT]
    agents.append(serving.HARNESS_USER_AGENT)
    assert [a.rsplit("/", 1)[1] for a in agents] == [dynamo_infra.__version__] * len(agents)
    assert len(set(agents)) == len(agents)


def test_a_source_tree_that_is_not_installed_has_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert dynamo_infra.version.__wrapped__() == dynamo_infra.UNINSTALLED_VERSION == "0+unknown"
