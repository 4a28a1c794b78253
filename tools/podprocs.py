"""Pods as processes: the `main` container of every pod kwok runs, started as a local process.

On the local control plane kwok plays the kubelets: pods are scheduled, marked Running and Ready,
their EndpointSlices fill, but nothing runs in them. `PodProcesses` plays the rest of a kubelet for
a deployed graph: for each Running pod it selects, it starts the pod's `main` container (its
rendered command, args and env) with NVIDIA's Dynamo runtime, and stops it when the pod goes away.
A process differs from the container only by the substitutions in SUBSTITUTIONS, nothing else.

    with PodProcesses(kube, conn, namespace="ns", selector="nvidia.com/dynamo-graph-deployment-name=g",
                      root=tmp, runtime_bin=dynamo_runtime.image_bin) as pods:  # or one bin folder
        pods.sync()                      # or pods.follow(): a thread that keeps syncing
        url = pods.url("g-frontend-...", "http")
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.kube.connection import Connection
from dynamo_infra.kube.errors import KubeError
from tools.kubelet import Kubelet, PodProcessError, expand, relocate
from tools.podnet import NO_PROXY, PodNetwork

# The container the harness runs (the operator names the Dynamo container `main`).
MAIN_CONTAINER = "main"


class Substitution(NamedTuple):
    """One difference between a harness process and its container: a short name, and what it is."""

    name: str
    detail: str


# Every difference between a harness process and the container it stands for.
SUBSTITUTIONS = (
    Substitution(
        "image -> runtime virtualenv",
        "the virtualenv of the Dynamo runtime release of the image tag's major.minor (1.4 or 1.6; an "
        "untagged image the pin's 1.4.0) (tools/dynamo_runtime.py), its bin first on PATH, so the command's "
        "`python3` is the runtime's; an image given in `image_bins` runs with that folder first instead (the "
        "agent's image: this repository's virtualenv, whose `dynamo-infra` is the image's); only the "
        "container's env reaches the process, plus PATH and HOME; its securityContext (user, read-only "
        "root) is not played",
    ),
    Substitution(
        "fieldRef env",
        "env valueFrom.fieldRef: the live pod's field (POD_NAME, POD_NAMESPACE, POD_UID, ...), as a kubelet "
        "resolves it (tools/kubelet.py; also configMap/secret refs and envFrom)",
    ),
    Substitution(
        "bound service-account token",
        "credential: a token of the pod's service account bound to the pod (TokenRequest), in a kubeconfig "
        "to the local API server (KUBECONFIG); the only credential the process has",
    ),
    Substitution(
        "loopback request plane",
        "DYN_TCP_RPC_HOST=127.0.0.1: workers publish a loopback request-plane address (kwok's pod IPs are "
        "not on this machine)",
    ),
    Substitution(
        "loopback ports",
        "ports: each container port becomes a free loopback port below 32768 (the runtime reads "
        "DYN_SYSTEM_PORT into an i16); env values naming a container port take the new number",
    ),
    Substitution(
        "volumes -> host folders",
        "filesystem: workingDir and HOME are a folder per pod; paths under a volume's mountPath in command, "
        "args and env name the host folder behind the volume (claim: its bound hostPath volume; emptyDir: "
        "a folder per pod; configMap, secret, projected service-account volume: their files written out)",
    ),
    Substitution("HF_HUB_OFFLINE=1", "nothing is downloaded from a model hub"),
    Substitution(
        "pod network proxy",
        "HTTP_PROXY/http_proxy name the harness's proxy (tools/podnet.py), which forwards "
        "`<podIP>:<containerPort>` of a running pod process to its loopback port; NO_PROXY/no_proxy keep "
        "loopback (the API server) direct",
    ),
    Substitution(
        "own /var/run",
        "a process whose container mounts volumes under /var/run runs in a mount namespace of its "
        "own (unshare) with an empty /var/run holding those volumes' host folders at their mount paths, "
        "read-only: the service-account volume at /var/run/secrets/kubernetes.io/serviceaccount, whose "
        "fixed path client libraries read (the planner its namespace); the wrapper is in the process's "
        "log and command.json, not in its `command`",
    ),
    Substitution(
        "aisimulate_core stand-in",
        "(runtime 1.6) NVIDIA's AISimulate core, which the 1.6 planner imports at load but only uses for "
        "its AISimulate performance model, cannot be installed (NVIDIA's own index): an import stand-in "
        "(tools/runtime_standins/) whose every use raises (StandInCalled, logged as 'aisimulate_core "
        "stand-in called'); the planner modes the harness runs never call it",
    ),
)
# Mount paths under this folder are bind-mounted in the process's own mount namespace (SUBSTITUTIONS).
VAR_RUN = "/var/run"
# Runs a command with an empty /var/run ($1) holding host folders at paths under it ($2 $3, ...; `--`
# ends them), then execs the command (what follows `--`).
MOUNT_SCRIPT = """set -e
root=$1; shift
mount -t tmpfs -o mode=755 tmpfs "$root"
while [ "$1" != -- ]; do
  mkdir -p "$root/$2"; mount --bind -o ro "$1" "$root/$2"; shift 2
