"""Faults during `pulumi up`, repeated: the runner the integration test and the `faults` benchmark
section share.

A stack of three graphs in one namespace (one with a claim, one multinode on LeaderWorkerSet, one
plain), each run changing every graph (an env value, and replicas on one) so it applies real
changes. A seeded RNG picks when the fault strikes after `pulumi up` starts: the `pulumi` process
group is SIGKILLed (and the plugins it left), or the API server is killed and started again after a
pause. Then the user's next `pulumi up` (after `dynamo-infra unlock` when it finds the stack
locked) must converge: `up` succeeds, every graph `successful`, no object of ours in the namespace
that the rendered set lacks (orphaned), no component with more objects of a kind than rendered
(duplicated), the claim the same (UID) with its data (a marker file in its volume), and a `preview`
with no change.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from benchmarks import harness
from dynamo_infra.cli import unlock
from dynamo_infra.cli.rendering import cluster_options, render_files
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.reconcile.ownership import INVENTORY_LABEL
from tools.localcluster import LocalCluster

STACK = "faults"
KILL, RESTART = "kill", "restart"
# Cluster options of the stack: multinode workers as LeaderWorkerSets, `up` awaits readiness.
AWAIT_TIMEOUT_S = 180
# Faults strike between these shares of a clean changing `up`'s duration after `pulumi up` starts.
STRIKE_SHARES = (0.05, 0.9)
# The graphs' variant of that clean changing `up` (runs are numbered from 1).
BASELINE_RUN = 0
# How long the API server stays down before it is started again (seconds, uniform).
OUTAGE_S = (1.0, 8.0)
# A faulted `up` still running this long after the API server is back is killed too.
FAULTED_UP_GRACE_S = AWAIT_TIMEOUT_S + 120.0
# The claim whose data must survive, and the marker file written into its volume.
CLAIM = "fa-store"
MARKER = "fault-marker.txt"
# Graph templates ({run}: the run number, {replicas}: 1 or 2 alternately).
CLAIM_GRAPH = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: fa-claim
spec:
  pvcs:
    - name: fa-store
      create: true
      size: 1Gi
      storageClass: standard
      volumeAccessMode: ReadWriteMany
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec: {{mainContainer: {{image: nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.4.0}}}}
    Worker:
      componentType: worker
      replicas: 1
      envs: [{{name: FAULT_RUN, value: "{run}"}}]
      volumeMounts: [{{name: fa-store, mountPoint: /models}}]
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.4.0
          command: [python3, -m, dynamo.mocker]
          args: [--model-path, /models/tiny-chat]
"""
MULTINODE_GRAPH = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: fa-mn
spec:
  backendFramework: vllm
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec: {{mainContainer: {{image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0}}}}
    Worker:
      componentType: worker
      replicas: 1
      multinode: {{nodeCount: 2}}
      envs: [{{name: FAULT_RUN, value: "{run}"}}]
      resources: {{limits: {{gpu: "2"}}}}
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0
          command: [python3, -m, dynamo.vllm]
          args: [--model, Qwen/Qwen3-0.6B, --tensor-parallel-size, "4"]
"""
PLAIN_GRAPH = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: fa-agg
spec:
  backendFramework: vllm
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec: {{mainContainer: {{image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0}}}}
    Worker:
      componentType: worker
      replicas: {replicas}
      envs: [{{name: FAULT_RUN, value: "{run}"}}]
      resources: {{limits: {{gpu: "1"}}}}
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0
          command: [python3, -m, dynamo.vllm]
"""
GRAPHS = {"fa-claim": CLAIM_GRAPH, "fa-mn": MULTINODE_GRAPH, "fa-agg": PLAIN_GRAPH}
# Kinds looked at for orphans and duplicates besides those rendered.
ALWAYS_LISTED = (("apps/v1", "Deployment"), ("v1", "Service"))


@dataclass
class Outcome:
    """One faulted run and what the next `up` left."""

    run: int
    fault: str
    strike_s: float
    # How the faulted `up` ended: "killed", "failed", "succeeded", or "finished before the fault".
    faulted: str = ""
    # Pulumi's message when the next `up` found the stack locked ("" when it was not).
    lock_message: str = ""
    unlock_output: str = ""
    converged: bool = False
    orphaned: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    claim_intact: bool = False
    no_change: bool = False
    seconds: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return (
            self.converged
            and not self.orphaned
            and not self.duplicated
            and self.claim_intact
            and self.no_change
            and not self.error
        )


