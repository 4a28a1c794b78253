"""The policy pack (`policy/`) in real previews on the local control plane (4 nodes x 8 GPUs): one
graph that passes every policy, then edited to fail each (`pulumi preview --policy-pack policy`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pulumi import automation as auto

from tests.conftest import REPO
from tests.integration.harness import copy_project, make_stack, unique
from tools.localcluster import LocalCluster

PACK = str(REPO / "policy")
GRAPH = REPO / "tests" / "data" / "policy" / "graph.yaml"
WORKER_IMAGE = "          image: nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.4.0\n          command:"
SECRET_REF = "          valueFrom:\n            secretKeyRef:\n              name: hf-token\n              key: token\n"
# A made-up token of the Hugging Face format (never a real one).
FAKE_TOKEN = "hf_" + "x" * 34


@dataclass
class PolicyStack:
    stack: auto.Stack
    graph: Path
    tmp: Path

    def preview(self, text: str, config: dict[str, object] | None = None) -> tuple[bool, str]:
        """Preview the graph `text` with the pack: (succeeded, output)."""
        self.graph.write_text(text)
        configs = []
        if config:
            path = self.tmp / "policy-config.json"
            path.write_text(json.dumps(config))
            configs = [str(path)]
        lines: list[str] = []
        try:
            self.stack.preview(on_output=lines.append, policy_packs=[PACK], policy_pack_configs=configs)
        except auto.errors.CommandError as e:
            return False, "\n".join(lines) + str(e)
        return True, "\n".join(lines)


@pytest.fixture(scope="module")
def policy_stack(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PolicyStack]:
    tmp = tmp_path_factory.mktemp("policy")
    project = copy_project(tmp)
    graph = project / "graph.yaml"
    stack = make_stack(project, cluster, "policy", unique("policy"), [graph], **{"await": {"mode": "skip"}})
    yield PolicyStack(stack, graph, tmp)
    stack.workspace.remove_stack("policy")


def test_a_graph_that_fits_passes_every_policy(policy_stack: PolicyStack) -> None:
    ok, out = policy_stack.preview(GRAPH.read_text())
    assert ok, out
    assert "✅ dynamo-infra@v0.1.0" in out, out
    assert "[mandatory]" not in out and "[advisory]" not in out, out
    # The policy config's kubeconfigPath wins over the stack's kubeconfig input; an unreadable cluster fails.
    ok, out = policy_stack.preview(
        GRAPH.read_text(), {"gpu-fit": {"kubeconfigPath": str(policy_stack.tmp / "none")}}
    )
    assert not ok, out
    assert "[mandatory]  gpu-fit" in out and "cannot read kubeconfig" in out, out


def test_a_graph_that_cannot_schedule_fails_the_preview(policy_stack: PolicyStack) -> None:
    text = GRAPH.read_text().replace("replicas: 2", "replicas: 3").replace('gpu: "4"', 'gpu: "16"')
    ok, out = policy_stack.preview(text)
    assert not ok, out
    assert "[mandatory]  gpu-fit" in out, out
    assert "a pod asks for 16 GPUs, but the largest node has 8" in out, out
    assert "the stack asks for 48 GPUs" in out and "but the cluster has 32" in out, out


def test_latest_is_a_warning_unless_the_config_makes_it_mandatory(policy_stack: PolicyStack) -> None:
    text = GRAPH.read_text().replace(WORKER_IMAGE, WORKER_IMAGE.replace(":1.4.0", ":latest"))
    ok, out = policy_stack.preview(text)
    assert ok, out
    assert "[advisory]  images-pinned" in out, out
    assert "image 'nvcr.io/nvidia/ai-dynamo/dynamo-frontend:latest' has the tag latest" in out, out
    ok, out = policy_stack.preview(text, {"images-pinned": {"enforcementLevel": "mandatory"}})
    assert not ok, out
    assert "[mandatory]  images-pinned" in out, out


def test_a_literal_token_fails_the_preview(policy_stack: PolicyStack) -> None:
    text = GRAPH.read_text().replace(SECRET_REF, f"          value: {FAKE_TOKEN}\n")
    ok, out = policy_stack.preview(text)
    assert not ok, out
    assert "[mandatory]  no-literal-secret-env" in out, out
    assert "env HF_TOKEN has a literal value and its value looks like a Hugging Face token" in out, out
    assert FAKE_TOKEN not in out.split("Policies:")[-1], out
