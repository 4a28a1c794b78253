"""A DynamoModel (LoRA adapter) is loaded by the agent into every worker of its base model, including
one that starts after the `up`: the graph deployed with `pulumi up`, its pods run as processes of the
real Dynamo runtime 1.4.0, the agent run as a process that reaches the workers at their EndpointSlice
addresses (`http://<podIP>:9090/v1/loras`) through the harness's pod network (tools/podnet.py).

The mocker engine registers no `load_lora` handler, so the runtime's system server answers every load
with its own error (HTTP 500, "LoRA management not available"); the test shows the agent's calls
reached each worker's real runtime and that the answer is recorded in the DynamoModel's status."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.kube.client import KubeClient
from dynamo_infra.render.runtime import lora
from dynamo_infra.render.runtime.agent import AGENT_NAME, agent_objects
from tests.conftest import REPO
from tests.e2e.conftest import GRAPHS
from tests.e2e.test_serving import Serve, conn, serve, wait_until  # noqa: F401 (fixtures)
from tools import dynamo_runtime
from tools.localcluster import LocalCluster
from tools.podnet import NO_PROXY
from tools.podprocs import PodProcesses

WORKER = "MockerWorker"
# The graph's base model (its worker's modelRef) and the adapter asked for.
BASE_MODEL = "tiny-chat"
ADAPTER = "tiny-chat-lora"
# What the runtime's system server answers a load when the worker registered no LoRA handler.
UNAVAILABLE = "LoRA management not available"
# Bounded waits of the test: kwok marks a new pod ready before its process listens, so the agent's
# first call to it fails and the next comes after the agent's requeue delay (30 s, the operator's).
AGENT_TIMEOUT_S = 75.0


@pytest.fixture()
def release() -> str:
    """The runtime release the LoRA proof runs on (the `serve` fixture's images and processes): the pin's."""
    dynamo_runtime.ensure(dynamo_runtime.DYNAMO_VERSION)
    return dynamo_runtime.DYNAMO_VERSION


def agent_kubeconfig(kube: KubeClient, cluster: LocalCluster, namespace: str, folder: Path) -> Path:
    """The agent's objects as rendered for this namespace (ServiceAccount, Role, RoleBinding; not its
    Deployment), and a kubeconfig holding only its ServiceAccount's token, as in its pod."""
    for obj in agent_objects(namespace, [namespace], "unused"):
        if obj["kind"] != "Deployment":
            kube.apply(obj, manager="e2e")
    token = kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{AGENT_NAME}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )["status"]["token"]
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    (ctx,) = [c for c in config["contexts"] if c["name"] == config["current-context"]]
    config["users"] = [{"name": AGENT_NAME, "user": {"token": token}}]
    ctx["context"]["user"] = AGENT_NAME
    config["contexts"] = [ctx]
    path = folder / "agent-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def agent(
    kubeconfig: Path, namespace: str, pods: PodProcesses, log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """The agent as a process, with what a pod process gets: its own credential only, and the pod
    network as its HTTP proxy."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "KUBECONFIG": str(kubeconfig),
        "HTTP_PROXY": pods.network.url,
        "http_proxy": pods.network.url,
        "NO_PROXY": NO_PROXY,
        "no_proxy": NO_PROXY,
    }
    argv = [sys.executable, "-m", "dynamo_infra.agent", "--namespace", namespace]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def dynamo_model(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": lora.MODEL_API_VERSION,
        "kind": lora.MODEL_KIND,
        "metadata": {"name": "tiny-lora", "namespace": namespace},
        "spec": {
            "modelName": ADAPTER,
            "baseModelName": BASE_MODEL,
            "modelType": "lora",
            "source": {"uri": "file:///models/tiny-chat-lora"},
        },
    }


def test_the_agent_loads_an_adapter_into_a_worker_started_after_the_up(
    serve: Serve,  # noqa: F811 (the fixture imported above)
    cluster: LocalCluster,
    harness_kube: KubeClient,
    tmp_path: Path,
) -> None:
    with serve(GRAPHS / "mocker-lora.yaml", "mocker-lora") as d:
        ns, pods = d.namespace, d.live.pods
        log = tmp_path / "agent.log"
        model = dynamo_model(ns)

        def logs() -> str:
            return f"{pods.logs()}\n--- agent\n{log.read_text(errors='replace')[-4000:]}"

        def status() -> dict[str, Any]:
            return (harness_kube.get(model) or {}).get("status") or {}

        def answer(pod: str) -> str:
            """The worker's own answer to the agent's load, as the EndpointsReady message records it."""
            message = next(
                (c["message"] for c in status().get("conditions") or [] if c["type"] == "EndpointsReady"), ""
            )
            return next((part for part in message.split("; ") if part.startswith(f"{pod}: ")), "")

        def answered(pod: str) -> bool:
            names = [e.get("podName") for e in status().get("endpoints") or []]
            return pod in names and UNAVAILABLE in answer(pod)

        def worker_ips() -> dict[str, str]:
            found = harness_kube.list("v1", "Pod", ns, label_selector=f"nvidia.com/dynamo-component={WORKER}")
            return {p["metadata"]["name"]: p["status"].get("podIP", "") for p in found}

        def loads_answered(ip: str) -> list[int]:
            return [
                code
                for method, where, code in pods.network.requests
                if method == "POST" and where == f"{ip}:9090/v1/loras"
            ]

        kubeconfig = agent_kubeconfig(harness_kube, cluster, ns, tmp_path)
        with agent(kubeconfig, ns, pods, log) as proc:
            started = time.monotonic()
            harness_kube.apply(model, manager="e2e")
            ((first, first_ip),) = worker_ips().items()
            wait_until(lambda: answered(first), AGENT_TIMEOUT_S, f"the agent's load into {first}", pods)
            first_s = time.monotonic() - started
            print(f"\n[e2e] {answer(first)}")
            assert answer(first).startswith(f"{first}: load LoRA failed with status 500: "), answer(first)
            # The call went to the pod's address and was answered by its runtime (not the pod network).
            assert 500 in loads_answered(first_ip), (pods.network.requests, logs())
            live = harness_kube.get(model)
            assert live is not None
            assert live["metadata"]["finalizers"] == [lora.FINALIZER]
            managers = {
                m["manager"] for m in live["metadata"]["managedFields"] if m.get("subresource") == "status"
            }
            assert managers == {"dynamo-infra-agent"}, live["metadata"]["managedFields"]
            st = status()
            assert (st["totalEndpoints"], st["readyEndpoints"]) == (1, 0), st
            assert st["endpoints"] == [
                {"address": f"http://{first_ip}:9090", "podName": first, "ready": False}
            ]

            # A second worker, started after the `up` (the Deployment scaled as an autoscaler would).
            (deployment,) = harness_kube.list(
                "apps/v1", "Deployment", ns, label_selector=f"nvidia.com/dynamo-component={WORKER}"
            )
            scaled = time.monotonic()
            harness_kube.set_scale(deployment, 2)
            wait_until(
                lambda: len(pods.running(WORKER)) == 2, AGENT_TIMEOUT_S, "a second worker process", pods
            )
            (second,) = set(worker_ips()) - {first}
            second_ip = worker_ips()[second]
            wait_until(lambda: answered(second), AGENT_TIMEOUT_S, f"the agent's load into {second}", pods)
            second_s = time.monotonic() - scaled
            assert answer(second).startswith(f"{second}: load LoRA failed with status 500: "), answer(second)
            assert 500 in loads_answered(second_ip), (pods.network.requests, logs())
            st = status()
            assert sorted(e["podName"] for e in st["endpoints"]) == sorted([first, second]), st
            assert (st["totalEndpoints"], st["readyEndpoints"]) == (2, 0), st
            memory = rss_mib(proc.pid)

            # Deleted: the agent asks every worker to unload, then lets the object go.
            harness_kube.delete(model, propagation="Background")
            assert harness_kube.wait_deleted(model, timeout=AGENT_TIMEOUT_S), logs()
            unloads = {where for method, where, _ in pods.network.requests if method == "DELETE"}
            assert unloads == {f"{ip}:9090/v1/loras/{ADAPTER}" for ip in (first_ip, second_ip)}, unloads
            assert proc.poll() is None, logs()
        print(
            f"\n[e2e] LoRA: first worker answered {first_s:.1f}s after the DynamoModel was created, the "
            f"scaled-up worker {second_s:.1f}s after the scale; agent RSS {memory:.0f} MiB"
        )
