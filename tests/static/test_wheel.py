"""The library as users `pip install` it: a wheel built from the repository, installed on its own
and used from outside the work tree (package data included: the CRD schemas the API validates with),
claiming no top-level name but `dynamo_infra`."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import build_wheel

# What a platform repo does with the installed library.
USER_SCRIPT = """
import sys
from pathlib import Path
import yaml
import dynamo_infra
import dynamo_infra.components as components
from dynamo_infra.components import DynamoGraphDeployment, load_graph
from dynamo_infra.api import DynamoValidationError, load_yaml
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph

site = Path(sys.argv[1])
for module in (components, dynamo_infra):
    assert Path(module.__file__).is_relative_to(site), module.__file__
dgd = load_graph(Path(sys.argv[2]))
assert dynamo_infra.load_graph is load_graph and dynamo_infra.StackConfig and components.plan_graph
rendered = render_graph(dgd, ClusterOptions(), "team")
print(len(rendered.all_objects()), "objects")
doc = yaml.safe_load(Path(sys.argv[2]).read_text())
doc["spec"]["backendFramework"] = "pytorch"
bad = Path("bad.yaml")
bad.write_text(yaml.safe_dump(doc))
try:
    load_yaml(bad)
except DynamoValidationError as e:
    print("rejected:", e)
else:
    raise SystemExit("an unknown backendFramework was accepted")
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_wheel_holds_one_package_and_its_data(wheel: Path, repo: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    schemas = {
        f"dynamo_infra/api/schemas/{p.name}" for p in (repo / "dynamo_infra/api/schemas").glob("*.json")
    }
    assert schemas and schemas <= names
    assert {
        "dynamo_infra/py.typed",
        "dynamo_infra/components/py.typed",
        "dynamo_infra/components/graph.py",
    } <= names
    # One top-level name: a platform repository's own `components`, `tests` or `tools` stay its own.
    dist_info = wheel.name.split("-py")[0] + ".dist-info"
    assert {n.split("/")[0] for n in names} == {"dynamo_infra", dist_info}
    if f"{dist_info}/top_level.txt" in names:
        assert zipfile.ZipFile(wheel).read(f"{dist_info}/top_level.txt").decode().split() == ["dynamo_infra"]


def test_installed_wheel_works_outside_the_work_tree(wheel: Path, repo: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    graph = repo / "examples" / "agg-epp.yaml"
    out = subprocess.run(
        [sys.executable, "-c", USER_SCRIPT, str(site), str(graph)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert " objects" in out.stdout and "spec.backendFramework" in out.stdout, out.stdout
