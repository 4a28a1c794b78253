"""Dynamo's Planner scales a graph deployed without the operator, with no `pulumi up`.

Per runtime release (1.4.0 and 1.6.1: the graph's images name it, the harness runs it). The stack
deploys the graph and the dynamo-infra agent (`dynamo-infra:agent`). The real `dynamo.planner` runs as a process of its pod (its service account's token its only
credential), reads the graph's DynamoGraphDeployment record and the forward-pass metrics the mocker
decode worker publishes on the event plane. Under a bounded load its KV cache fills, the planner asks
for a second decode worker through the decode adapter's (DGDSA's) scale subresource, the agent — run
as a process from its rendered pod spec — carries that to the DGD record and to the worker
Deployment's scale, kwok runs the new pod, its process registers, and the new worker serves requests. Pulumi then neither undoes nor fights the planner's
choice: a preview shows no change and an `up` keeps two decode workers. From 1.6.0 the planner reads
the component's GPU shape from the DGD record's status (`gpusPerEngine`, `gpusPerReplica`, current
only while `observedGeneration` equals `generation`), which our records carry live; its load mode never
calls into the aisimulate_core stand-in.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.render.runtime.agent import AGENT_LABELS, AGENT_NAME
from tests.e2e.conftest import GRAPHS
from tests.e2e.test_serving import (  # noqa: F401 (fixtures)
    conn,
    deployed,
    quiet,
    release,
    served_requests,
    wait_until,
    with_release,
)
from tests.integration.harness import unique
from tools import dynamo_runtime
from tools.localcluster import LocalCluster
from tools.podprocs import PodProcess, PodProcesses
from tools.runtime_standins.aisimulate_core import MARKER as STANDIN_MARKER
from tools.serving import chat, served

GRAPH = GRAPHS / "planner-mocker.yaml"
GRAPH_NAME = "planner-mocker"
DECODE = "decode"
RECORD_API_VERSION = "nvidia.com/v1beta1"
# The agent's image (never pulled: its pod runs as a process of this repository's virtualenv).
AGENT_IMAGE = "ghcr.io/example/dynamo-infra:0.1.0"
# The bounded load: this many concurrent streamed answers of this many tokens, until the test has
# seen what it waits for (at most LOAD_S).
LOAD_CONCURRENCY = 8
LOAD_TOKENS = 400
LOAD_S = 150.0
# A prompt long enough to take a few KV blocks of its own.
PROMPT = " ".join(["the model serves the request of the worker"] * 12)
# What the planner logs with each decision (`base._log_decision_summary`).
DECISION_LOG = "[summary]"
# Bounded waits.
STARTUP_S = 90.0
DECISION_S = 60.0
# How long the planner takes to log a write the API server already shows.
LOG_S = 15.0
SCALE_S = 60.0


def decode_replicas(kube: KubeClient, namespace: str) -> int | None:
    """The decode component's replicas in the graph's DGD record (what the planner patches)."""
    dgd = kube.get(
        {
            "apiVersion": RECORD_API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": GRAPH_NAME, "namespace": namespace},
        }
    )
    for component in ((dgd or {}).get("spec") or {}).get("components") or []:
        if component.get("name") == DECODE:
            return int(component.get("replicas", 1))
    return None


def live_status(kube: KubeClient, namespace: str) -> tuple[object, object]:
    """What `kubectl get dgd,dgdsa` shows of the decode component: its ready replicas in the DGD
    record's status and its DGDSA's `status.replicas` (both written by the agent, not by Pulumi)."""
    dgd = kube.get(
        {
            "apiVersion": RECORD_API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": GRAPH_NAME, "namespace": namespace},
        }
    )
    dgdsa = kube.get(
        {
            "apiVersion": RECORD_API_VERSION,
            "kind": "DynamoGraphDeploymentScalingAdapter",
            "metadata": {"name": f"{GRAPH_NAME}-{DECODE}", "namespace": namespace},
        }
    )
    ready = (((dgd or {}).get("status") or {}).get("components") or {}).get(DECODE, {}).get("readyReplicas")
    return ready, ((dgdsa or {}).get("status") or {}).get("replicas")


def component_status(kube: KubeClient, namespace: str) -> tuple[Manifest, Manifest]:
    """The DGD record's metadata and its decode component's status (what `kubectl get dgd -o yaml` shows)."""
    dgd = kube.get(
        {
            "apiVersion": RECORD_API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": GRAPH_NAME, "namespace": namespace},
        }
    )
    assert dgd is not None
    return dgd, ((dgd.get("status") or {}).get("components") or {}).get(DECODE, {})


def adapter_replicas(kube: KubeClient, namespace: str) -> int | None:
    """The decode component's DGDSA `spec.replicas` (what the planner sets through its scale subresource)."""
    dgdsa = kube.get(
        {
            "apiVersion": RECORD_API_VERSION,
            "kind": "DynamoGraphDeploymentScalingAdapter",
            "metadata": {"name": f"{GRAPH_NAME}-{DECODE}", "namespace": namespace},
        }
    )
    return int(dgdsa["spec"]["replicas"]) if dgdsa else None


