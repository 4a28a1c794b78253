"""The public surface is what the README teaches: its program runs (under Pulumi mocks) with the names
`components` and `dynamo_infra` export, and importing `dynamo_infra` alone stays cheap."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from typing import Any

import pulumi

from tests.conftest import REPO
from tests.unit.conftest import Mocks

# The README section that shows a program of one's own.
SECTION = "## Use it from your own Pulumi program"
# What `dynamo_infra.components` exports besides the program's plumbing: the ComponentResources and their Args.
COMPONENTS = {
    "DynamoGraphDeployment",
    "DynamoGraphDeploymentArgs",
    "DynamoComponentDeployment",
    "DynamoComponentDeploymentArgs",
    "PersistentVolumeClaim",
    "PersistentVolumeClaimArgs",
    "Checkpoint",
    "CheckpointArgs",
    "ScalingAdapter",
    "ScalingAdapterArgs",
    "Platform",
    "PlatformArgs",
    "plan_graph",
    "plan_platform",
}
# The user-facing API of `dynamo_infra`.
DYNAMO_INFRA = {
    "load_graph",
    "load_yaml",
    "DynamoValidationError",
    "ClusterOptions",
    "render_graph",
    "StackConfig",
}


def readme_program() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index(SECTION) : text.index("\n## ", text.index(SECTION) + 1)]
    (program,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return str(program)


def test_components_and_dynamo_infra_export_what_the_readme_names() -> None:
    import dynamo_infra
    from dynamo_infra import components

    assert set(components.__all__) >= COMPONENTS
    assert set(dynamo_infra.__all__) >= DYNAMO_INFRA
    for name in dynamo_infra.__all__:
        assert getattr(dynamo_infra, name) is not None, name
    section = (REPO / "README.md").read_text().split(SECTION)[1].split("\n## ")[0]
    taught = set(re.findall(r"`(\w+)", section))
    assert taught >= COMPONENTS | DYNAMO_INFRA
    imports = [n for n in ast.walk(ast.parse(readme_program())) if isinstance(n, ast.ImportFrom)]
    for node in imports:
        exported = set(__import__(str(node.module), fromlist=["_"]).__all__)
        assert {a.name for a in node.names} <= exported, node.module


def test_importing_dynamo_infra_imports_nothing_else() -> None:
    code = "import sys, dynamo_infra; print(sorted(m for m in sys.modules if m.startswith('dynamo_infra')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['dynamo_infra']"


@pulumi.runtime.test
def test_the_readme_program_runs(mocks: Mocks, monkeypatch: Any) -> Any:
    monkeypatch.setattr(pulumi.Config, "require_secret", lambda self, key: pulumi.Output.secret("kubeconfig"))
    program = readme_program().replace('"graphs/agg.yaml"', repr(str(REPO / "examples" / "agg.yaml")))
    exported: dict[str, Any] = {}
    monkeypatch.setattr(pulumi, "export", lambda name, value: exported.__setitem__(name, value))
    exec(compile(program, "README.md", "exec"), {})

    def check(state: str) -> None:
        names = {r.name for r in mocks.resources}
        assert {"platform-namespace", "vllm-agg-frontend-workload", "vllm-agg-shared"} <= names
        assert state == "successful"

    return exported["state"].apply(check)
