"""Serve a deployed graph for real: its pods as processes of NVIDIA's Dynamo runtime, and requests to it.

The last step of `tools/run-local`, and what the end-to-end tests build on:

    python -m tools.serving --kubeconfig .local/cluster/kubeconfig --namespace dynamo-local \
        --graph mocker-agg --model-claim model-store --since <epoch seconds when `pulumi up` began>

runs the graph's pods as processes (tools/podprocs.py), each with the Dynamo runtime release of its
image (tools/dynamo_runtime.py), waits until the frontend lists the model, sends one chat completion,
prints the answer, which release served it and how long the graph took to serve its first token since
`--since`, and stops every process it started.
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from dynamo_infra import __version__
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient
from tools import dynamo_runtime
from tools.kubelet import claim_dir
from tools.podprocs import MAIN_CONTAINER, SUBSTITUTIONS, PodProcess, PodProcesses, pods_of

# The example graphs' model claim, and the tiny model's folder on it (what their --model-path names).
MODEL_CLAIM = "model-store"
MODEL_FOLDER = "tiny-chat"
# The example graphs' frontend component.
FRONTEND = "Frontend"
TINY_MODEL_SCRIPT = Path(__file__).with_name("tinymodel.py")
# How long a graph may take to list its model after its processes start.
SERVE_TIMEOUT_S = 120.0
# Width the block of the harness's substitutions wraps at.
LINE_WIDTH = 110
# Requests' timeout (a mocker answers in well under a second).
REQUEST_TIMEOUT_S = 30.0
# User agent of the harness's own (admin) requests, told apart from the runtime's in the audit log.
HARNESS_USER_AGENT = f"dynamo-infra-podprocs/{__version__}"


def write_tiny_model(folder: Path, release: str = dynamo_runtime.DYNAMO_VERSION) -> Path:
    """The tokenizer-only model in `folder`, built by a runtime virtualenv's `tokenizers`."""
    python = dynamo_runtime.ensure(release)
    subprocess.run([str(python), str(TINY_MODEL_SCRIPT), str(folder)], check=True, capture_output=True)
    return folder


@dataclass(frozen=True)
class Completion:
    text: str
    completion_tokens: int
    # Seconds from sending the request to its first streamed token.
    first_token_s: float
    # When the first token arrived (epoch seconds).
    first_token_at: float
    model: str


def models(base_url: str) -> list[str]:
    """The model ids the frontend lists (empty while it knows no worker, or is not up)."""
    try:
        r = httpx.get(f"{base_url}/v1/models", timeout=5)
    except httpx.TransportError:
        return []
    if r.status_code != 200:
        return []
    return [m["id"] for m in r.json().get("data") or []]


def wait_for_model(base_url: str, pods: PodProcesses | None = None, timeout: float = SERVE_TIMEOUT_S) -> str:
    """The first model the frontend lists, waiting up to `timeout` seconds (failing at once when one
    of `pods`' processes exits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = models(base_url)
        if found:
            return found[0]
        crashed = pods.exited() if pods is not None else []
        if crashed:
            raise RuntimeError(
                f"{', '.join(p.pod for p in crashed)} exited "
                f"({', '.join(str(p.popen.returncode) for p in crashed if p.popen)}):\n{crashed[0].tail()}"
            )
        time.sleep(0.2)
    raise TimeoutError(f"{base_url}/v1/models listed no model within {timeout:.0f}s")


def chat(base_url: str, model: str, prompt: str = "hello world", max_tokens: int = 8) -> Completion:
    """One streamed chat completion: its text, token count and time to the first token."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    started, started_at = time.monotonic(), time.time()
    first: float | None = None
    text: list[str] = []
    tokens = 0
    with httpx.stream("POST", f"{base_url}/v1/chat/completions", json=body, timeout=REQUEST_TIMEOUT_S) as r:
        if r.status_code != 200:
            r.read()
            raise RuntimeError(f"chat completion: HTTP {r.status_code}: {r.text[:500]}")
        for line in r.iter_lines():
            if not line.startswith("data:") or line.strip() == "data: [DONE]":
                continue
            event = json.loads(line[len("data:") :])
            for choice in event.get("choices") or []:
                delta = (choice.get("delta") or {}).get("content")
                if delta:
                    first = first if first is not None else time.monotonic() - started
                    text.append(delta)
            if event.get("usage"):
                tokens = int(event["usage"].get("completion_tokens") or 0)
    if first is None:
        raise RuntimeError(f"chat completion: no token streamed ({tokens} counted)")
    return Completion("".join(text), tokens, first, started_at + first, model)


def graph_releases(kube: KubeClient, namespace: str, graph: str) -> list[str]:
    """The Dynamo runtime releases the graph's pods' main containers run on (their images')."""
    images = {
        c.get("image", "")
        for pod in kube.list("v1", "Pod", namespace, label_selector=pods_of(graph))
        for c in pod["spec"].get("containers") or []
        if c["name"] == MAIN_CONTAINER
    }
    found = set()
    for image in images:
        try:
            found.add(dynamo_runtime.for_image(image).version)
        except ValueError:
            continue  # an image the harness runs otherwise (PodProcesses' image_bins) or refuses
    return sorted(found)