done
shift
exec "$@"
"""
# The runtime keeps its system port in an i16: every port we hand out stays in [PORT_MIN, PORT_MAX).
PORT_MIN, PORT_MAX = 20000, 32768
# Seconds a stopped process gets between SIGTERM and SIGKILL (the pod's own grace period, capped).
STOP_GRACE_S = 10.0
# How often `follow()` looks at the pods.
FOLLOW_INTERVAL_S = 0.5


@dataclass
class PodProcess:
    """One pod's main container, running (or stopped) as a local process."""

    pod: str
    uid: str
    component: str
    folder: Path
    # What the harness runs: the container's command with the substitutions (a wrapper, if any, first).
    argv: list[str]
    env: dict[str, str]
    # Container port name (or number as text) -> the loopback port standing in for it.
    ports: dict[str, int]
    # The pod's IP and its container ports by number (what the pod network forwards).
    pod_ip: str = ""
    container_ports: dict[int, int] = field(default_factory=dict)
    # The container's image and the bin folder its process runs with (first on PATH).
    image: str = ""
    bin: Path | None = None
    # The container's own command and args, as the pod holds them (what to show of the process).
    command: list[str] = field(default_factory=list)
    popen: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.folder / "main.log"

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "command.json").write_text(json.dumps({"argv": self.argv, "env": self.env}, indent=2))
        with self.log.open("ab") as out:
            out.write(f"[harness] exec {json.dumps(self.argv)}\n".encode())
            out.flush()
            self.popen = subprocess.Popen(
                self.argv,
                env=self.env,
                cwd=self.env.get("PWD", str(self.folder)),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def stop(self, grace: float = STOP_GRACE_S) -> int | None:
        """SIGTERM to the process group, SIGKILL after `grace` seconds; the exit code."""
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            _signal_group(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                _signal_group(self.popen.pid, signal.SIGKILL)
                self.popen.wait(5)
        # Children the process left behind in its group.
        _signal_group(self.popen.pid, signal.SIGKILL)
        return self.popen.returncode

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def free_port(taken: set[int]) -> int:
    """A loopback port below 32768 that nobody listens on and the harness has not handed out."""
    for _ in range(1000):
        port = random.randrange(PORT_MIN, PORT_MAX)
        if port in taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        taken.add(port)
        return port
    raise PodProcessError(f"no free port in [{PORT_MIN}, {PORT_MAX})")


class PodProcesses:
    """The pods selected in one namespace, each with its main container running as a process."""

    def __init__(
        self,
        kube: KubeClient,
        conn: Connection,
        *,
        namespace: str,
        selector: str,
        root: Path,
        runtime_bin: Path | Callable[[str], Path],
        image_bins: Mapping[str, Path] | None = None,
    ) -> None:
        self.kube = kube
        self.conn = conn
        self.namespace = namespace
        self.selector = selector
        self.root = root.resolve()
        # The runtime's bin folder: one for every image, or the one for a container's image.
        self.runtime_bin = runtime_bin
        # Container image -> the bin folder standing for it (others: the Dynamo runtime's).
        self.image_bins = {image: path.resolve() for image, path in (image_bins or {}).items()}
        self.processes: dict[str, PodProcess] = {}
        # Every process ever started (stopped ones too), oldest first: for logs and counts.
        self.history: list[PodProcess] = []
        self._ports: set[int] = set()
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # What the follow thread could not do (a pod it could not run), for failure messages.
        self.errors: list[str] = []
        # The pod network every process (and anything else given `network.url`) reaches pods through.
        self.network = PodNetwork(self.route)

    # --- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> PodProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop following and stop every process (also the ones of pods still there)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        with self._lock:
            for proc in self.processes.values():
                proc.stop()
            self.processes.clear()
        self.network.close()

    def follow(self) -> None:
        """Keep syncing in a background thread, as a kubelet would (until `close`)."""

        def loop() -> None:
            while not self._stop.wait(FOLLOW_INTERVAL_S):
                try:
                    self.sync()
                except (KubeError, PodProcessError) as e:
                    self.errors.append(str(e))

        self._thread = threading.Thread(target=loop, name="podprocs", daemon=True)
        self._thread.start()

    def sync(self) -> None:
        """Start a process for each Running pod without one; stop those whose pod is gone or going."""
        pods = {
            p["metadata"]["name"]: p
            for p in self.kube.list("v1", "Pod", self.namespace, label_selector=self.selector)
        }
        with self._lock:
            for name, proc in list(self.processes.items()):
                pod = pods.get(name)
                if (
                    pod is None
                    or pod["metadata"].get("deletionTimestamp")
                    or pod["metadata"]["uid"] != proc.uid
                ):
                    grace = (pod or {}).get("spec", {}).get("terminationGracePeriodSeconds", STOP_GRACE_S)
                    proc.stop(min(float(grace), STOP_GRACE_S))
                    del self.processes[name]
            for name, pod in sorted(pods.items()):
                if name in self.processes or not runnable(pod):
                    continue
                proc = self.prepare(pod)
                proc.start()
                self.processes[name] = proc
                self.history.append(proc)

    # --- queries ------------------------------------------------------------------------------

    def running(self, component: str | None = None) -> list[PodProcess]:
        with self._lock:
            return [
                p
                for p in self.processes.values()
                if p.alive() and (component is None or p.component == component)
            ]

    def exited(self) -> list[PodProcess]:
        """Processes that ended while their pod is still there (a container that crashed)."""
        with self._lock:
            return [p for p in self.processes.values() if p.popen is not None and not p.alive()]

    def url(self, pod_or_component: str, port: str) -> str:
        """`http://127.0.0.1:<port>` of a pod's (or a component's first pod's) named container port."""
        with self._lock:
            procs = [p for p in self.processes.values() if pod_or_component in (p.pod, p.component)]
        if not procs:
            raise PodProcessError(f"no process runs for {pod_or_component!r}")
        return f"http://127.0.0.1:{procs[0].ports[port]}"

    def route(self, host: str, port: int) -> int | None:
        """The loopback port of a running pod process's `host:port` (pod IP, container port), if any."""
        with self._lock:
            for p in self.processes.values():
                if p.pod_ip == host and port in p.container_ports and p.alive():
                    return p.container_ports[port]
        return None

    def logs(self) -> str:
        """The tail of every process's log and what the follow thread could not do, for failure messages."""
        return "\n".join(
            [
                *(f"--- harness: {e}" for e in self.errors),
                *(
                    f"--- {p.pod} ({'running' if p.alive() else f'exit {p.popen.returncode if p.popen else None}'})\n"
                    f"{p.tail()}"
                    for p in self.history
                ),
            ]
        )

    # --- one pod ------------------------------------------------------------------------------

    def runtime_for(self, image: str) -> Path:
        """The Dynamo runtime's bin folder a container of this image runs with."""
        if isinstance(self.runtime_bin, Path):
            return self.runtime_bin.resolve()
        try:
            return self.runtime_bin(image).resolve()
        except ValueError as e:
            raise PodProcessError(str(e)) from e

    def prepare(self, pod: Manifest) -> PodProcess:
        """The process standing for `pod`'s main container (not started)."""
        meta = pod["metadata"]
        name = meta["name"]
        container = next(
            (c for c in pod["spec"].get("containers") or [] if c["name"] == MAIN_CONTAINER), None
        )
        if container is None:
            raise PodProcessError(f"pod {name} has no container named {MAIN_CONTAINER!r}")
        folder = self.root / name
        home = folder / "home"
        home.mkdir(parents=True, exist_ok=True)
        kubelet = Kubelet(self.kube, self.conn, pod, folder)
        mounts = kubelet.mounts(container)

        ports: dict[str, int] = {}
        container_ports: dict[int, int] = {}
        renumber: dict[str, str] = {}
        for p in container.get("ports") or []:
            new = free_port(self._ports)
            ports[p.get("name") or str(p["containerPort"])] = new
            renumber[str(p["containerPort"])] = str(new)
            container_ports[int(p["containerPort"])] = new

        env = {k: relocate(renumber.get(v, v), mounts) for k, v in kubelet.env(container).items()}
        env["DYN_TCP_RPC_HOST"] = "127.0.0.1"
        env["HF_HUB_OFFLINE"] = "1"
        env["HOME"] = str(home)
        for variable in ("HTTP_PROXY", "http_proxy"):
            env[variable] = self.network.url
        for variable in ("NO_PROXY", "no_proxy"):
            env[variable] = NO_PROXY
        image = str(container.get("image", ""))
        image_bin = self.image_bins.get(image) or self.runtime_for(image)
        env["PATH"] = os.pathsep.join([str(image_bin), "/usr/local/bin", "/usr/bin", "/bin"])
        kubeconfig = kubelet.kubeconfig()
        if kubeconfig is not None:
            env["KUBECONFIG"] = str(kubeconfig)
        workdir = container.get("workingDir")
        cwd = relocate(workdir, mounts) if workdir else ""
        if not cwd or cwd == workdir:
            cwd = str(folder / "workdir")
        Path(cwd).mkdir(parents=True, exist_ok=True)
        env["PWD"] = cwd

        argv = [
            relocate(expand(a, env), mounts)
            for a in [*container.get("command", []), *container.get("args", [])]
        ]
        if not argv:
            raise PodProcessError(
                f"pod {name}: container {MAIN_CONTAINER} has no command (the image's entrypoint)"
            )
        argv = with_var_run(argv, mounts)
        return PodProcess(
            pod=name,
            uid=meta["uid"],
            component=(meta.get("labels") or {}).get("nvidia.com/dynamo-component", ""),
            folder=folder,
            argv=argv,
            env=env,
            ports=ports,
            pod_ip=str((pod.get("status") or {}).get("podIP") or ""),
            container_ports=container_ports,
            image=image,
            bin=image_bin,
            command=[str(a) for a in [*container.get("command", []), *container.get("args", [])]],
        )


def with_var_run(argv: list[str], mounts: dict[str, Path]) -> list[str]:
    """`argv` run in a mount namespace of its own whose /var/run holds the container's mounts under it
    (unchanged when there are none)."""
    under = {
        path[len(VAR_RUN) :].strip("/"): host
        for path, host in sorted(mounts.items())
        if path.startswith(VAR_RUN + "/")
    }
    if not under:
        return argv
    # Without privileges, a user namespace of its own grants the mounts.
    unshare = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        unshare.insert(1, "--map-root-user")
    pairs = [w for inside, host in under.items() for w in (str(host), inside)]
    return [*unshare, "/bin/sh", "-c", MOUNT_SCRIPT, "sh", os.path.realpath(VAR_RUN), *pairs, "--", *argv]


def runnable(pod: Manifest) -> bool:
    """Scheduled, Running (kwok's word for it) and not being deleted."""
    return bool(
        pod["spec"].get("nodeName")
        and (pod.get("status") or {}).get("phase") == "Running"
        and not pod["metadata"].get("deletionTimestamp")
    )


def pods_of(graph: str) -> str:
    """The label selector of a graph's pods."""
    return f"nvidia.com/dynamo-graph-deployment-name={graph}"