def decode_deployment(kube: KubeClient, namespace: str) -> Manifest:
    (deployment,) = kube.list(
        "apps/v1", "Deployment", namespace, label_selector=f"nvidia.com/dynamo-component={DECODE}"
    )
    return deployment


def has_served(proc: PodProcess) -> bool:
    """Whether a worker handled a request (False while its system port is not up yet)."""
    try:
        return served_requests(proc) > 0
    except httpx.TransportError:
        return False


def rss_mib(proc: PodProcess) -> float:
    """The process's resident memory (VmRSS), in MiB."""
    assert proc.popen is not None
    status = Path(f"/proc/{proc.popen.pid}/status").read_text()
    (line,) = [x for x in status.splitlines() if x.startswith("VmRSS:")]
    return int(line.split()[1]) / 1024


@contextmanager
def load(url: str, model: str) -> Iterator[list[str]]:
    """LOAD_CONCURRENCY clients sending long streamed answers until the block ends (at most LOAD_S);
    yields the errors they met."""
    stop = threading.Event()
    errors: list[str] = []
    deadline = time.monotonic() + LOAD_S

    def client() -> None:
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                chat(url, model, prompt=PROMPT, max_tokens=LOAD_TOKENS)
            except (RuntimeError, httpx.HTTPError) as e:
                errors.append(str(e))

    with ThreadPoolExecutor(LOAD_CONCURRENCY) as pool:
        for _ in range(LOAD_CONCURRENCY):
            pool.submit(client)
        try:
            yield errors
        finally:
            stop.set()


# The stack's agent option: the agent's image (run by the harness as this repository's virtualenv).
AGENT_CONFIG = {"dynamo-infra:agent": json.dumps({"image": AGENT_IMAGE})}


@contextmanager
def agent_running(
    kube: KubeClient, login: connection.Connection, namespace: str, root: Path
) -> Iterator[PodProcess]:
    """The agent's pod as a process of this repository's virtualenv, from its rendered pod spec."""
    selector = ",".join(f"{k}={v}" for k, v in sorted(AGENT_LABELS.items()))
    venv_bin = Path(sys.executable).parent
    with PodProcesses(
        kube, login, namespace=namespace, selector=selector, root=root,
        runtime_bin=dynamo_runtime.bin_dir(), image_bins={AGENT_IMAGE: venv_bin},
    ) as pods:  # fmt: skip
        pods.sync()
        pods.follow()
        wait_until(lambda: pods.running(), STARTUP_S, "the agent's process", pods)
        (agent,) = pods.running()
        assert agent.argv[-4:] == ["dynamo-infra", "agent", "--namespace", namespace], agent.argv
        yield agent


