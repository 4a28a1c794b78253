"""The public surface is what the docs teach: the getting-started program (the README shows the same)
runs under Pulumi mocks with the names `dynamo_infra.components` and `dynamo_infra` export, and
importing `dynamo_infra` alone stays cheap."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from typing import Any

import pulumi

from tests.conftest import REPO
from tests.documented import PAGE, README_SECTION, SECTION, documented_program, program_in, section
from tests.unit.conftest import Mocks

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


def test_the_readme_shows_the_documented_program() -> None:
    assert program_in(section(REPO / "README.md", README_SECTION)) == documented_program()


def test_components_and_dynamo_infra_export_what_the_docs_name() -> None:
    import dynamo_infra
    from dynamo_infra import components

    assert set(components.__all__) >= COMPONENTS
    assert set(dynamo_infra.__all__) >= DYNAMO_INFRA
    for name in dynamo_infra.__all__:
        assert getattr(dynamo_infra, name) is not None, name
    taught = set(re.findall(r"`(\w+)", section(PAGE, SECTION)))
    assert taught >= COMPONENTS | DYNAMO_INFRA
    imports = [n for n in ast.walk(ast.parse(documented_program())) if isinstance(n, ast.ImportFrom)]
    for node in imports:
        exported = set(__import__(str(node.module), fromlist=["_"]).__all__)
        assert {a.name for a in node.names} <= exported, node.module


def test_importing_dynamo_infra_imports_nothing_else() -> None:
    code = "import sys, dynamo_infra; print(sorted(m for m in sys.modules if m.startswith('dynamo_infra')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['dynamo_infra']"


@pulumi.runtime.test
def test_the_documented_program_runs(mocks: Mocks, monkeypatch: Any) -> Any:
    monkeypatch.setattr(pulumi.Config, "require_secret", lambda self, key: pulumi.Output.secret("kubeconfig"))
    program = documented_program().replace('"graphs/agg.yaml"', repr(str(REPO / "examples" / "agg.yaml")))
    exported: dict[str, Any] = {}
    monkeypatch.setattr(pulumi, "export", lambda name, value: exported.__setitem__(name, value))
    exec(compile(program, str(PAGE.relative_to(REPO)), "exec"), {})

    def check(state: str) -> None:
        names = {r.name for r in mocks.resources}
        assert {"platform-namespace", "vllm-agg-frontend-workload", "vllm-agg-shared"} <= names
        assert state == "successful"

    return exported["state"].apply(check)
