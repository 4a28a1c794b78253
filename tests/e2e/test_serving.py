"""A deployed graph serves requests: `pulumi up` on the local control plane, then every pod of the
graph that kwok runs is started as a process of NVIDIA's Dynamo runtime (frontend and mocker engine,
CPU only) with its pod's service-account token as its only credential; requests go to the frontend.
Discovery is Kubernetes discovery, as rendered: workers apply DynamoWorkerMetadata objects (the CRD
the platform layer installs), the frontend watches them and the EndpointSlices.

Each proof runs per runtime release (`release`): the graph's images name it, so the render applies
that release's gates (from 1.5.0: canary health checks on), and the harness runs its pods on it."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from pulumi import automation as auto

from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient
from tests import wait
from tests.conftest import REPO
from tests.e2e.conftest import GRAPHS
from tests.integration.conftest import copy_project, make_stack, unique
from tools import dynamo_runtime
from tools.localcluster import LocalCluster
from tools.podprocs import PodProcess, PodProcesses
from tools.serving import HARNESS_USER_AGENT, Served, chat, models, release_of, served, serving

WORKER_METADATA = ("nvidia.com/v1alpha1", "DynamoWorkerMetadata")
WORKER_METADATA_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "dynamoworkermetadatas.nvidia.com"},
}
# The field manager the runtime applies its DynamoWorkerMetadata with.
RUNTIME_FIELD_MANAGER = "dynamo-worker"
# Requests the frontend handled per worker, from each worker's system port.
REQUESTS_METRIC = re.compile(r"^dynamo_component_requests_total\{([^}]*)\}\s+([0-9.e+]+)$", re.M)
# Requests counted across the workers of a scaled component.
LOAD_REQUESTS = 20
# Bounded waits of the harness.
DISCOVERY_TIMEOUT_S = 60.0
# How often a condition on the pods is looked at.
POLL_S = 0.25
# Well past the discovery daemon's debounce: a model that shows up after it would have by then.
DEBOUNCE_WINDOW_S = 3.0
# Well past the discovery daemon's retries: a frontend that would give up has by then.
RETRIES_WINDOW_S = 5.0
# The Dynamo images of the graphs, whose tags the tests set to the release under test.
DYNAMO_IMAGE = re.compile(r"(nvcr\.io/nvidia/ai-dynamo/[a-z0-9-]+):[0-9][0-9A-Za-z.+-]*")
# The workers' canary health checks: on from runtime 1.5.0 (the render's CanaryHealthChecks gate).
CANARY_FROM = "1.5.0"
# What the 1.6 frontend's discovery daemon logs while it cannot list DynamoWorkerMetadata.
FRONTEND_LIST_ERROR = "DynamoWorkerMetadata CR reflector error"
# The model mocker-agg's worker serves (its --model-name).
MODEL_NAME = "tiny-chat"
# What a worker's runtime logs when it runs canary health checks.
HEALTH_CHECK_MANAGER = "Health check manager started"


def with_release(graph: Path, version: str, into: Path) -> Path:
    """A copy of `graph` (in folder `into`) whose Dynamo images are tagged `version`."""
    into.mkdir(parents=True, exist_ok=True)
    copy = into / graph.name
    copy.write_text(DYNAMO_IMAGE.sub(rf"\g<1>:{version}", graph.read_text()))
    return copy


@pytest.fixture(params=list(dynamo_runtime.RELEASES))
def release(request: pytest.FixtureRequest) -> str:
    """The Dynamo runtime release under test: its images in the graph, its runtime in the harness."""
    version: str = request.param
    started = time.monotonic()
    dynamo_runtime.ensure(version)
    print(f"\n[e2e] dynamo runtime {version} ready in {time.monotonic() - started:.1f}s "
          f"(installed in {dynamo_runtime.setup_seconds(version)}s)")  # fmt: skip
    return version


def canary_on(version: str) -> bool:
    return tuple(map(int, version.split("."))) >= tuple(map(int, CANARY_FROM.split(".")))


def assert_release(pods: PodProcesses, version: str) -> None:
    """Every process runs the release's runtime; its workers run canary health checks from 1.5.0 on
    (the runtime reports reading the setting and starts its health-check manager), not before."""
    canary = canary_on(version)
    for p in pods.running():
        assert release_of(p) == version, (p.pod, p.image, p.bin)
        if "DYN_SYSTEM_PORT" not in p.env:
            continue
        assert p.env["DYN_HEALTH_CHECK_ENABLED"] == str(canary).lower(), (p.pod, p.env)
        wait_until(lambda p=p: "Registered endpoint" in p.log.read_text(), DISCOVERY_TIMEOUT_S,
                   f"{p.pod}'s generate endpoint", pods)  # fmt: skip
        log = p.log.read_text()
        assert ("health_check_enabled=true" in log) == canary, log[-3000:]
        assert (HEALTH_CHECK_MANAGER in log) == canary, log[-3000:]


def probes_pass(kube: KubeClient, namespace: str, proc: PodProcess) -> dict[str, int]:
    """What a kubelet's HTTP probes of the pod's main container get: probe -> status code."""
    pod = kube.get(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": proc.pod, "namespace": namespace}}
    )
    assert pod is not None
    (main,) = [c for c in pod["spec"]["containers"] if c["name"] == "main"]
    codes = {}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        get = (main.get(probe) or {}).get("httpGet")
        if get:
            url = f"http://127.0.0.1:{proc.ports[str(get['port'])]}{get['path']}"
            codes[f"{probe} {get['path']}"] = httpx.get(url, timeout=5).status_code
    return codes


def quiet(_: str) -> None:
    pass


@contextmanager
def deployed(
    tmp_path: Path,
    cluster: LocalCluster,
    graph: Path,
    namespace: str,
    config: Mapping[str, str] | None = None,
) -> Iterator[tuple[auto.Stack, Path]]:
    """A stack deploying a copy of `graph` (returned, to edit and `up` again), with these extra stack
    config values; destroyed at the end."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    project = copy_project(tmp_path)
    copy = project / "graphs" / graph.name
    copy.parent.mkdir()
    copy.write_text(graph.read_text())
    stack = make_stack(project, cluster, unique("serve"), namespace, [copy])
    for key, value in (config or {}).items():
        stack.set_config(key, auto.ConfigValue(value))
    try:
        result = stack.up(on_output=quiet)
        assert result.summary.result == "succeeded"
        yield stack, copy
    finally:
        stack.destroy(on_output=quiet)


