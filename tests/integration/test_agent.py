"""The run-time agent on the local control plane, run as a process (`python -m dynamo_infra.agent`)
with only its rendered Role (a ServiceAccount token, as in its pod): a DGDSA's scale request reaches
the DGD record and the component's Deployment, a DGD replica patch reaches an agent-owned component
without adapter, a Pulumi-owned component is never scaled, status follows the workloads without
churn, and a Role missing a rule gives a failure naming it."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.crd_files import crd_documents
from dynamo_infra.components.platform_plan import CLUSTER_FIELD_MANAGER, installable
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient, object_key, stub
from dynamo_infra.render.names import LABEL_COMPONENT, LABEL_GRAPH
from dynamo_infra.render.runtime.agent import AGENT_NAME, AGENT_RULES, agent_objects
from dynamo_infra.render.runtime.records import (
    COMPONENTS_ANNOTATION,
    DGD_KIND,
    DGDSA_KIND,
    RECORD_API_VERSION,
)
from tests.conftest import REPO
from tests.wait import hold_for, wait_stable, wait_until
from tools.localcluster import LocalCluster

pytestmark = pytest.mark.integration

NS = "agent-it"
GRAPH = "g"
# Seconds to wait for the agent to act (it acts on watch events: well under a second here).
ACT_S = 30.0
# Seconds a component not owned by the agent is watched for an unwanted scale.
QUIET_S = 3.0
# How often a condition is looked at while waiting for the agent.
POLL_S = 0.05
# Seconds the DGD must stay unchanged to count as settled (the agent's last status write landed).
SETTLED_S = 1.0
SCALE_RULE = {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get", "patch"]}
# Worker: a scaling adapter (the agent's); Decode: the planner patches the DGD (the agent's);
# Frontend: Pulumi's replicas.
COMPONENTS = {"Worker": "agent", "Decode": "agent", "Frontend": "graph"}


def deployment(component: str) -> Manifest:
    name = f"{GRAPH}-{component.lower()}"
    labels = {LABEL_GRAPH: GRAPH, LABEL_COMPONENT: component}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "fake"}]},
            },
        },
    }


def annotation() -> str:
    out = {}
    for component, owner in COMPONENTS.items():
        d = deployment(component)
        key = object_key(d)
        out[component] = {
            "watch": {key: stub("apps/v1", "Deployment", NS, d["metadata"]["name"])},
            "workload": key,
            "replicas": owner,
            "scaleTarget": {"apiVersion": "apps/v1", "kind": "Deployment", "name": d["metadata"]["name"]},
        }
    return json.dumps(out, sort_keys=True, separators=(",", ":"))


def dgd_record() -> Manifest:
    components = [{"name": c, "replicas": 1} for c in COMPONENTS]
    components[0]["scalingAdapter"] = {}
    return {
        **stub(RECORD_API_VERSION, DGD_KIND, NS, GRAPH),
        "metadata": {"name": GRAPH, "namespace": NS, "annotations": {COMPONENTS_ANNOTATION: annotation()}},
        "spec": {"components": components},
    }


def adapter() -> Manifest:
    return {
        **stub(RECORD_API_VERSION, DGDSA_KIND, NS, f"{GRAPH}-worker"),
        "spec": {"replicas": 1, "dgdRef": {"name": GRAPH, "componentName": "Worker"}},
    }


@dataclass
class Agent:
    """The agent process and its log."""

    proc: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


@dataclass
class Rig:
    kube: KubeClient
    folder: Path
    agent: Agent

    def dgd(self) -> Manifest:
        live = self.kube.get(stub(RECORD_API_VERSION, DGD_KIND, NS, GRAPH))
        assert live is not None
        return live

    def replicas(self, component: str) -> int:
        live = self.kube.get(deployment(component))
        assert live is not None
        return int(live["spec"]["replicas"])

    def scale_adapter(self, replicas: int) -> None:
        path = self.kube.resource(RECORD_API_VERSION, DGDSA_KIND).path(NS, f"{GRAPH}-worker") + "/scale"
        self.kube.request(
            "PATCH", path, body={"spec": {"replicas": replicas}}, params={"fieldManager": "planner"},
            content_type="application/merge-patch+json",
        )  # fmt: skip

    def patch_dgd_replicas(self, component: str, replicas: int) -> None:
        i = list(COMPONENTS).index(component)
        self.kube.patch(
            stub(RECORD_API_VERSION, DGD_KIND, NS, GRAPH),
            [
                {"op": "test", "path": f"/spec/components/{i}/name", "value": component},
                {"op": "add", "path": f"/spec/components/{i}/replicas", "value": replicas},
            ],
            manager="planner",
        )


def rss_bytes(pid: int) -> int:
    """A process's resident memory, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def wait_for(what: str, check: Callable[[], Any], timeout: float = ACT_S, agent: Agent | None = None) -> Any:
    """`check`'s first truthy value; on timeout the agent's log tail is in the failure."""
    return wait_until(
        check, timeout, POLL_S, what=what, detail=(lambda: agent.text()[-3000:]) if agent else None
    )


