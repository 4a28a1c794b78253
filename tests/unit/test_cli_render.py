"""`dynamo-infra render` without a cluster: stack files read without Pulumi, stable file names, and
the field diff `diff-live` uses."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.cli import main as cli
from dynamo_infra.cli.drift import CHANGED, MISSING, Drift, field_changes, object_drift
from dynamo_infra.cli.stackfile import StackFileError, read_stack
from dynamo_infra.stack_config import StackConfig
from tests.conftest import REPO

STACK = """\
config:
  dynamo-infra:kubeconfig:
    secure: v1:abc
  dynamo-infra:cluster: '{"namespace": "team-a", "await": {"mode": "skip"}}'
  dynamo-infra:graphs:
    - examples/mocker-agg.yaml
"""


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A project copy whose stack has a secret kubeconfig and its cluster as JSON (as `pulumi config set` writes)."""
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "crds").symlink_to(REPO / "stacks" / "crds")
    (tmp_path / "stacks" / "Pulumi.team.yaml").write_text(STACK)
    return tmp_path


def test_a_stack_is_read_by_name_with_paths_resolved_and_secrets_reported(project: Path) -> None:
    stack = read_stack("team", project)
    assert (stack.project, stack.stack, stack.owner) == ("dynamo-infra", "team", "dynamo-infra/team")
    assert stack.secure_keys == ("dynamo-infra:kubeconfig",)
    assert stack.get("kubeconfig") is None
    assert stack.get_object("graphs") == [str(project / "examples" / "mocker-agg.yaml")]
    config = StackConfig.from_config(stack, kubeconfig=False)
    assert config.kubeconfig == "" and config.cluster.namespace == "team-a"
    # The program's own reading still needs a kubeconfig.
    with pytest.raises(Exception, match="kubeconfig"):
        StackConfig.from_config(stack)
    assert read_stack(str(project / "stacks" / "Pulumi.team.yaml")).stack == "team"
    with pytest.raises(StackFileError, match=r"Pulumi\.nope\.yaml does not exist"):
        read_stack("nope", project)


def render(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(["render", *argv]) == cli.EXIT_OK
    return capsys.readouterr().out


def test_a_stack_renders_one_file_per_part_with_its_platform(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    render(["team", "--project-dir", str(project), "--out", str(out)], capsys)
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml"))
    assert names == [
        "_platform.yaml",
        "mocker-agg/Frontend.yaml",
        "mocker-agg/MockerWorker.yaml",
        "mocker-agg/_claims.yaml",
        "mocker-agg/_records.yaml",
        "mocker-agg/_shared.yaml",
    ]
    platform = [d for d in yaml.load_all((out / "_platform.yaml").read_text(), Loader=yaml.CSafeLoader) if d]
    assert platform[0]["kind"] == "Namespace" and platform[0]["metadata"]["name"] == "team-a"
    assert "CustomResourceDefinition" in {d["kind"] for d in platform}
    worker = yaml.safe_load((out / "mocker-agg" / "MockerWorker.yaml").read_text().split("---")[0])
    assert worker["metadata"]["namespace"] == "team-a"


def test_render_is_deterministic_and_the_stream_holds_every_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = str(REPO / "examples" / "mocker-agg.yaml")
    first = render([graph], capsys)
    assert first == render([graph], capsys)
    out = tmp_path / "out"
    render([graph, "--out", str(out)], capsys)
    files = sorted(out.rglob("*.yaml"))
    in_files = [d for p in files for d in yaml.load_all(p.read_text(), Loader=yaml.CSafeLoader) if d]
    in_stream = [d for d in yaml.load_all(first, Loader=yaml.CSafeLoader) if d]
    key = lambda d: (d["kind"], d["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, in_stream)) == sorted(map(key, in_files)) and len(in_stream) == len(in_files) > 0


def test_graph_files_render_with_cluster_options_and_no_platform(capsys: pytest.CaptureFixture[str]) -> None:
    text = render([str(REPO / "examples" / "mocker-agg.yaml"), "--cluster", '{"namespace": "x"}'], capsys)
    docs = [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d]
    assert "Namespace" not in {d["kind"] for d in docs}
    assert {d["metadata"].get("namespace") for d in docs} == {"x"}
    namespaced = render([str(REPO / "examples" / "mocker-agg.yaml"), "--namespace", "y"], capsys)
    assert {
        d["metadata"].get("namespace") for d in yaml.load_all(namespaced, Loader=yaml.CSafeLoader) if d
    } == {"y"}


def test_field_changes_walk_only_what_was_rendered() -> None:
    rendered = {"spec": {"replicas": 1, "template": {"env": [{"name": "A", "value": "1"}]}, "cpu": "1000m"}}
    live: dict[str, Any] = {
        "spec": {"replicas": 1, "template": {"env": [{"name": "A", "value": "1"}]}, "cpu": "1", "extra": 5}
    }
    assert field_changes(rendered, live) == []
    live["spec"]["template"]["env"][0]["value"] = "2"
    live["spec"]["replicas"] = 3
    assert field_changes(rendered, live) == [
        ("spec.replicas", 1, 3),
        ("spec.template.env[0].value", "1", "2"),
    ]
    assert field_changes({"a": [1, 2]}, {"a": [1]}) == [("a", [1, 2], [1])]
    assert field_changes({"a": {"b": 1}}, {}) == [("a", {"b": 1}, None)]


def test_object_drift_leaves_out_what_others_own() -> None:
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1}}
    live = {**obj, "spec": {"replicas": 4}}
    assert object_drift("k", obj, None) == [Drift("k", MISSING)]
    assert object_drift("k", obj, live) == [Drift("k", CHANGED, "spec.replicas", 1, 4)]
    assert object_drift("k", obj, live, replicas_external=True) == []
    assert object_drift("k", obj, live, create_only=True) == []