@dataclass(frozen=True)
class Deployed:
    """A graph deployed by its own stack and served: the stack, the graph file it deploys (edit it and
    `up` again), its namespace, and the served graph."""

    stack: auto.Stack
    graph: Path
    namespace: str
    live: Served


Serve = Callable[[Path, str], AbstractContextManager[Deployed]]


@pytest.fixture()
def serve(
    tmp_path: Path,
    cluster: LocalCluster,
    harness_kube: KubeClient,
    conn: connection.Connection,
    release: str,
) -> Serve:
    """`with serve(graph_file, graph_name) as d:` deploys the graph with the release's images, runs its
    pods on the release's runtime, waits for its model."""

    @contextmanager
    def run(graph: Path, name: str) -> Iterator[Deployed]:
        ns = unique("serve")
        graph = with_release(graph, release, tmp_path / "graphs")
        with (
            deployed(tmp_path, cluster, graph, ns) as (stack, copy),
            served(harness_kube, conn, namespace=ns, graph=name, root=tmp_path / "pods") as live,
        ):
            assert_release(live.pods, release)
            yield Deployed(stack, copy, ns, live)

    return run


def set_replicas(graph: Path, component: str, replicas: int) -> None:
    doc = yaml.safe_load(graph.read_text())
    doc["spec"]["services"][component]["replicas"] = replicas
    graph.write_text(yaml.safe_dump(doc, sort_keys=False))


def set_frontend_env(graph: Path, name: str, value: str) -> None:
    doc = yaml.safe_load(graph.read_text())
    doc["spec"]["services"]["Frontend"].setdefault("envs", []).append({"name": name, "value": value})
    graph.write_text(yaml.safe_dump(doc, sort_keys=False))


def served_requests(proc: PodProcess) -> float:
    """Requests a worker handled on its `generate` endpoint (its own Prometheus metrics)."""
    text = httpx.get(f"http://127.0.0.1:{proc.ports['system']}/metrics", timeout=5).text
    return sum(
        float(value) for labels, value in REQUESTS_METRIC.findall(text) if 'endpoint="generate"' in labels
    )


def wait_until(predicate: Callable[[], object], timeout: float, what: str, pods: PodProcesses) -> None:
    """Wait for `predicate`; on timeout the pods' logs are in the failure."""
    wait.wait_until(predicate, timeout, POLL_S, what=what, detail=pods.logs)


def group_alive(proc: PodProcess) -> bool:
    """Whether anything of the process's group still runs (children it may have left)."""
    assert proc.popen is not None
    try:
        os.killpg(proc.popen.pid, 0)
    except ProcessLookupError:
        return False
    return True


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def metadata_names(kube: KubeClient, namespace: str) -> set[str]:
    return {o["metadata"]["name"] for o in kube.list(*WORKER_METADATA, namespace)}