@contextmanager
def serving(
    kube: KubeClient,
    conn: connection.Connection,
    *,
    namespace: str,
    graph: str,
    root: Path,
    model_claim: str | None = None,
) -> Iterator[PodProcesses]:
    """The graph's pods running as processes (following scale changes) until the block ends."""
    releases = graph_releases(kube, namespace, graph)
    for version in releases:
        dynamo_runtime.ensure(version)
    if model_claim:
        write_tiny_model(claim_dir(kube, namespace, model_claim) / MODEL_FOLDER, *releases[:1])
    pods = PodProcesses(
        kube,
        conn,
        namespace=namespace,
        selector=pods_of(graph),
        root=root,
        runtime_bin=dynamo_runtime.image_bin,
    )
    try:
        pods.sync()
        pods.follow()
        yield pods
    finally:
        pods.close()


@dataclass(frozen=True)
class Served:
    """A graph whose frontend lists its model: the processes, the frontend's URL, the model id."""

    pods: PodProcesses
    url: str
    model: str


@contextmanager
def served(
    kube: KubeClient,
    conn: connection.Connection,
    *,
    namespace: str,
    graph: str,
    root: Path,
    model_claim: str | None = MODEL_CLAIM,
    frontend: str = FRONTEND,
) -> Iterator[Served]:
    """`serving`, once the frontend lists a model."""
    with serving(kube, conn, namespace=namespace, graph=graph, root=root, model_claim=model_claim) as pods:
        url = pods.url(frontend, "http")
        yield Served(pods, url, wait_for_model(url, pods))


def release_of(proc: PodProcess) -> str:
    """The `ai-dynamo` release installed where a process's `python3` comes from (what it runs)."""
    assert proc.bin is not None
    return subprocess.run(
        [str(proc.bin / "python3"), "-c", "import importlib.metadata as m; print(m.version('ai-dynamo'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def harness_lines(runtimes: Sequence[tuple[str, Path, float | None]]) -> list[str]:
    """The releases the pods run on (version, virtualenv, install seconds) and the harness's
    substitutions, as one short block."""
    # Wrapped between the names, never inside one.
    names: list[str] = []
    for s in SUBSTITUTIONS:
        if names and len(names[-1]) + len(s.name) + 2 <= LINE_WIDTH:
            names[-1] += f", {s.name}"
        else:
            names.append(f"  {s.name}")
    return [
        *(f"Dynamo runtime {v} (installed in {secs}s): {root}" for v, root, secs in runtimes),
        "pods run as processes of their image's runtime, differing only by (tools/podprocs.py SUBSTITUTIONS):",
        *names,
    ]


def pod_lines(procs: Sequence[PodProcess], root: Path) -> list[str]:
    """Each process as its pod's own command (the harness's wrapper is in its log), then where the logs are."""
    return [
        *(f"  pod {p.pod}: {shlex.join(p.command)}" for p in sorted(procs, key=lambda p: p.pod)),
        f"  logs: {root}/<pod>/main.log (the exact argv and env: command.json beside it)",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--graph", required=True)
    ap.add_argument("--frontend", default=FRONTEND, help="the frontend component's name")
    ap.add_argument(
        "--model-claim", default=MODEL_CLAIM, help="claim to put the tiny model on (folder tiny-chat)"
    )
    ap.add_argument("--since", type=float, help="epoch seconds `pulumi up` began (for time to first token)")
    ap.add_argument(
        "--root", default=".local/pods", type=Path, help="folder of the processes' files and logs"
    )
    args = ap.parse_args(argv)
    # A terminated run still stops the processes it started (the `serving` block's cleanup).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))

    started = time.time()
    conn = connection.load(args.kubeconfig)
    with KubeClient(conn, HARNESS_USER_AGENT) as kube:
        runtimes: list[tuple[str, Path, float | None]] = []
        for version in graph_releases(kube, args.namespace, args.graph):
            dynamo_runtime.ensure(version)
            runtimes.append((version, dynamo_runtime.root(version), dynamo_runtime.setup_seconds(version)))
    print()
    for line in harness_lines(runtimes):
        print(line)
    with (
        KubeClient(conn, HARNESS_USER_AGENT) as kube,
        serving(
            kube,
            conn,
            namespace=args.namespace,
            graph=args.graph,
            root=args.root,
            model_claim=args.model_claim,
        ) as pods,
    ):
        for line in pod_lines(pods.running(), args.root):
            print(line)
        try:
            url = pods.url(args.frontend, "http")
            model = wait_for_model(url, pods)
            answer = chat(url, model)
        except (TimeoutError, RuntimeError, KeyError) as e:
            print(f"the graph does not serve: {e}\n{pods.logs()}", file=sys.stderr)
            return 1
        print(f"\nPOST {url}/v1/chat/completions (model {model}): {answer.text.strip()!r}")
        releases = sorted({f"{p.component} {release_of(p)}" for p in pods.running()})
        print(f"  served by Dynamo runtime {', '.join(releases)}")
        print(f"  {answer.completion_tokens} tokens, first token after {answer.first_token_s * 1000:.0f} ms")
        if args.since:
            print(f"  first token {answer.first_token_at - args.since:.1f}s after `pulumi up` began")
        print(f"  processes up to first token: {time.time() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
