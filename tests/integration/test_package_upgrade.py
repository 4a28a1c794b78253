"""Upgrading this package under a running graph, through the real Pulumi CLI on the local control plane.

A stack deployed by the package as it was before the Dynamo 1.6 work (the last landed commit,
`BASELINE`, read from this repository's history) runs two graphs: one with 1.4.0 images, one with 1.6.1
images (which that package rendered as the operator at our pin). The same stack is then previewed and updated
by the package of this checkout: the graphs' workloads preview `same` (a running generation an earlier
package rendered keeps running: `render.graph.keep_running_generation`), the Dynamo CRDs move forward
to the 1.6 set (v1beta1 with `roles`) and into one resource of the platform (their pulumi-kubernetes
resources leave the stack retained: the same CRD objects, never deleted), and not one pod of the graph is
replaced. Then the graph's
workers change (1.6.1 images, another engine argument): the worker rolls to a new worker-hash name with
the 1.5 defaults, as the 1.6 operator rolls it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi import automation as auto

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.graph import COMPONENT_TYPE
from dynamo_infra.components.platform_plan import CLUSTER_FIELD_MANAGER, crd_stub, installable
from dynamo_infra.kube.client import KubeClient
from tests.conftest import REPO
from tests.integration.harness import TAIL, graphs_kubeconfig, kube_client, unique
from tools.localcluster import LocalCluster

# The last commit landed before the Dynamo 1.5/1.6 rendering: what existing stacks were made with.
BASELINE = "817d0a9bd78e9ff70c2fa80a9a983e967b1a8486"
GRAPH = "examples/mocker-agg.yaml"
# The same graph on 1.6.1 images, deployed beside it.
GRAPH_16 = "examples/mocker-agg-16.yaml"
GRAPH_16_NAME = "mocker-agg-16"
DGD_CRD = "dynamographdeployments.nvidia.com"
# The tag the graph's workers move to, and the baseline graph's own.
NEW_RUNTIME = "1.6.1"
BASELINE_RUNTIME = "1.4.0"
# The worker's engine argument the change also touches (mocker speed-up ratio).
SPEEDUP = ('--speedup-ratio\n            - "10"', '--speedup-ratio\n            - "20"')


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


def baseline_crds(cluster: LocalCluster, tree: Path) -> None:
    """The cluster as the baseline package leaves it: its Dynamo CRDs, applied (forced) under the
    platform's field manager over whatever earlier tests of the session applied there."""
    for path in sorted((tree / "stacks" / "crds" / "dynamo").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                cluster.apply(installable(doc), field_manager=CLUSTER_FIELD_MANAGER)
                cluster.wait_established(doc["metadata"]["name"])


def with_images(graph: Path, old: str, new: str) -> None:
    graph.write_text(graph.read_text().replace(f":{old}", f":{new}"))


def lay_graphs(project: Path, tree: Path) -> list[Path]:
    """The baseline's mocker graph as it is (1.4.0 images), and a copy on 1.6.1 images with its own
    name and claim (`GRAPH_16`)."""
    text = (tree / GRAPH).read_text()
    assert f":{BASELINE_RUNTIME}" in text and "name: mocker-agg\n" in text
    old, new = project / GRAPH, project / GRAPH_16
    old.write_text(text)
    new.write_text(
        text.replace(f":{BASELINE_RUNTIME}", f":{NEW_RUNTIME}")
        .replace("name: mocker-agg\n", f"name: {GRAPH_16_NAME}\n")
        .replace("model-store", "model-store-16")
    )
    return [old, new]


def changed_workers(graph: Path) -> None:
    """The graph's workers changed: images to `NEW_RUNTIME` and another engine argument."""
    with_images(graph, BASELINE_RUNTIME, NEW_RUNTIME)
    text = graph.read_text()
    assert SPEEDUP[0] in text
    graph.write_text(text.replace(*SPEEDUP))


def worker_main(kube: KubeClient, namespace: str, graph: str) -> tuple[str, Manifest]:
    """The name and main container of the graph's worker Deployment."""
    (deployment,) = [
        d
        for d in kube.list("apps/v1", "Deployment", namespace)
        if d["metadata"]["name"].startswith(f"{graph}-mockerworker")
    ]
    (main,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "main"]
    return deployment["metadata"]["name"], main


def test_upgrading_the_package_restarts_nothing_and_moves_the_crds_forward(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    try:
        old = baseline_tree(tmp_path / "baseline")
    except subprocess.CalledProcessError as e:
        pytest.fail(f"this clone lacks the baseline commit {BASELINE} (a shallow clone?): {e.stderr!r}")
    # The cluster as the baseline package left it: its Dynamo CRDs, not a newer package's.
    baseline_crds(cluster, old)
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "state").mkdir()
    lay_project(project, old)
    graphs = lay_graphs(project, old)
    namespace = unique("upgrade")

    # The baseline package deploys both graphs (its code first on the program's and providers' path).
    stack = stack_of(project, "upgrade", {"PYTHONPATH": str(old)})
    kubeconfig = graphs_kubeconfig(cluster, namespace, tmp_path)
    cluster_options = {"namespace": namespace, "await": {"timeoutSeconds": 180}}
    stack.set_all_config(
        {
            "dynamo-infra:kubeconfigPath": auto.ConfigValue(str(cluster.kubeconfig)),
            "dynamo-infra:graphKubeconfigPath": auto.ConfigValue(str(kubeconfig)),
            "dynamo-infra:cluster": auto.ConfigValue(json.dumps(cluster_options)),
            "dynamo-infra:graphs": auto.ConfigValue(json.dumps([str(g) for g in graphs])),
        }
    )
    run_up(stack)
    with kube_client(cluster) as kube:
        pods_before, workloads_before = pods(kube, namespace), workloads(kube, namespace)
        assert len(workloads_before) == 4, workloads_before
        old_crd = kube.get(crd_stub(DGD_CRD))
        assert old_crd is not None and "roles" not in v1beta1_component_fields(old_crd)
        records_before = kube.list("nvidia.com/v1beta1", "DynamoGraphDeployment", namespace)
        assert len(records_before) == 2, records_before

    # This checkout's package: the same stack, its program and CRDs, no baseline on the path.
    lay_project(project, REPO)
    lay_graphs(project, old)
    stack = stack_of(project, "upgrade", {})
    ops = preview_ops(stack)
    former_components = {
        urn.rsplit("::", 1)[1]: op
        for urn, op in ops.items()
        if urn.rsplit("::", 1)[0].endswith(COMPONENT_TYPE)
    }
    changed = {
        urn.rsplit("::", 1)[1]: op
        for urn, op in ops.items()
        if op != "same"
        and "CustomResourceDefinition" not in urn
        and not urn.rsplit("::", 1)[0].endswith(COMPONENT_TYPE)
    }
    # The 1.6.1 graph's record now carries the status the 1.6 planner reads (a record, not a pod); the
    # platform's CRDs are one new resource, and their pulumi-kubernetes resources leave the stack.
    # Each graph's admission is kept by its shared objects' workload now (a `same`: the graph is no change
    # to it), and its resource of its own leaves the stack.
    assert changed == {
        f"{GRAPH_16_NAME}-records": "update",
        "platform-crds": "create",
        "mocker-agg-admission": "delete",
        f"{GRAPH_16_NAME}-admission": "delete",
    }, changed
    # Each component is its own dynamic resource now (the workload, aliased from under its former
    # component resource: `same`); the component resources leave the stack.
    assert len(former_components) == 4 and set(former_components.values()) == {"delete"}, former_components
    crd_ops = {urn.rsplit("::", 1)[1]: op for urn, op in ops.items() if "CustomResourceDefinition" in urn}
    assert crd_ops and set(crd_ops.values()) == {"delete"}, crd_ops
    run_up(stack)
    with kube_client(cluster) as kube:
        assert pods(kube, namespace) == pods_before, "a pod of a running graph was replaced"
        assert workloads(kube, namespace) == workloads_before, "a workload of a running graph changed"
        new_crd = kube.get(crd_stub(DGD_CRD))
        assert new_crd is not None and "roles" in v1beta1_component_fields(new_crd)
        # The same CRD object, updated in place (retained, not deleted): the graphs' records are still there.
        assert new_crd["metadata"]["uid"] == old_crd["metadata"]["uid"]
        records = kube.list("nvidia.com/v1beta1", "DynamoGraphDeployment", namespace)
        assert [r["metadata"]["uid"] for r in records] == [r["metadata"]["uid"] for r in records_before]
        _, held = worker_main(kube, namespace, GRAPH_16_NAME)
        assert {e["name"]: e.get("value") for e in held["env"]}["DYN_HEALTH_CHECK_ENABLED"] == "false"
    assert set(preview_ops(stack).values()) == {"same"}
    kept = {
        r["urn"].rsplit("::", 1)[1]: r["inputs"].get("admission", {}).get("graph", {}).get("metadata")
        for r in stack.export_stack().deployment["resources"]
        if r["urn"].endswith("-shared")
    }
    assert kept == {f"{g}-shared": {"name": g} for g in ("mocker-agg", GRAPH_16_NAME)}, kept

    # The graphs' workers change: each worker rolls to a new worker-hash name, with the 1.5 defaults.
    for graph in graphs:
        changed_workers(graph)
    run_up(stack)
    with kube_client(cluster) as kube:
        for graph_name in ("mocker-agg", GRAPH_16_NAME):
            name, main = worker_main(kube, namespace, graph_name)
            assert name not in workloads_before, (name, workloads_before)
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
