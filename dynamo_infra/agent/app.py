"""The agent: kopf watches of the recorded graphs' DGDs, DGDSAs and workloads in its namespaces; every
event reconciles the graph it belongs to.

Level-based: what to write is decided from the objects as they are now, so a missed, repeated or
reordered event changes nothing, and kopf keeps no state in any object (watching handlers only: no
progress or diff-base annotations, no finalizers, no Kubernetes events, no peering objects). A failed
reconcile is retried on the graph's next event, or by the periodic resync.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import kopf

from dynamo_infra import __version__
from dynamo_infra.agent import lora
from dynamo_infra.agent.errors import named
from dynamo_infra.agent.scale import carry_adapters, scale_targets
from dynamo_infra.agent.status import (
    RecordError,
    components_of,
    graph_of,
    recorded,
    status_changes,
    write_statuses,
)
from dynamo_infra.kube.client import KubeClient, proxied_from_environment, stub
from dynamo_infra.kube.connection import Connection, from_environment
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.kube.exec_credential import Credential
from dynamo_infra.render.names import LABEL_GRAPH
from dynamo_infra.render.runtime.agent import AGENT_NAME
from dynamo_infra.render.runtime.records import (
    COMPONENTS_ANNOTATION,
    DGD_KIND,
    DGDSA_KIND,
    RECORD_API_VERSION,
)

LOG = logging.getLogger("dynamo_infra.agent")
# Field manager of everything the agent writes.
FIELD_MANAGER = AGENT_NAME
# User agent of the agent's requests (its own, for the API server's audit log).
USER_AGENT = f"dynamo-infra-agent/{__version__}"
# Every recorded graph is reconciled this often even without events (retries failures).
RESYNC_INTERVAL_S = 60.0
# The API server ends each watch after this long; kopf resumes it from the last resource version.
WATCH_SERVER_TIMEOUT_S = 300
# A watch connection silent for longer than this is dropped and reopened.
WATCH_CLIENT_TIMEOUT_S = 330.0
# Connecting to the API server gives up after this long (and is retried with backoff).
CONNECT_TIMEOUT_S = 10.0
# Backoff between retries of a failed API request of kopf's own (watch, list).
REQUEST_BACKOFFS_S = (1.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0)
# On SIGTERM, in-flight handlers get this long before the process exits.
EXIT_TIMEOUT_S = 20.0

_GROUP, _VERSION = RECORD_API_VERSION.split("/")
# The kinds a component's status and replicas live in (group, version, plural).
WORKLOADS = (
    ("apps", "v1", "deployments"),
    ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
    ("grove.io", "v1alpha1", "podcliques"),
    ("grove.io", "v1alpha1", "podcliquescalinggroups"),
)


class Api:
    """One API client shared by the handlers, rebuilt from fresh credentials after a 401."""

    def __init__(self, load: Callable[[], Connection]) -> None:
        self.load = load
        self._client: KubeClient | None = None
        self._lock = threading.Lock()

    def client(self) -> KubeClient:
        with self._lock:
            if self._client is None:
                self._client = KubeClient(self.load(), USER_AGENT)
            return self._client

    def reset(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
            self._client = None


def reconcile_graph(client: KubeClient, namespace: str, graph: str, log: Callable[[str], None]) -> None:
    """Carry the graph's replica requests to its workloads and write its DGD and DGDSA status."""
    dgd = client.get(stub(RECORD_API_VERSION, DGD_KIND, namespace, graph))
    if dgd is None or not recorded(dgd):
        return
    components = components_of(dgd)
    adapters = [a for a in client.list(RECORD_API_VERSION, DGDSA_KIND, namespace) if graph_of(a) == graph]
    dgd = carry_adapters(client, dgd, components, adapters, FIELD_MANAGER, log)
    scale_targets(client, dgd, components, FIELD_MANAGER, log)
    written = write_statuses(client, status_changes(client, dgd, components, adapters), FIELD_MANAGER)
    if written:
        log(f"status written: {', '.join(written)}")


