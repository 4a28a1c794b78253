"""`dynamo-infra preview-summary` and the GitHub workflow examples on real previews of the local
control plane: one stack deployed once (by the `main` workflow's own commands), then previews of
changes to it (the `pull-request` workflow's commands, or the command's own Automation API preview).

The stack is the `local` example's mocker graph plus `examples/sglang-multinode.yaml` on
LeaderWorkerSets, whose namespace gets a copy of the MPI SSH key secret (a Secret the platform
writes from another namespace: the secret whose change the comment must mask)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.cli.main import EXIT_OK, main
from dynamo_infra.cli.preview_markdown import GITHUB_COMMENT_LIMIT, HIDDEN
from dynamo_infra.kube.client import KubeClient
from tests.conftest import REPO
from tests.integration.harness import admission_off, copy_project, kube_client, make_stack, unique
from tools import toolchain
from tools.localcluster import LocalCluster

WORKFLOWS = REPO / "examples" / "ci" / "github"
# Steps of the workflows the test does not run: the install (the test's virtualenv is that
# install) and the one posting the comment (its input file is checked instead).
NOT_RUN = ("install", "comment")
TINY = REPO / "tests" / "data" / "preview" / "tiny-mocker.yaml"
# Graphs of the many-graphs stack, and the --limit that makes its comment collapse.
MANY = 20
SMALL_LIMIT = 6_000
# The MPI SSH key secret the operator keeps (name as `cluster.mpi.sshSecretName` defaults).
MPI_SECRET = "mpi-run-ssh-secret"
OLD_KEY, NEW_KEY = "ssh-key-before-rotation-Zq81", "ssh-key-after-rotation-Xv27"


def mpi_secret(namespace: str, private_key: str) -> dict[str, Any]:
    data = {"private.key": base64.b64encode(private_key.encode()).decode()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": MPI_SECRET, "namespace": namespace},
        "type": "Opaque",
        "data": data,
    }


class Rig:
    def __init__(self, root: Path, cluster: LocalCluster, kube: KubeClient) -> None:
        self.root, self.cluster, self.kube = root, cluster, kube
        self.project = copy_project(root)
        # The pull-request workflow's policy step runs the repository's pack.
        (self.project / "policy").symlink_to(REPO / "policy")
        self.ns, self.keys_ns = unique("pr"), unique("pr-keys")
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.keys_ns}})
        kube.apply(mpi_secret(self.keys_ns, OLD_KEY))
        self.mocker = self.project / "examples" / "mocker-agg.yaml"
        graphs = [self.mocker, self.project / "examples" / "sglang-multinode.yaml"]
        options = {
            "await": {"mode": "skip"},
            "multinode": {"orchestrator": "lws"},
            "mpi": {"sshSecretNamespace": self.keys_ns},
        }
        self.stack = make_stack(self.project, cluster, "pr", self.ns, graphs, **options)
        self.home = root / "pulumi-home"
        toolchain.install_plugins(self.home)
        # What the workflows take from the repository's secrets and variables.
        self.env = {
            **os.environ,
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": f"file://{root / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": os.environ["PULUMI_CONFIG_PASSPHRASE"],
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "STACK": "pr",
        }

    def run_workflow(self, name: str) -> list[str]:
        """The `run:` commands of a workflow's steps, run in the project; the ids of those run."""
        workflow = yaml.safe_load((WORKFLOWS / name).read_text())
        assert set(workflow["env"]) <= set(self.env), "a variable the workflow expects is not given"
        ran = []
        for job in workflow["jobs"].values():
            for step in job["steps"]:
                if "run" not in step or step["id"] in NOT_RUN:
                    continue
                done = subprocess.run(
                    ["bash", "-e", "-o", "pipefail", "-c", step["run"]],
                    cwd=self.project, env=self.env, capture_output=True, text=True, timeout=300,
                )  # fmt: skip
                assert done.returncode == 0, (
                    f"{name} step {step['id']}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
                )
                ran.append(step["id"])
        return ran

    def summary(self, *args: str) -> str:
        """`dynamo-infra preview-summary --stack pr` (the command's own preview); the comment."""
        out = self.root / "comment.md"
        with env_vars(self.env):
            assert (
                main(
                    ["preview-summary", "--stack", "pr", "--cwd", str(self.project), "--out", str(out), *args]
                )
                == EXIT_OK
            )
        return out.read_text()

    @contextlib.contextmanager
    def graph_edit(self, old: str, new: str) -> Iterator[None]:
        text = self.mocker.read_text()
        assert old in text
        self.mocker.write_text(text.replace(old, new, 1))
        try:
            yield
        finally:
            self.mocker.write_text(text)