def worker_pods(kube: KubeClient, namespace: str, component: str) -> set[str]:
    return {
        p["metadata"]["name"]
        for p in kube.list("v1", "Pod", namespace, label_selector=f"nvidia.com/dynamo-component={component}")
        if not p["metadata"].get("deletionTimestamp")
    }


@pytest.fixture()
def conn(cluster: LocalCluster) -> connection.Connection:
    return connection.load(str(cluster.kubeconfig))


def test_aggregated_graph_serves_and_scales(serve: Serve, harness_kube: KubeClient, release: str) -> None:
    with serve(REPO / "examples" / "mocker-agg.yaml", "mocker-agg") as d:
        stack, graph, ns = d.stack, d.graph, d.namespace
        pods, url, model = d.live.pods, d.live.url, d.live.model
        assert model == MODEL_NAME, model
        answer = chat(url, model, max_tokens=8)
        assert answer.completion_tokens == 8, answer
        assert len(answer.text.split()) == 8, answer
        # The worker passes the probes a kubelet would run (from 1.5.0 with canary health checks on).
        (proc,) = pods.running("MockerWorker")
        codes = probes_pass(harness_kube, ns, proc)
        print(f"\n[e2e] {release} worker probes: {codes}")
        assert set(codes) == {"startupProbe /live", "livenessProbe /live", "readinessProbe /health"}, codes
        assert set(codes.values()) == {200}, codes

        # Discovery went through the cluster: one DynamoWorkerMetadata per worker pod, applied by
        # the runtime with the pod's own token and owned by its pod.
        (worker,) = worker_pods(harness_kube, ns, "MockerWorker")
        dwm = harness_kube.get({"apiVersion": WORKER_METADATA[0], "kind": WORKER_METADATA[1],
                                "metadata": {"name": worker, "namespace": ns}})  # fmt: skip
        assert dwm is not None, pods.logs()
        assert {m["manager"] for m in dwm["metadata"]["managedFields"]} == {RUNTIME_FIELD_MANAGER}
        (owner,) = dwm["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"]) == ("Pod", worker)

        # Two replicas: both discovered, both take requests.
        set_replicas(graph, "MockerWorker", 2)
        assert stack.up(on_output=quiet).summary.result == "succeeded"
        wait_until(
            lambda: len(pods.running("MockerWorker")) == 2, DISCOVERY_TIMEOUT_S, "a second worker", pods
        )
        workers = worker_pods(harness_kube, ns, "MockerWorker")
        wait_until(lambda: workers <= metadata_names(harness_kube, ns), DISCOVERY_TIMEOUT_S,
                   "both workers' DynamoWorkerMetadata", pods)  # fmt: skip
        procs = pods.running("MockerWorker")
        before = {p.pod: served_requests(p) for p in procs}

        def both_served() -> bool:
            chat(url, model, max_tokens=2)
            return all(served_requests(p) > before[p.pod] for p in procs)

        wait_until(both_served, DISCOVERY_TIMEOUT_S, "requests on both workers", pods)
        before = {p.pod: served_requests(p) for p in procs}
        for _ in range(LOAD_REQUESTS):
            chat(url, model, max_tokens=2)
        counts = {p.pod: served_requests(p) - before[p.pod] for p in procs}
        print(f"\n[e2e] {LOAD_REQUESTS} requests with 2 worker replicas, per worker: {counts}")
        assert sum(counts.values()) == LOAD_REQUESTS and min(counts.values()) > 0, counts

        # Back to one: the removed pod's DynamoWorkerMetadata goes with it (garbage-collected
        # through its owner reference), and no request fails after it is gone.
        set_replicas(graph, "MockerWorker", 1)
        assert stack.up(on_output=quiet).summary.result == "succeeded"
        wait_until(lambda: len(worker_pods(harness_kube, ns, "MockerWorker")) == 1, DISCOVERY_TIMEOUT_S,
                   "one worker pod", pods)  # fmt: skip
        (kept,) = worker_pods(harness_kube, ns, "MockerWorker")
        (removed,) = workers - {kept}
        wait_until(lambda: removed not in metadata_names(harness_kube, ns), DISCOVERY_TIMEOUT_S,
                   f"DynamoWorkerMetadata {removed} to be garbage-collected", pods)  # fmt: skip
        assert kept in metadata_names(harness_kube, ns)
        wait_until(lambda: len(pods.running("MockerWorker")) == 1, DISCOVERY_TIMEOUT_S, "one worker", pods)
        failures = []
        for _ in range(LOAD_REQUESTS):
            try:
                chat(url, model, max_tokens=2)
            except (RuntimeError, httpx.HTTPError) as e:
                failures.append(str(e))
        assert failures == [], failures
    # Every process the harness started is gone (the block stops them, also on failure).
    assert pods.history and not [p.pod for p in pods.history if p.alive() or group_alive(p)]


