"""The `dynamo-infra` command: its table of subcommands, help, exit codes, light imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dynamo_infra.cli import main as cli
from dynamo_infra.errors import DynamoInfraError


def test_every_listed_command_is_in_the_help() -> None:
    text = " ".join(cli.parser().format_help().split())
    for module in cli.command_modules():
        assert module.NAME in text and module.HELP in text
    assert "exit codes:" in text


def test_a_wrong_command_line_exits_with_the_usage_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["no-such-command"])
    assert e.value.code == cli.EXIT_USAGE


def test_a_dynamo_infra_error_is_printed_and_exits_with_the_error_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dynamo_infra.agent.cli as agent_cli

    def fail(args: object) -> int:
        raise DynamoInfraError("cannot reach the cluster")

    monkeypatch.setattr(agent_cli, "run", fail)
    assert cli.main(["agent", "--namespace", "a"]) == cli.EXIT_ERROR
    assert capsys.readouterr().err == "dynamo-infra agent: error: cannot reach the cluster\n"


def test_the_command_loads_without_pulumi_or_components() -> None:
    """The agent's image has neither: building the parser must not import them."""
    code = (
        "import sys; from dynamo_infra.cli.main import parser; parser(); "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_kubernetes', 'kopf') "
        "or m.startswith('dynamo_infra.components')); "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == ""
