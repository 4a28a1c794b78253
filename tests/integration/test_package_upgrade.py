"""Upgrading this package under a running graph, through the real Pulumi CLI on the local control plane.

A stack deployed by the package as it was before the Dynamo 1.6 work (the last landed commit,
`BASELINE`, read from this repository's history) runs a graph with 1.4.0 images. The same stack is
then previewed and updated by the package of this checkout: the graph's resources preview `same`, the
Dynamo CRDs move forward to the 1.6 set (v1beta1 with `roles`), and not one pod of the graph is
replaced. Then the graph's images go to 1.6.1: its workers roll to new worker-hash names with the 1.5
defaults, as the 1.6 operator rolls them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

from components.platform_plan import crd_stub
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.kube import KubeClient
from tests.conftest import REPO
from tests.integration.harness import TAIL, graphs_kubeconfig, kube_client, unique
from tools.localcluster import LocalCluster

# The last commit landed before the Dynamo 1.5/1.6 rendering: what existing stacks were made with.
BASELINE = "817d0a9bd78e9ff70c2fa80a9a983e967b1a8486"
GRAPH = "examples/mocker-agg.yaml"
DGD_CRD = "dynamographdeployments.nvidia.com"
# The tag the graph is upgraded to.
NEW_RUNTIME = "1.6.1"
OLD_RUNTIME = "1.4.0"


def baseline_tree(dest: Path) -> Path:
    """The package at BASELINE, unpacked from this repository's history (no checkout is touched)."""
    dest.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", BASELINE], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def lay_project(project: Path, tree: Path) -> None:
    """The Pulumi project of `tree` (program, examples, shipped CRDs) in `project`, on our virtualenv."""
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(tree / name, project / name)
    for name in ("examples", "stacks/crds"):
        shutil.rmtree(project / name, ignore_errors=True)
    shutil.copytree(tree / "examples", project / "examples")
    # The stack's own config file (stacks/Pulumi.<stack>.yaml) stays.
    shutil.copytree(tree / "stacks" / "crds", project / "stacks" / "crds")
    if not (project / ".venv").exists():
        (project / ".venv").symlink_to(REPO / ".venv")


def stack_of(project: Path, name: str, env: dict[str, str]) -> auto.Stack:
    opts = auto.LocalWorkspaceOptions(
        work_dir=str(project),
        env_vars={"PULUMI_BACKEND_URL": f"file://{project.parent / 'state'}", **env},
        secrets_provider="passphrase",
    )
    return auto.create_or_select_stack(name, work_dir=str(project), opts=opts)


def run_up(stack: auto.Stack) -> None:
    lines: list[str] = []
    result = stack.up(on_output=lines.append)
    assert result.summary.result == "succeeded", "\n".join(lines[-TAIL:])


def preview_ops(stack: auto.Stack) -> dict[str, str]:
    """`urn -> op` of every resource a `pulumi preview` looks at."""
    ops: dict[str, str] = {}

    def on_event(event: Any) -> None:
        pre = event.resource_pre_event
        if pre is not None:
            ops[pre.metadata.urn] = str(pre.metadata.op.value)

    stack.preview(on_event=on_event, on_output=lambda _: None)
    return ops


def pods(kube: KubeClient, namespace: str) -> dict[str, str]:
    """`pod name -> uid` of the namespace."""
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in kube.list("v1", "Pod", namespace)}


def workloads(kube: KubeClient, namespace: str) -> dict[str, tuple[str, int]]:
    """`Deployment name -> (uid, generation)`."""
    return {
        d["metadata"]["name"]: (d["metadata"]["uid"], d["metadata"]["generation"])
        for d in kube.list("apps/v1", "Deployment", namespace)
    }


def v1beta1_component_fields(crd: Manifest) -> set[str]:
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta1"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return set(spec["properties"]["components"]["items"]["properties"])


def with_images(graph: Path, old: str, new: str) -> None:
    graph.write_text(graph.read_text().replace(f":{old}", f":{new}"))


