"""Planner component: scales workers from Prometheus metrics.

It renders as the operator would; `planner_operator_needs` says separately (at preview, not in the
rendering) when the planner needs what the operator served (what the dynamo-infra agent serves instead).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from pathlib import PurePosixPath

from dynamo_infra.api import Problem, v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.components.common import (
    DEFAULT_COMMAND,
    SYSTEM_PORT,
    SYSTEM_PORT_NAME,
    BaseComponentDefaults,
    base_pod_spec,
    common_container,
)
from dynamo_infra.render.components.worker import system_probes
from dynamo_infra.render.context import MAIN_CONTAINER, ComponentContext

# Port the planner exports its Prometheus metrics on.
PLANNER_METRICS_PORT = 9085
# Service account the planner runs as (bound to the planner role by the platform).
PLANNER_SERVICE_ACCOUNT = "planner-serviceaccount"
# The planner's environment when it names none (dynamo.planner.config.defaults, 1.4.0).
DEFAULT_ENVIRONMENT = "kubernetes"
# Environments whose planner reads its DynamoGraphDeployment (spec, Ready status, replica status)
# and whose replica changes go through the DGD or its scaling adapters: only the operator serves them.
OPERATOR_ENVIRONMENTS = frozenset({"kubernetes", "global-planner"})
# How a planner is told its environment: a flag (planner_sla, before 1.0) or a key of its JSON config.
ENVIRONMENT_FLAG = "--environment"
CONFIG_FLAG = "--config"
# Shells whose `-c` script holds the real command line, and their short options that include `-c`.
SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh"})
SHELL_SCRIPT_OPTION = re.compile(r"-[a-zA-Z]*c[a-zA-Z]*")


class Planner(BaseComponentDefaults):
    dcd_service_account: str | None = PLANNER_SERVICE_ACCOUNT

    def container(self, ctx: ComponentContext) -> Manifest:
        base = common_container(ctx)
        return {
            **base,
            "env": [
                *base["env"],
                {"name": "PLANNER_PROMETHEUS_PORT", "value": str(PLANNER_METRICS_PORT)},
                {"name": "DYN_SYSTEM_PORT", "value": str(SYSTEM_PORT)},
            ],
            "ports": [
                {"name": "metrics", "containerPort": PLANNER_METRICS_PORT, "protocol": "TCP"},
                {"name": SYSTEM_PORT_NAME, "containerPort": SYSTEM_PORT, "protocol": "TCP"},
            ],
            **system_probes(),
        }

    def pod_spec(self, ctx: ComponentContext) -> Manifest:
        return {**base_pod_spec(), "serviceAccountName": PLANNER_SERVICE_ACCOUNT}

    def operator_needs(self, component: v1beta1.Component, graph: str, at: str) -> list[Problem]:
        return planner_operator_needs(component, graph, at)


def command_words(command: Sequence[str]) -> list[str]:
    """The words of a command line; a shell's `-c` script split as the shell would."""
    if len(command) < 3 or PurePosixPath(command[0]).name not in SHELLS:
        return list(command)
    flag = next((i for i, w in enumerate(command[1:], 1) if SHELL_SCRIPT_OPTION.fullmatch(w)), None)
    if flag is None or flag + 1 >= len(command):
        return list(command)
    script = command[flag + 1]
    try:
        return shlex.split(script)
    except ValueError:
        return script.split()


def planner_environment(command: Sequence[str]) -> str | None:
    """The environment a planner command line selects; None when its `--config` is a file (unseen here)."""
    words = command_words(command)
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if flag not in (ENVIRONMENT_FLAG, CONFIG_FLAG):
            continue
        if not eq:
            value = words[i + 1] if i + 1 < len(words) else ""
        if flag == ENVIRONMENT_FLAG:
            return value
        try:
            config = json.loads(value)
        except ValueError:
            return None
        return str(config.get("environment", DEFAULT_ENVIRONMENT)) if isinstance(config, dict) else None
    return DEFAULT_ENVIRONMENT


def planner_operator_needs(component: v1beta1.Component, graph: str, at: str) -> list[Problem]:
    """The planner's needs the Dynamo operator served (the dynamo-infra agent serves them here), as a
    problem at `at` (none in the virtual environment, whose decisions go to a client of the user's own)."""
    main = (component.pod_template.container(MAIN_CONTAINER) if component.pod_template else None) or {}
    environment = planner_environment([*(main.get("command") or DEFAULT_COMMAND), *(main.get("args") or [])])
    if environment is not None and environment not in OPERATOR_ENVIRONMENTS:
        return []
    seen = (
        f"environment {environment}"
        if environment is not None
        else f"its {CONFIG_FLAG} file is not visible here: environment {DEFAULT_ENVIRONMENT} by default"
    )
    return [
        Problem(
            at,
            f"the Dynamo Planner ({seen}) reads DynamoGraphDeployment {graph!r} and its Ready status, "
            "and scales through DynamoGraphDeploymentScalingAdapters or a patch of the DGD. Without "
            "the dynamo-infra agent, the stack writes that DGD and its status only on `pulumi up` and "
            "`pulumi refresh` (where the graph's records cannot be written, output `recorded` says why, "
            "and the planner crashes at start: DynamoGraphDeploymentNotFoundError), and nothing carries "
            "the planner's replica changes to the workloads: it never scales. Set `dynamo-infra:agent` "
            "({image: <the agent image, built from this repository's Dockerfile>}) to run the agent, "
            "which does; or run the planner in its virtual environment "
            f"""({CONFIG_FLAG} '{{"environment": "virtual", "model_name": ...}}')""",
        )
    ]