def kill_plugins_of(project: Path) -> int:
    """Kill what a killed engine left running from `project` (its plugins start their own process
    groups: the dynamic provider names the project in its command line, the Kubernetes provider runs
    in the project folder); how many there were."""
    killed = 0
    for proc_dir in Path("/proc").iterdir():
        if not proc_dir.name.isdigit():
            continue
        try:
            cmdline = (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(proc_dir / "cwd")
        except OSError:
            continue
        if str(project) in cmdline or Path(cwd).is_relative_to(project):
            try:
                os.kill(int(proc_dir.name), signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


class FaultStack:
    """The three-graph stack on a local control plane, its claim's marker, and the faulted runs."""

    def __init__(self, root: Path, cluster: LocalCluster, kube: KubeClient, namespace: str) -> None:
        self.root, self.cluster, self.kube, self.namespace = root, cluster, kube, namespace
        self.options: dict[str, Any] = {
            "namespace": namespace,
            "multinode": {"orchestrator": "lws"},
            "await": {"timeoutSeconds": AWAIT_TIMEOUT_S},
        }
        graphs_dir = root / "graphs"
        graphs_dir.mkdir(parents=True)
        self.graphs = [graphs_dir / f"{name}.yaml" for name in GRAPHS]
        self.write_graphs(-1)
        self.stack = harness.program_stack(root, cluster, STACK, self.graphs, self.options)
        self.project = root / "project"
        self.claim_uid = ""
        self.marker_text = ""
        self.clean_up_s = self.change_up_s = 0.0

    def write_graphs(self, run: int) -> None:
        for path, template in zip(self.graphs, GRAPHS.values(), strict=True):
            path.write_text(template.format(run=run, replicas=1 + run % 2))

    def first_up(self) -> float:
        """The clean first `up`; writes the claim's marker; its duration (seconds)."""
        started = time.monotonic()
        result = self.stack.up(**harness.QUIET)
        self.clean_up_s = time.monotonic() - started
        if result.summary.result != "succeeded":
            raise RuntimeError(f"first up: {result.summary.result}")
        claim = self.claim()
        self.claim_uid = claim["metadata"]["uid"]
        volume = self.volume_dir(claim)
        volume.mkdir(parents=True, exist_ok=True)
        self.marker_text = f"claim {self.claim_uid}\n"
        (volume / MARKER).write_text(self.marker_text)
        # A clean `up` changing every graph, as each faulted run does: faults strike within its time.
        self.write_graphs(BASELINE_RUN)
        started = time.monotonic()
        if self.stack.up(**harness.QUIET).summary.result != "succeeded":
            raise RuntimeError("clean change up failed")
        self.change_up_s = time.monotonic() - started
        return self.clean_up_s

    def claim(self) -> dict[str, Any]:
        obj = self.kube.get(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": CLAIM, "namespace": self.namespace},
            }
        )
        if obj is None:
            raise RuntimeError(f"claim {CLAIM} is missing")
        return obj

    def volume_dir(self, claim: dict[str, Any]) -> Path:
        """The bound volume's folder (the local provisioner's hostPath)."""
        deadline = time.monotonic() + 60
        while not (claim.get("spec") or {}).get("volumeName"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"claim {CLAIM} is not bound")
            time.sleep(1)
            claim = self.claim()
        pv = self.kube.get(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": claim["spec"]["volumeName"]},
            }
        )
        assert pv is not None
        return Path(pv["spec"]["hostPath"]["path"])

    def cli_up(self) -> subprocess.Popen[str]:
        """`pulumi up` as a user runs it, in its own process group (so it can be killed whole)."""
        env = {**os.environ, "PULUMI_BACKEND_URL": f"file://{self.root}"}
        return subprocess.Popen(
            ["pulumi", "up", "--yes", "--non-interactive", "--stack", STACK, "--skip-preview"],
            cwd=self.project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip

    def run(self, number: int, fault: str, rng: random.Random) -> Outcome:
        """One run: change every graph, strike `fault` during `pulumi up`, then converge and check."""
        low, high = STRIKE_SHARES
        outcome = Outcome(number, fault, round(rng.uniform(low, high) * self.change_up_s, 2))
        outage = rng.uniform(*OUTAGE_S)
        started = time.monotonic()
        self.write_graphs(number)
        proc = self.cli_up()
        try:
            outcome.faulted = self.strike(proc, fault, outcome.strike_s, outage)
            self.recover(outcome)
            self.check(outcome)
        except (
            RuntimeError,
            OSError,
            KeyError,
            subprocess.SubprocessError,
            auto.errors.CommandError,
            KubeError,
        ) as e:
            # A run that breaks counts as not converged, with its reason.
            outcome.error = f"{type(e).__name__}: {e}"[-2000:]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        outcome.seconds = round(time.monotonic() - started, 1)
        print(f"[faults] {outcome}", file=sys.stderr, flush=True)
        return outcome

    def strike(self, proc: subprocess.Popen[str], fault: str, at: float, outage: float) -> str:
        started = time.monotonic()
        try:
            proc.wait(at)
            # A clean changing `up` that just ran: later faults strike within its time (the
            # machine's speed changes with its load).
            self.change_up_s = time.monotonic() - started
            return "finished before the fault"
        except subprocess.TimeoutExpired:
            pass
        if fault == KILL:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
            kill_plugins_of(self.project)
            return "killed"
        self.cluster.kill("kube-apiserver")
        time.sleep(outage)
        self.cluster.restart("kube-apiserver")
        try:
            proc.communicate(timeout=FAULTED_UP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
            kill_plugins_of(self.project)
            return "killed (hung after the outage)"
        return "succeeded" if proc.returncode == 0 else "failed"

    def recover(self, outcome: Outcome) -> None:
        """The user's next `pulumi up`; when it finds the stack locked, `dynamo-infra unlock` and
        `up` again."""
        proc = self.cli_up()
        out, _ = proc.communicate(timeout=FAULTED_UP_GRACE_S)
        if proc.returncode == 0:
            outcome.converged = True
            return
        if unlock.LOCKED_MESSAGE not in out:
            raise RuntimeError(f"next up failed: {out[-1500:]}")
        outcome.lock_message = next(line for line in out.splitlines() if unlock.LOCKED_MESSAGE in line)
        cmd = [sys.executable, "-m", "dynamo_infra.cli", "unlock", "--stack", STACK]
        env = {**os.environ, "PULUMI_BACKEND_URL": f"file://{self.root}"}
        done = subprocess.run(cmd, cwd=self.project, env=env, capture_output=True, text=True, timeout=60)
        outcome.unlock_output = (done.stdout + done.stderr).strip()
        if done.returncode != 0:
            raise RuntimeError(f"unlock: {outcome.unlock_output}")
        result = self.stack.up(**harness.QUIET)
        outcome.converged = result.summary.result == "succeeded"

    def check(self, outcome: Outcome) -> None:
        states = self.stack.outputs()["graphs"].value
        bad = {g: s.get("state") for g, s in states.items() if s.get("state") != "successful"}
        if bad or set(states) != set(GRAPHS):
            outcome.converged = False
            outcome.error = f"graph states {bad or sorted(states)}"
        outcome.orphaned, outcome.duplicated = self.strays()
        claim = self.claim()
        marker = self.volume_dir(claim) / MARKER
        outcome.claim_intact = (
            claim["metadata"]["uid"] == self.claim_uid
            and marker.exists()
            and marker.read_text() == self.marker_text
        )
        preview = self.stack.preview(**harness.QUIET)
        outcome.no_change = set(preview.change_summary) <= {"same"}

    def rendered(self) -> list[dict[str, Any]]:
        return render_files(self.graphs, cluster_options(self.options, None)).objects()

    def strays(self) -> tuple[list[str], list[str]]:
        """Our objects in the namespace the rendered set lacks, and (component, kind) pairs with more
        live objects than rendered ones."""
        rendered = [
            o for o in self.rendered() if (o["metadata"].get("namespace") or self.namespace) == self.namespace
        ]
        kinds = {(o["apiVersion"], o["kind"]) for o in rendered} | set(ALWAYS_LISTED)
        want = {(o["kind"], o["metadata"]["name"]) for o in rendered}
        counts: dict[tuple[str, str], int] = {}
        for o in rendered:
            key = ((o["metadata"].get("labels") or {}).get(INVENTORY_LABEL, ""), o["kind"])
            counts[key] = counts.get(key, 0) + 1
        orphaned: list[str] = []
        live: dict[tuple[str, str], int] = {}
        for api_version, kind in sorted(kinds):
            for o in self.kube.list(api_version, kind, self.namespace, label_selector=INVENTORY_LABEL):
                name = o["metadata"]["name"]
                if (kind, name) not in want:
                    orphaned.append(f"{kind}/{name}")
                key = (o["metadata"]["labels"][INVENTORY_LABEL], kind)
                live[key] = live.get(key, 0) + 1
        duplicated = [
            f"{inv}/{kind} x{n}"
            for (inv, kind), n in sorted(live.items())
            if n > counts.get((inv, kind), 0) > 0
        ]
        return orphaned, duplicated


def run_faults(
    root: Path, cluster: LocalCluster, kube: KubeClient, namespace: str, kills: int, restarts: int, seed: int
) -> tuple[FaultStack, list[Outcome]]:
    """`kills` + `restarts` faulted runs in a seeded random order on one stack, after a clean `up`."""
    rng = random.Random(seed)
    faults = [KILL] * kills + [RESTART] * restarts
    rng.shuffle(faults)
    fs = FaultStack(root, cluster, kube, namespace)
    fs.first_up()
    return fs, [fs.run(i + 1, fault, rng) for i, fault in enumerate(faults)]