def install_crds(kube: KubeClient, cluster: LocalCluster) -> None:
    for crd in crd_documents(REPO / "stacks" / "crds", "dynamo"):
        if crd["metadata"]["name"].split(".")[0] in (
            "dynamographdeployments",
            "dynamographdeploymentscalingadapters",
        ):
            kube.apply(installable(crd), manager=CLUSTER_FIELD_MANAGER)
            cluster.wait_established(crd["metadata"]["name"])


def agent_token(kube: KubeClient) -> str:
    review = kube.request(
        "POST", f"/api/v1/namespaces/{NS}/serviceaccounts/{AGENT_NAME}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )  # fmt: skip
    return str(review["status"]["token"])


def start_agent(kube: KubeClient, folder: Path, name: str) -> Agent:
    """The agent as its pod runs it, with the ServiceAccount's token and nothing else."""
    conn = kube.conn
    assert conn.ca_pem is not None
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "agent",
        "clusters": [{"name": "c", "cluster": {
            "server": conn.server, "certificate-authority-data": base64.b64encode(conn.ca_pem).decode()}}],
        "users": [{"name": AGENT_NAME, "user": {"token": agent_token(kube)}}],
        "contexts": [{"name": "agent", "context": {"cluster": "c", "user": AGENT_NAME}}],
    }  # fmt: skip
    path = folder / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    log = folder / f"{name}.log"
    env = {**os.environ, "KUBECONFIG": str(path)}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dynamo_infra.agent", "--namespace", NS],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
        )  # fmt: skip
    return Agent(proc, log)


def set_rules(kube: KubeClient, rules: list[Manifest]) -> None:
    role = next(o for o in agent_objects("default", [NS], "unused") if o["kind"] == "Role")
    kube.apply({**role, "rules": rules})


def set_up(kube: KubeClient, cluster: LocalCluster) -> None:
    """The namespace, the Dynamo CRDs, the agent's account bound to its Role (its Deployment is not run
    here: the agent runs as a process), the workloads, the DGD record and its adapter."""
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    install_crds(kube, cluster)
    for obj in agent_objects(NS, [NS], "unused"):
        if obj["kind"] != "Deployment":
            kube.apply(obj)
    for component in COMPONENTS:
        kube.apply(deployment(component))
    kube.apply(dgd_record())
    kube.apply(adapter())