class Graphs:
    """Reconciles graphs off the event loop, one at a time per graph; events arriving meanwhile
    coalesce into one more pass."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._dirty: set[tuple[str, str]] = set()
        self._running: set[tuple[str, str]] = set()

    async def touch(self, namespace: str, graph: str) -> None:
        key = (namespace, graph)
        self._dirty.add(key)
        if key in self._running:
            return
        self._running.add(key)
        try:
            while key in self._dirty:
                self._dirty.discard(key)
                await asyncio.to_thread(self._reconcile, namespace, graph)
        finally:
            self._running.discard(key)

    def _reconcile(self, namespace: str, graph: str) -> None:
        def log(line: str) -> None:
            LOG.info("%s/%s: %s", namespace, graph, line)

        started = time.monotonic()
        try:
            reconcile_graph(self.api.client(), namespace, graph, log)
        except KubeError as e:
            if e.status == 401:
                self.api.reset()
            LOG.error("%s/%s: %s", namespace, graph, named(e))
        except RecordError as e:
            LOG.error("%s", e)
        else:
            LOG.debug("%s/%s: reconciled in %.3fs", namespace, graph, time.monotonic() - started)


def connection_info(conn: Connection, credential: Credential | None = None) -> kopf.ConnectionInfo:
    """kopf's connection: the credential (default: the connection's current one) until it is to be
    renewed, the context's namespace, the cluster's proxy."""
    cred = credential or conn.credential()
    expiration = datetime.datetime.fromtimestamp(cred.renew_after, datetime.UTC) if cred.renew_after else None
    return kopf.ConnectionInfo(
        server=conn.server,
        ca_data=conn.ca_pem,
        insecure=conn.insecure or None,
        scheme="Bearer" if cred.token else None,
        token=cred.token,
        certificate_data=cred.client_cert_pem,
        private_key_data=cred.client_key_pem,
        expiration=expiration,
        default_namespace=conn.namespace or None,
        proxy_url=conn.proxy_url or None,
        trust_env=proxied_from_environment(conn.server),
    )


class Login:
    """kopf's login handler: called at start, when the credential expires, and after a 401 (then the
    credential it gave last is still current, and is renewed)."""

    def __init__(self, load: Callable[[], Connection]) -> None:
        self.load = load
        self.last: Credential | None = None

    def __call__(self) -> kopf.ConnectionInfo:
        conn = self.load()
        cred = conn.credential()
        if cred == self.last:
            cred = conn.renew(cred) or cred
        self.last = cred
        return connection_info(conn, cred)


def register(registry: kopf.OperatorRegistry, graphs: Graphs) -> None:
    """The watching handlers: each event of a recorded DGD, of a DGDSA, of a graph's workload."""

    logins = Login(graphs.api.load)

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return logins()

    @kopf.on.event(
        _GROUP, _VERSION, "dynamographdeployments",
        annotations={COMPONENTS_ANNOTATION: kopf.PRESENT}, registry=registry,
    )  # fmt: skip
    async def graph_event(*, name: str, namespace: str | None, type: str, **_: Any) -> None:
        if type != "DELETED" and namespace:
            await graphs.touch(namespace, name)

    @kopf.on.event(_GROUP, _VERSION, "dynamographdeploymentscalingadapters", registry=registry)
    async def adapter_event(*, body: kopf.Body, namespace: str | None, **_: Any) -> None:
        graph = graph_of(dict(body))
        if graph and namespace:
            await graphs.touch(namespace, graph)

    async def workload_event(*, labels: kopf.Labels, namespace: str | None, **_: Any) -> None:
        if namespace:
            await graphs.touch(namespace, labels[LABEL_GRAPH])

    for group, version, plural in WORKLOADS:
        kopf.on.event(
            group, version, plural, id=f"workload-{plural}",
            labels={LABEL_GRAPH: kopf.PRESENT}, registry=registry,
        )(workload_event)  # fmt: skip


def settings(*, watch_timeout: int = WATCH_SERVER_TIMEOUT_S) -> kopf.OperatorSettings:
    s = kopf.OperatorSettings()
    s.peering.standalone = True
    s.posting.enabled = False
    # Namespaces are given exactly; no cluster-wide discovery of namespaces or CRDs (no rights to it).
    s.scanning.disabled = True
    s.watching.server_timeout = watch_timeout
    s.watching.client_timeout = max(WATCH_CLIENT_TIMEOUT_S, watch_timeout + 30.0)
    s.watching.connect_timeout = CONNECT_TIMEOUT_S
    s.networking.connect_timeout = CONNECT_TIMEOUT_S
    s.networking.error_backoffs = REQUEST_BACKOFFS_S
    s.process.ultimate_exiting_timeout = EXIT_TIMEOUT_S
    # Only the graphs' workloads are listed and watched (a server-side selector).
    for group, _version, plural in WORKLOADS:
        s.watching.label_selectors[group, plural] = LABEL_GRAPH
    return s


async def resync(graphs: Graphs, namespaces: Sequence[str], interval: float) -> None:
    """Reconcile every recorded graph every `interval` seconds."""
    while True:
        await asyncio.sleep(interval)
        for ns in namespaces:
            try:
                found = await asyncio.to_thread(graphs.api.client().list, RECORD_API_VERSION, DGD_KIND, ns)
            except KubeError as e:
                LOG.error("%s: %s", ns, named(e))
                continue
            for dgd in found:
                if recorded(dgd):
                    await graphs.touch(ns, dgd["metadata"]["name"])


async def serve(
    namespaces: Sequence[str],
    load: Callable[[], Connection] = from_environment,
    *,
    resync_interval: float = RESYNC_INTERVAL_S,
    stop: asyncio.Event | None = None,
) -> None:
    """Run the agent until SIGTERM/SIGINT (or `stop`)."""
    registry = kopf.OperatorRegistry()
    api = Api(load)
    graphs = Graphs(api)
    register(registry, graphs)
    lora.register(registry)
    resyncing = asyncio.create_task(resync(graphs, namespaces, resync_interval))
    LOG.info("watching the recorded graphs in namespaces %s", ", ".join(namespaces))
    try:
        await kopf.operator(
            registry=registry,
            settings=settings(),
            namespaces=list(namespaces),
            standalone=True,
            stop_flag=stop,
        )
    finally:
        resyncing.cancel()
        api.reset()


# Loggers that report every request or handler call at INFO: shown only at DEBUG.
CHATTY_LOGGERS = ("httpx", "kopf.objects", "kopf.activities")


def run(namespaces: Sequence[str], level: str = "INFO") -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if level != "DEBUG":
        for name in CHATTY_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
    asyncio.run(serve(namespaces))
