"""Unit fixtures: Pulumi mocks recording every resource a component declares."""

from __future__ import annotations

import sys
from typing import Any

import pulumi
import pytest


class Mocks(pulumi.runtime.Mocks):
    """Resources echo their inputs; our dynamic workloads also report a ready status."""

    def __init__(self) -> None:
        self.resources: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.resources.append(args)
        outs = dict(args.inputs)
        if "objects" in outs:
            outs["status"] = {"ready": True, "reason": "DeploymentReady", "replicas": 1, "readyReplicas": 1}
        return f"{args.name}-id", outs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


@pytest.fixture()
def mocks(event_loop_for_mocks: None) -> Mocks:
    m = Mocks()
    pulumi.runtime.set_mocks(m, preview=False)
    return m


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The number of property cases run (tests/unit/test_names_property.py), when it ran."""
    module = sys.modules.get("tests.unit.test_names_property")
    cases = getattr(module, "CASES", None)
    if cases:
        terminalreporter.write_line(
            "name properties: " + ", ".join(f"{count} {what}" for what, count in sorted(cases.items()))
        )