def test_upgrading_the_package_restarts_nothing_and_moves_the_crds_forward(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    try:
        old = baseline_tree(tmp_path / "baseline")
    except subprocess.CalledProcessError as e:
        pytest.fail(f"this clone lacks the baseline commit {BASELINE} (a shallow clone?): {e.stderr!r}")
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "state").mkdir()
    lay_project(project, old)
    namespace = unique("upgrade")
    graph = project / GRAPH
    assert f":{OLD_RUNTIME}" in graph.read_text()

    # The baseline package deploys the graph (its code first on the program's and providers' path).
    stack = stack_of(project, "upgrade", {"PYTHONPATH": str(old)})
    kubeconfig = graphs_kubeconfig(cluster, namespace, tmp_path)
    cluster_options = {"namespace": namespace, "await": {"timeoutSeconds": 180}}
    stack.set_all_config(
        {
            "dynamo-infra:kubeconfigPath": auto.ConfigValue(str(cluster.kubeconfig)),
            "dynamo-infra:graphKubeconfigPath": auto.ConfigValue(str(kubeconfig)),
            "dynamo-infra:cluster": auto.ConfigValue(json.dumps(cluster_options)),
            "dynamo-infra:graphs": auto.ConfigValue(json.dumps([str(graph)])),
        }
    )
    run_up(stack)
    with kube_client(cluster) as kube:
        pods_before, workloads_before = pods(kube, namespace), workloads(kube, namespace)
        assert pods_before and workloads_before
        old_crd = kube.get(crd_stub(DGD_CRD))
        assert old_crd is not None and "roles" not in v1beta1_component_fields(old_crd)

    # This checkout's package: the same stack, its program and CRDs, no baseline on the path.
    lay_project(project, REPO)
    shutil.copy(old / GRAPH, graph)
    stack = stack_of(project, "upgrade", {})
    ops = preview_ops(stack)
    graph_ops = {urn: op for urn, op in ops.items() if "CustomResourceDefinition" not in urn}
    changed = {urn: op for urn, op in graph_ops.items() if op != "same"}
    assert changed == {}, changed
    crd_ops = {urn.rsplit("::", 1)[1]: op for urn, op in ops.items() if "CustomResourceDefinition" in urn}
    assert any(op == "update" for op in crd_ops.values()), crd_ops
    run_up(stack)
    with kube_client(cluster) as kube:
        assert pods(kube, namespace) == pods_before, "a pod of the running graph was replaced"
        assert workloads(kube, namespace) == workloads_before, "a workload of the running graph changed"
        new_crd = kube.get(crd_stub(DGD_CRD))
        assert new_crd is not None and "roles" in v1beta1_component_fields(new_crd)
    assert set(preview_ops(stack).values()) == {"same"}

    # The graph's images to 1.6.1: its worker rolls to a new worker-hash name, with the 1.5 defaults.
    with_images(graph, OLD_RUNTIME, NEW_RUNTIME)
    ops = preview_ops(stack)
    assert "create" in ops.values() or "update" in ops.values(), ops
    run_up(stack)
    with kube_client(cluster) as kube:
        after = workloads(kube, namespace)
        worker = [n for n in after if "worker" in n]
        assert len(worker) == 1 and worker[0] not in workloads_before, (workloads_before, after)
        (deployment,) = [
            d for d in kube.list("apps/v1", "Deployment", namespace) if d["metadata"]["name"] in worker
        ]
        (main,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "main"]
        env = {e["name"]: e.get("value") for e in main.get("env") or []}
        assert env["DYN_HEALTH_CHECK_ENABLED"] == "true"
        assert main["livenessProbe"]["failureThreshold"] == 3
        assert main["image"].endswith(f":{NEW_RUNTIME}")
    destroy_lines: list[str] = []
    assert stack.destroy(on_output=destroy_lines.append).summary.result == "succeeded", destroy_lines[-TAIL:]
    stack.workspace.remove_stack("upgrade")


def test_baseline_is_in_this_history() -> None:
    """The upgrade test reads BASELINE from git: a clone without it fails, it does not skip."""
    found = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{BASELINE}^{{commit}}"])
    assert found.returncode == 0, f"baseline commit {BASELINE} missing from this clone's history"
