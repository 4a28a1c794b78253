"""The package as a platform repository installs it: the wheel built from this checkout, installed on
its own (its declared dependencies, at the pinned versions) into a fresh virtualenv, beside a Pulumi
project of the platform's that has its own `components` package. The documented program (docs/getting-started.md,
which the README shows too), run by
`pulumi preview` against the local control plane, previews; the project's code imports its own
`components`, and dynamo-infra's from the installed `dynamo_infra.components`; the installed
`dynamo-infra` command works.

The pinned dependencies come as wheels from a per-user cache beside the toolchain's
(`wheels-<requirements digest>`), built once with `pip wheel -r requirements.txt` (the network is
needed that once); every later run installs offline.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pulumi import automation as auto

from tests.conftest import REPO, build_wheel
from tests.documented import documented_program
from tests.integration.harness import TAIL
from tools import toolchain
from tools.localcluster import LocalCluster

# The documented program's graph file, laid out in the project at the same place.
GRAPH = "graphs/agg.yaml"
PROJECT = "platform-repo"
# The platform repository's own `components` package, and its program's lines before the documented ones.
OWN_COMPONENTS = '''"""The platform repository's own components (nothing of dynamo-infra's)."""

TEAM = "platform-team"
'''
PRELUDE = """import sys
from pathlib import Path

import components  # the platform repository's own package
import dynamo_infra.components

here = Path(__file__).resolve().parent
assert Path(components.__file__).resolve() == here / "components" / "__init__.py", components.__file__
assert components.TEAM == "platform-team"
assert Path(dynamo_infra.components.__file__).is_relative_to(sys.prefix), dynamo_infra.components.__file__
print(f"own components: {components.__file__}; dynamo_infra.components: {dynamo_infra.components.__file__}")
"""
# Time limits of the virtualenv's installs (a cold wheel cache downloads and builds the wheels).
INSTALL_TIMEOUT_S = 900


def run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    assert out.returncode == 0, f"{cmd}: {out.stdout[-3000:]}{out.stderr[-3000:]}"
    return out  # type: ignore[no-any-return]


def pinned_wheels() -> Path:
    """A folder of wheels of the pinned requirements (and theirs), built once per requirements file."""
    requirements = REPO / "requirements.txt"
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]
    folder = toolchain.cache_root().parent / f"wheels-{digest}"
    if not (folder / ".complete").exists():
        shutil.rmtree(folder, ignore_errors=True)
        run(
            [sys.executable, "-m", "pip", "wheel", "-q", "-r", str(requirements), "-w", str(folder)],
            timeout=INSTALL_TIMEOUT_S,
        )
        (folder / ".complete").touch()
    return folder


def clean_env() -> dict[str, str]:
    """The environment without this checkout: no PYTHONPATH, no virtualenv of ours on PATH."""
    repo_bin = str(REPO / ".venv" / "bin")
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != repo_bin)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "PATH": path}


def lay_project(project: Path, venv: Path) -> None:
    """The platform repository: Pulumi.yaml on the fresh virtualenv, its own `components`, the documented
    program after a prelude that checks which packages it imported, the graph, the CRD sets."""
    project.mkdir()
    (project / "Pulumi.yaml").write_text(
        f"name: {PROJECT}\nruntime:\n  name: python\n  options:\n    toolchain: pip\n    virtualenv: {venv}\n"
    )
    (project / "components").mkdir()
    (project / "components" / "__init__.py").write_text(OWN_COMPONENTS)
    (project / "__main__.py").write_text(PRELUDE + "\n" + documented_program())
    (project / "graphs").mkdir()
    shutil.copy(REPO / "examples" / "agg.yaml", project / GRAPH)
    # The platform installs the CRD sets from `stacks/crds` of the program's folder (not in the wheel).
    (project / "stacks").mkdir()
    (project / "stacks" / "crds").symlink_to(REPO / "stacks" / "crds")


def test_the_wheel_installs_beside_a_platform_repo_with_its_own_components(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    wheel = build_wheel(tmp_path / "dist")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    # The wheel alone: its declared dependencies, at the pinned versions, offline.
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index"]
    pip += ["--find-links", str(pinned_wheels()), "-c", str(REPO / "requirements.txt"), str(wheel)]
    run(pip, env=clean_env(), timeout=INSTALL_TIMEOUT_S)
    site = run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    )
    top_level = {
        p.name for p in Path(site.stdout.strip()).iterdir() if p.name.startswith(("dynamo", "components"))
    }
    assert "components" not in top_level and "dynamo_infra" in top_level, top_level

    project = tmp_path / "project"
    lay_project(project, venv)
    env = clean_env()
    validated = run([str(venv / "bin" / "dynamo-infra"), "validate", GRAPH], cwd=project, env=env)
    assert "1 file checked: 0 problems" in validated.stdout + validated.stderr, validated

    (tmp_path / "state").mkdir()
    opts = auto.LocalWorkspaceOptions(
        work_dir=str(project),
        env_vars={"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "PYTHONPATH": ""},
        secrets_provider="passphrase",
    )
    stack = auto.create_stack("dev", work_dir=str(project), opts=opts)
    stack.set_config("kubeconfig", auto.ConfigValue(cluster.kubeconfig.read_text(), secret=True))
    lines: list[str] = []
    try:
        preview = stack.preview(on_output=lines.append)
    except auto.errors.CommandError as e:
        pytest.fail("\n".join(lines[-TAIL:]) + str(e)[-3000:])
    output = "\n".join(lines)
    assert f"own components: {project / 'components' / '__init__.py'}" in output, output[-3000:]
    created = sum(n for op, n in preview.change_summary.items() if op == "create")
    assert created > 0, preview.change_summary