def test_planner_scales_decode_under_load_and_pulumi_keeps_it(
    tmp_path: Path,
    cluster: LocalCluster,
    harness_kube: KubeClient,
    conn: connection.Connection,  # noqa: F811 (the fixture imported above)
    release: str,  # noqa: F811 (the fixture imported above)
) -> None:
    ns = unique("planner")
    graph = with_release(GRAPH, release, tmp_path / "graphs")
    shape_in_status = release != dynamo_runtime.DYNAMO_VERSION
    with (
        deployed(tmp_path / "stack", cluster, graph, ns, AGENT_CONFIG) as (stack, _),
        agent_running(harness_kube, conn, ns, tmp_path / "agent") as agent,
        served(harness_kube, conn, namespace=ns, graph=GRAPH_NAME, root=tmp_path / "pods") as live,
    ):
        pods, url, model = live.pods, live.url, live.model
        wait_until(lambda: pods.running("Planner"), STARTUP_S, "the planner's process", pods)
        (planner,) = pods.running("Planner")
        # Its first decision (a hold: no load yet), once it tracks the decode worker's metrics.
        wait_until(lambda: DECISION_LOG in planner.tail(400), STARTUP_S, "the planner's first decision", pods)
        (first,) = pods.running(DECODE)
        assert (adapter_replicas(harness_kube, ns), decode_replicas(harness_kube, ns)) == (1, 1)
        assert decode_deployment(harness_kube, ns)["spec"]["replicas"] == 1

        started = time.monotonic()
        with load(url, model) as errors:
            # The planner's decision, through the decode adapter's scale subresource.
            wait_until(lambda: adapter_replicas(harness_kube, ns) == 2, DECISION_S,
                       "the planner's request for a second decode worker", pods)  # fmt: skip
            decided = time.monotonic() - started
            # The planner logs the scale once its write has returned: a moment after the API shows it.
            wait_until(lambda: "Scaled DGDSA planner-mocker-decode to 2 replicas" in planner.tail(400),
                       LOG_S, "the planner's log of its scale", pods)  # fmt: skip
            # The agent carries it to the DGD record and to the worker Deployment's scale.
            wait_until(
                lambda: (
                    decode_replicas(harness_kube, ns) == 2
                    and decode_deployment(harness_kube, ns)["spec"]["replicas"] == 2
                ),
                SCALE_S,
                f"the agent's scale of the decode Deployment\n{agent.tail(40)}",
                pods,
            )
            scaled = time.monotonic() - started
            managers = {
                m["manager"] for m in decode_deployment(harness_kube, ns)["metadata"]["managedFields"]
            }
            assert AGENT_NAME in managers, managers
            # kwok runs the new pod, its process registers and serves.
            wait_until(
                lambda: len(pods.running(DECODE)) == 2, SCALE_S, "the second decode worker's process", pods
            )
            process_up = time.monotonic() - started
            (second,) = [p for p in pods.running(DECODE) if p.pod != first.pod]
            wait_until(lambda: has_served(second), SCALE_S, "a request on the new decode worker", pods)
            serving = time.monotonic() - started
            # The records' live status follows, with no `pulumi up` or refresh: the agent writes it.
            wait_until(
                lambda: live_status(harness_kube, ns) == (2, 2),
                SCALE_S,
                f"the DGD's and DGDSA's live status\n{agent.tail(40)}",
                pods,
            )
            agent_rss = rss_mib(agent)
            # 1.6: the GPU shape the planner reads, current for the record's generation, live.
            dgd, status = component_status(harness_kube, ns)
            print(f"\n[e2e] {release} DGD status.components.{DECODE}: {status}; "
                  f"observedGeneration {dgd['status'].get('observedGeneration')}, "
                  f"generation {dgd['metadata']['generation']}")  # fmt: skip
            if shape_in_status:
                assert {"gpusPerEngine", "gpusPerReplica"} <= set(status), status
                assert dgd["status"]["observedGeneration"] == dgd["metadata"]["generation"], dgd["status"]
            else:
                assert "gpusPerEngine" not in status, status
            print(
                f"\n[e2e] {release}: load step -> planner's request {decided:.1f}s -> agent's scale {scaled:.1f}s "
                f"-> new worker's process {process_up:.1f}s -> it serves {serving:.1f}s; "
                f"agent RSS {agent_rss:.0f} MiB"
            )

            # Pulumi keeps the planner's choice, with the load still on.
            preview = stack.preview(on_output=quiet)
            assert set(preview.change_summary) <= {"same"}, preview.change_summary
            assert stack.up(on_output=quiet).summary.result == "succeeded"
            assert (adapter_replicas(harness_kube, ns), decode_replicas(harness_kube, ns)) == (2, 2)
            assert decode_deployment(harness_kube, ns)["spec"]["replicas"] == 2
            assert len(pods.running(DECODE)) == 2
        assert errors == [], errors[:3]
        assert agent.alive(), agent.tail(40)
        # The load mode never called into the aisimulate_core stand-in (1.6's planner imports it).
        assert STANDIN_MARKER not in planner.log.read_text()
        assert planner.alive(), planner.tail(40)
