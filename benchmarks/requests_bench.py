"""The `requests` section: Kubernetes API requests a stack run makes, by client (user agent), verb and
resource, from the local control plane's audit log: first `up`, no-op `up`, scaling one component,
an image bump, destroy, for one 3-component mocker graph (tests/e2e/graphs/mocker-disagg.yaml)."""

from __future__ import annotations

import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, Figure, local_stack

GRAPH = REPO / "tests" / "e2e" / "graphs" / "mocker-disagg.yaml"
NAMESPACE = "bench-requests"
# User agents of a run (the program, our dynamic providers, Pulumi's Kubernetes provider); every
# other client (controllers, kwok, the volume provisioner) is the control plane's own background.
RUN_CLIENTS = ("dynamo-infra", "pulumi")
# Verbs that read; every other verb writes.
READ_VERBS = frozenset({"get", "list", "watch"})
# Target: a no-op `up` writes nothing.
NOOP_WRITES_TARGET = 0
IMAGE = "nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.4.0"
BUMPED_IMAGE = "nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.4.1"


def client_of(event: Mapping[str, Any]) -> str:
    """The client name of an audit event: its user agent up to the first '/'."""
    return str(event.get("userAgent", "")).split("/")[0] or "?"


def request_of(event: Mapping[str, Any]) -> str:
    """'verb resource[/subresource]' of an audit event."""
    ref = event.get("objectRef") or {}
    resource = str(ref.get("resource", event.get("requestURI", "?")))
    if ref.get("subresource"):
        resource += "/" + str(ref["subresource"])
    return f"{event.get('verb', '?')} {resource}"


def tally(events: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Requests by client, then by 'verb resource', most frequent first."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for e in events:
        out[client_of(e)][request_of(e)] += 1
    return {client: dict(counts.most_common()) for client, counts in sorted(out.items())}


def reads_writes(
    by_client: Mapping[str, Mapping[str, int]], clients: tuple[str, ...] = RUN_CLIENTS
) -> tuple[int, int]:
    """(reads, writes) made by the run's clients in a tally."""
    reads = writes = 0
    for client, requests in by_client.items():
        if not client.startswith(clients):
            continue
        for request, n in requests.items():
            if request.split(" ", 1)[0] in READ_VERBS:
                reads += n
            else:
                writes += n
    return reads, writes


def figures(quick: bool) -> list[Figure]:
    from tools import toolchain
    from tools.localcluster import LocalCluster

    toolchain.bin_dirs()
    out: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="bench-requests-") as d:
        root = Path(d)
        cluster = LocalCluster(root / "cluster").start()
        try:
            graph = root / "mocker-disagg.yaml"
            text = GRAPH.read_text()
            graph.write_text(text)
            stack = local_stack(root, cluster, "requests", graph, NAMESPACE)
            quiet: dict[str, Any] = {"on_output": lambda _: None}

            def step(name: str, run: Callable[[], object], target: int | None = None) -> None:
                before = len(cluster.audit_events())
                t0 = time.monotonic()
                run()
                seconds = time.monotonic() - t0
                by_client = tally(cluster.audit_events()[before:])
                reads, writes = reads_writes(by_client)
                run_requests = {c: r for c, r in by_client.items() if c.startswith(RUN_CLIENTS)}
                background = {
                    c: sum(r.values()) for c, r in by_client.items() if not c.startswith(RUN_CLIENTS)
                }
                detail = {"run_clients": run_requests, "background_clients": background}
                out.append(Figure(f"requests.{name}.writes", writes, "requests", target, detail=detail))
                out.append(Figure(f"requests.{name}.reads", reads, "requests"))
                out.append(
                    Figure(f"requests.{name}.seconds", round(seconds, 1), "s", note="wall time of the run")
                )

            step("first_up", lambda: stack.up(**quiet))
            step("noop_up", lambda: stack.up(**quiet), NOOP_WRITES_TARGET)
            scaled = text.replace(
                "subComponentType: decode\n      replicas: 1", "subComponentType: decode\n      replicas: 2"
            )
            assert scaled != text, "the graph's decode component has no `replicas: 1` to scale"
            graph.write_text(scaled)
            step("scale_one", lambda: stack.up(**quiet))
            bumped = scaled.replace(IMAGE, BUMPED_IMAGE)
            assert bumped != scaled, f"the graph uses no {IMAGE}"
            graph.write_text(bumped)
            step("image_bump", lambda: stack.up(**quiet))
            step("destroy", lambda: stack.destroy(**quiet))
        finally:
            cluster.stop()
    return out