@pytest.fixture(scope="module")
def rig(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    folder = tmp_path_factory.mktemp("agent")
    kube = KubeClient(connection.load(str(cluster.kubeconfig)))
    set_up(kube, cluster)
    agent = start_agent(kube, folder, "agent")
    try:
        yield Rig(kube, folder, agent)
    finally:
        agent.stop()
        print(agent.text()[-5000:])
        kube.delete(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, propagation="Background"
        )
        kube.close()


def ready(status: Manifest, component: str, replicas: int) -> bool:
    c = (status.get("components") or {}).get(component) or {}
    conditions = {x["type"]: x["status"] for x in status.get("conditions") or []}
    return c.get("readyReplicas") == replicas == c.get("replicas") and conditions.get("Ready") == "True"


def test_the_status_follows_the_workloads(rig: Rig) -> None:
    status = wait_for(
        "the DGD status",
        lambda: (s := rig.dgd().get("status")) and ready(s, "Worker", 1) and s,
        agent=rig.agent,
    )
    assert status["state"] == "successful"
    assert set(status["components"]) == set(COMPONENTS)
    assert status["observedGeneration"] == rig.dgd()["metadata"]["generation"]
    live = rig.kube.get(adapter())
    assert live is not None and live["status"] == {
        "replicas": 1,
        "selector": f"{LABEL_COMPONENT}=Worker,{LABEL_GRAPH}={GRAPH}",
    }
    managers = {
        m["manager"] for m in rig.dgd()["metadata"]["managedFields"] if m.get("subresource") == "status"
    }
    assert managers == {AGENT_NAME}


def test_a_scale_request_of_the_adapter_reaches_the_deployment(rig: Rig) -> None:
    started = time.monotonic()
    rig.scale_adapter(2)
    wait_for("the Deployment scaled to 2", lambda: rig.replicas("Worker") == 2, agent=rig.agent)
    latency = time.monotonic() - started
    worker = next(c for c in rig.dgd()["spec"]["components"] if c["name"] == "Worker")
    assert worker["replicas"] == 2
    wait_for(
        "the status of 2 ready workers",
        lambda: ready(rig.dgd().get("status") or {}, "Worker", 2),
        agent=rig.agent,
    )
    # The adapter's status follows the DGD's.
    wait_for(
        "the adapter's status of 2 replicas",
        lambda: (a := rig.kube.get(adapter())) is not None and (a.get("status") or {}).get("replicas") == 2,
        agent=rig.agent,
    )
    rss = rss_bytes(rig.agent.proc.pid)
    print(f"agent: DGDSA scale -> Deployment replicas in {latency * 1000:.0f} ms; RSS {rss / 2**20:.1f} MiB")
    (rig.folder / "measured.json").write_text(json.dumps({"latency_s": latency, "rss_bytes": rss}))
    assert latency < 5.0


def test_a_dgd_patch_scales_an_agent_component_without_adapter(rig: Rig) -> None:
    rig.patch_dgd_replicas("Decode", 2)
    wait_for("the Decode Deployment scaled to 2", lambda: rig.replicas("Decode") == 2, agent=rig.agent)


def test_a_graph_component_is_never_scaled(rig: Rig) -> None:
    rig.patch_dgd_replicas("Frontend", 3)
    generation = rig.dgd()["metadata"]["generation"]
    # The agent saw this generation (it writes observedGeneration) and still left the Deployment.
    wait_for(
        "the status of the new generation",
        lambda: (rig.dgd().get("status") or {}).get("observedGeneration") == generation,
        agent=rig.agent,
    )
    hold_for(QUIET_S, "the agent does not scale the graph's Frontend")
    assert rig.replicas("Frontend") == 1


def test_nothing_is_written_when_nothing_changed(rig: Rig) -> None:
    wait_for("a settled status", lambda: ready(rig.dgd().get("status") or {}, "Decode", 2), agent=rig.agent)
    before = wait_stable(rig.dgd, SETTLED_S, ACT_S, what="the DGD")
    # An event the agent reconciles on: a label change of a watched Deployment.
    rig.kube.apply({**stub("apps/v1", "Deployment", NS, f"{GRAPH}-worker"),
                    "metadata": {"name": f"{GRAPH}-worker", "namespace": NS, "labels": {"touched": "yes"}}},
                   manager="someone")  # fmt: skip
    hold_for(QUIET_S, "the agent writes nothing for an event that changes nothing")
    after = rig.dgd()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_sigterm_stops_the_agent_cleanly(rig: Rig) -> None:
    started = time.monotonic()
    assert rig.agent.stop() == 0, rig.agent.text()[-3000:]
    assert time.monotonic() - started < 10


def test_a_missing_rule_is_named(rig: Rig) -> None:
    """The Role without deployments/scale: the agent says which rule it lacks, and where."""
    assert rig.agent.proc.poll() is not None
    set_rules(rig.kube, [r for r in AGENT_RULES if r != SCALE_RULE])
    assert SCALE_RULE in AGENT_RULES
    limited = start_agent(rig.kube, rig.folder, "limited")
    try:
        rig.scale_adapter(3)
        wanted = f"forbidden: get deployments/scale in namespace {NS} (the agent's Role lacks this rule)"
        wait_for("the named failure", lambda: wanted in limited.text(), agent=limited)
        assert rig.replicas("Worker") == 2
    finally:
        limited.stop()
        set_rules(rig.kube, AGENT_RULES)
