"""A failed or interrupted `pulumi up` converges on the next run, with no orphaned or duplicated
objects: the `pulumi` process killed mid-apply, and the API server stopped mid-apply."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from pulumi import automation as auto

from benchmarks.faults import kill_plugins_of
from dynamo_infra.kube.client import KubeClient
from tests.conftest import DATA
from tests.integration.harness import make_stack, unique
from tests.wait import wait_until
from tools.localcluster import LocalCluster

# A worker that cannot schedule until the selector is removed: `up` is mid-await for a long time.
GRAPH = (DATA / "graphs" / "interrupt.yaml").read_text()
# The names of the worker's Deployment and pods begin so.
WORKER = "intr-worker-"
# Seconds `up` may take to apply the graph's objects (and the scheduler to place its pods).
APPLY_S = 90


def setup_stack(project: Path, cluster: LocalCluster, pool: str) -> tuple[auto.Stack, Path, str]:
    ns = unique("intr")
    graph = project / "examples" / "intr.yaml"
    graph.write_text(GRAPH.replace("NODE_POOL", pool))
    stack = make_stack(project, cluster, "intr", ns, [graph], **{"await": {"timeoutSeconds": 120}})
    return stack, graph, ns


def cli_up(project: Path) -> subprocess.Popen[str]:
    """`pulumi up` as a user runs it (its own process group, so it can be killed whole)."""
    env = {**os.environ, "PULUMI_BACKEND_URL": f"file://{project.parent / 'state'}"}
    return subprocess.Popen(
        ["pulumi", "up", "--yes", "--non-interactive", "--stack", "intr", "--skip-preview"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip


def names(kube: KubeClient, ns: str, api_version: str, kind: str) -> list[str]:
    return sorted(o["metadata"]["name"] for o in kube.list(api_version, kind, ns))


def worker_applied(kube: KubeClient, ns: str) -> None:
    """Wait until the worker's Deployment is applied (`up` is past the apply of the graph's objects)."""
    wait_until(
        lambda: any(n.startswith(WORKER) for n in names(kube, ns, "apps/v1", "Deployment")),
        APPLY_S,
        what="the worker's Deployment",
    )


def worker_unschedulable(kube: KubeClient, ns: str) -> bool:
    """Whether the scheduler reported the worker's pod unschedulable (`up` awaits it from then on)."""
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for pod in kube.list("v1", "Pod", ns)
        if pod["metadata"]["name"].startswith(WORKER)
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def converge_and_check(stack: auto.Stack, graph: Path, kube: KubeClient, ns: str) -> None:
    graph.write_text(GRAPH.replace("        nodeSelector:\n          pool: NODE_POOL\n", ""))
    up = stack.up(on_output=lambda _: None)
    assert up.summary.result == "succeeded"
    assert up.outputs["graphs"].value["intr"]["state"] == "successful"
    deployments = names(kube, ns, "apps/v1", "Deployment")
    assert len(deployments) == 2 and deployments[0] == "intr-frontend", deployments
    assert names(kube, ns, "v1", "Service") == sorted(["intr-frontend", deployments[1]])
    again = stack.preview(on_output=lambda _: None)
    assert set(again.change_summary) == {"same"}, again.change_summary
    stack.destroy(on_output=lambda _: None)
    assert kube.list("apps/v1", "Deployment", ns) == []


def test_killed_pulumi_up_converges(cluster: LocalCluster, kube: KubeClient, project: Path) -> None:
    stack, graph, ns = setup_stack(project, cluster, "nowhere")
    proc = cli_up(project)
    # Kill it while it awaits the worker that cannot schedule (its Deployment already applied).
    worker_applied(kube, ns)
    wait_until(lambda: worker_unschedulable(kube, ns), APPLY_S, what="the worker's pod to be unschedulable")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    kill_plugins_of(project)
    # What a user does after a killed run: release the stack lock, then `up` again.
    stack.cancel()
    converge_and_check(stack, graph, kube, ns)


def test_api_server_outage_mid_apply_converges(
    cluster: LocalCluster, kube: KubeClient, project: Path
) -> None:
    stack, graph, ns = setup_stack(project, cluster, "nowhere")
    proc = cli_up(project)
    worker_applied(kube, ns)
    cluster.kill("kube-apiserver")
    try:
        out, _ = proc.communicate(timeout=240)
        assert proc.returncode != 0
        assert "unreachable" in out, out[-2000:]
    finally:
        cluster.restart("kube-apiserver")
    converge_and_check(stack, graph, kube, ns)