def test_disaggregated_graph_prefills_on_the_prefill_worker(serve: Serve) -> None:
    with serve(GRAPHS / "mocker-disagg.yaml", "mocker-disagg") as d:
        pods, url, model = d.live.pods, d.live.url, d.live.model
        (prefill,) = pods.running("prefill")
        (decode,) = pods.running("decode")

        def prefill_used() -> bool:
            answer = chat(url, model, max_tokens=6)
            assert answer.completion_tokens == 6, answer
            return served_requests(prefill) > 0

        wait_until(prefill_used, DISCOVERY_TIMEOUT_S, "a request prefilled by the prefill worker", pods)
        assert served_requests(decode) > 0


def test_kv_router_serves(serve: Serve, tmp_path: Path) -> None:
    graph = tmp_path / "kv" / "mocker-kv.yaml"
    graph.parent.mkdir()
    graph.write_text((REPO / "examples" / "mocker-agg.yaml").read_text())
    set_frontend_env(graph, "DYN_ROUTER_MODE", "kv")
    with serve(graph, "mocker-agg") as d:
        pods, url, model = d.live.pods, d.live.url, d.live.model
        for _ in range(3):
            answer = chat(url, model, prompt="the quick brown fox jumps over the lazy dog", max_tokens=5)
            assert answer.completion_tokens == 5, answer
        (frontend,) = pods.running("Frontend")
        assert frontend.env["DYN_ROUTER_MODE"] == "kv"
        assert "KV Routing initialized" in frontend.log.read_text(), frontend.tail()


def test_without_the_worker_metadata_crd_nothing_serves(tmp_path: Path, release: str) -> None:
    """Negative control, on a cluster of its own: the graph deployed as usual, then the
    DynamoWorkerMetadata CRD removed (a cluster where nobody installed it). The worker cannot
    register (the runtime's own error, a 404 from the API server) and the frontend finds no model:
    1.4.0's frontend answers with no model; 1.6.1's waits for its discovery daemon's first list of
    DynamoWorkerMetadata (a 404 too) and never opens its HTTP port."""
    own = LocalCluster(tmp_path / "cluster")
    own.start()
    conn = connection.load(str(own.kubeconfig))
    try:
        ns = unique("serve-nocrd")
        with (
            deployed(
                tmp_path / "stack",
                own,
                with_release(REPO / "examples" / "mocker-agg.yaml", release, tmp_path / "graphs"),
                ns,
            ),
            KubeClient(conn, HARNESS_USER_AGENT) as kube,
        ):
            kube.delete(WORKER_METADATA_CRD)
            assert kube.wait_deleted(WORKER_METADATA_CRD, timeout=30)
            with serving(
                kube,
                conn,
                namespace=ns,
                graph="mocker-agg",
                root=tmp_path / "pods",
                model_claim="model-store",
            ) as pods:
                (worker,) = pods.running("MockerWorker")
                wait_until(lambda: "Failed to apply DynamoWorkerMetadata" in worker.tail(400), DISCOVERY_TIMEOUT_S,
                           "the worker's discovery error", pods)  # fmt: skip
                errors = [
                    line
                    for line in worker.tail(400).splitlines()
                    if "Failed to apply DynamoWorkerMetadata" in line
                ]
                assert re.search(r"404 (page )?not found", errors[0], re.I), errors[0]
                url = pods.url("Frontend", "http")
                if release == dynamo_runtime.DYNAMO_VERSION:
                    wait_until(lambda: answers(f"{url}/v1/models"), DISCOVERY_TIMEOUT_S, "the frontend", pods)
                    wait.hold_for(DEBOUNCE_WINDOW_S, "the frontend discovers no model it could not have")
                    assert models(url) == [], "the frontend lists a model it could not have discovered"
                    with pytest.raises(RuntimeError, match="HTTP 404"):
                        chat(url, MODEL_NAME)
                else:
                    (frontend,) = pods.running("Frontend")
                    wait_until(lambda: FRONTEND_LIST_ERROR in frontend.tail(400), DISCOVERY_TIMEOUT_S,
                               "the frontend's discovery error", pods)  # fmt: skip
                    errors = [line for line in frontend.tail(400).splitlines() if FRONTEND_LIST_ERROR in line]
                    assert re.search(r"404 (page )?not found", errors[0], re.I), errors[0]
                    wait.hold_for(RETRIES_WINDOW_S, "the frontend stays alive and serves nothing")
                    assert frontend.alive() and not answers(f"{url}/v1/models"), frontend.tail(40)
                    with pytest.raises(httpx.TransportError):
                        chat(url, MODEL_NAME)
    finally:
        own.stop()