@contextlib.contextmanager
def env_vars(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Iterator[Rig]:
    with kube_client(cluster) as kube:
        r = Rig(tmp_path_factory.mktemp("preview-summary"), cluster, kube)
        try:
            assert r.run_workflow("main.yml") == ["login", "up", "outputs"]
            yield r
        finally:
            r.stack.destroy(on_output=lambda _: None)
            kube.delete({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": r.keys_ns}})


WORKER_REPLICAS = "      componentType: worker\n      replicas: 1\n"
WORKER_IMAGE = "image: nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.6.1\n          command"


def test_pull_request_workflow_comments_a_replica_bump(rig: Rig) -> None:
    with rig.graph_edit(WORKER_REPLICAS, WORKER_REPLICAS.replace("1", "2")):
        assert rig.run_workflow("pull-request.yml") == ["login", "preview", "summary", "policy"]
    text = (rig.project / "comment.md").read_text()
    assert text.startswith("### Pulumi preview of stack `pr`")
    assert "**1 graph**: 2 objects updated, 0 created, 0 deleted; 0 rollouts of pods" in text
    assert f"updated `apps/v1/Deployment/{rig.ns}/mocker-agg-mockerworker-" in text
    assert "scaled, no restart: replicas 1 -> 2" in text and "`spec.replicas`: `1` → `2`" in text
    assert "`spec.components[MockerWorker].replicas`: `1` → `2`" in text  # the DGD record


def test_image_bump_shows_the_rollout(rig: Rig) -> None:
    with rig.graph_edit(WORKER_IMAGE, WORKER_IMAGE.replace("1.6.1", "1.6.2")):
        text = rig.summary()
    assert "1 rollout of pods (`mocker-agg/MockerWorker`)" in text
    assert "pods restart**: pods replaced by the new workload" in text  # a new worker hash renames it
    image = "`spec.template.spec.containers[main].image`: `nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.6.1` → `nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.6.2`"
    assert image in text
    assert "Frontend" not in text.split("</summary>", 1)[0]  # the frontend does not restart


def test_a_component_added_and_one_removed(rig: Rig) -> None:
    with admission_off(rig.stack), rig.graph_edit("    MockerWorker:\n", "    Decoder:\n"):
        text = rig.summary()
    assert "#### `Decoder` (added)" in text and "#### `MockerWorker` (removed)" in text
    assert f"created `apps/v1/Deployment/{rig.ns}/mocker-agg-decoder-" in text
    assert f"deleted `apps/v1/Deployment/{rig.ns}/mocker-agg-mockerworker-" in text
    assert "its pods are deleted" in text and "new pods" in text


def test_a_rotated_secret_is_masked(rig: Rig) -> None:
    rig.kube.apply(mpi_secret(rig.keys_ns, NEW_KEY))
    try:
        text = rig.summary()
    finally:
        rig.kube.apply(mpi_secret(rig.keys_ns, OLD_KEY))
    assert f"updated `v1/Secret/{rig.ns}/{MPI_SECRET}` — secret data hidden" in text
    assert f"`data`: {HIDDEN}" in text and "the platform: 1 object updated" in text
    for key in (OLD_KEY, NEW_KEY):
        for shown in (key, base64.b64encode(key.encode()).decode()):
            assert shown not in text


def test_twenty_graphs_collapse_under_the_limit(rig: Rig) -> None:
    graphs = []
    for i in range(MANY):
        path = rig.project / "examples" / f"tiny-{i:02d}.yaml"
        path.write_text(TINY.read_text().replace("name: tiny", f"name: tiny-{i:02d}"))
        graphs.append(path)
    many = make_stack(rig.project, rig.cluster, "many", unique("many"), graphs, **{"await": {"mode": "skip"}})
    preview = many.preview(json=True).stdout
    src = rig.root / "many.json"
    src.write_text(preview)
    full, small = rig.root / "full.md", rig.root / "small.md"
    assert main(["preview-summary", "--json", str(src), "--out", str(full)]) == EXIT_OK
    assert (
        main(["preview-summary", "--json", str(src), "--out", str(small), "--limit", str(SMALL_LIMIT)])
        == EXIT_OK
    )
    whole, cut = full.read_text(), small.read_text()
    assert len(whole) < GITHUB_COMMENT_LIMIT and f"**{MANY} graphs** and the platform:" in whole
    # Five resources per graph (the graph, its shared objects keeping its admission, records, two
    # components).
    assert json.loads(preview)["changeSummary"]["create"] > 5 * MANY
    assert len(whole) > SMALL_LIMIT >= len(cut)
    assert (
        f"Cut to fit the {SMALL_LIMIT:,}-character limit of the comment" in cut
        and "graphs shown as one line" in cut
    )
    assert "(details cut to fit)" in cut and "tiny-19" in cut
