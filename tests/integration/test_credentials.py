"""Kubeconfigs as real clusters have them, against the local API server: exec credential plugins
whose tokens expire (bootstrap tokens the API server expires), client certificates, CA bundles,
`tls-server-name` and `proxy-url`."""

from __future__ import annotations

import base64
import datetime
import json
import random
import select
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.kube.errors import KubeError
from tests.conftest import DATA
from tests.integration.harness import copy_project, make_stack, unique, up
from tests.wait import wait_until
from tools import localpki
from tools.localcluster import LocalCluster

PLUGIN = Path(__file__).parent / "plugins" / "bootstrap_token.py"
# The bootstrap tokens' extra group, bound to cluster-admin while this module runs.
TOKEN_GROUP = "system:bootstrappers:dynamo-infra-creds"
BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "dynamo-infra-creds-tokens"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": TOKEN_GROUP}],
}
DEFAULT_NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
# The proxy's port: below Linux's ephemeral range (32768+), where outgoing connections take theirs.
PORTS = range(20000, 32768)
# Seed of the proxy's port choice.
SEED = 16
# A worker that cannot schedule until a node carries its pool label: `up` is mid-await meanwhile.
GRAPH = (DATA / "graphs" / "interrupt.yaml").read_text()
# Lifetime of the token whose renewal before expiry is checked.
SHORT_TOKEN_S = 3
# Token renewals an `up` held mid-await must make (its token lives 4 s).
RENEWALS = 3


@pytest.fixture(scope="module")
def tokens_bound(cluster: LocalCluster) -> Iterator[None]:
    with KubeClient(connection.load(str(cluster.kubeconfig))) as admin:
        admin.apply(BINDING)
        try:
            yield
        finally:
            admin.delete(BINDING)


def admin_config(cluster: LocalCluster) -> Manifest:
    return dict(json.loads(cluster.kubeconfig.read_text()))


def write_kubeconfig(
    folder: Path, cluster: LocalCluster, user: Manifest, cluster_entry: Manifest | None = None, **context: str
) -> Path:
    """A kubeconfig of the local cluster with `user`, the cluster entry changed by `cluster_entry`."""
    entry = dict(admin_config(cluster)["clusters"][0]["cluster"])
    for key, value in (cluster_entry or {}).items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": entry}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", **context}}],
        "current-context": "x",
    }
    path = folder / "kubeconfig"
    path.write_text(json.dumps(cfg))
    return path


def exec_user(cluster: LocalCluster, log: Path, seconds: float, **env: str) -> Manifest:
    variables = {
        "ADMIN_KUBECONFIG": str(cluster.kubeconfig),
        "TOKEN_SECONDS": str(seconds),
        "TOKEN_GROUP": TOKEN_GROUP,
        "PLUGIN_LOG": str(log),
        **env,
    }
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(PLUGIN)],
            "env": [{"name": k, "value": v} for k, v in variables.items()],
            "provideClusterInfo": True,
            "interactiveMode": "Never",
        }
    }


def runs(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def whoami(client: KubeClient) -> Manifest:
    """The user the API server authenticated the client as (a SelfSubjectReview)."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    answer = client.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=review)
    return dict(answer["status"]["userInfo"])


def test_exec_token_is_renewed_before_it_expires(
    cluster: LocalCluster, tokens_bound: None, tmp_path: Path
) -> None:
    log = tmp_path / "plugin.log"
    conn = connection.load(str(write_kubeconfig(tmp_path, cluster, exec_user(cluster, log, SHORT_TOKEN_S))))
    with KubeClient(conn) as client:
        first = whoami(client)
        # The plugin logs its run after it stamped the token's expiry: at most this.
        expires = runs(log)[0]["time"] + SHORT_TOKEN_S
        wait_until(lambda: time.time() > expires, 2 * SHORT_TOKEN_S, 0.1, what="the first token to expire")
        second = whoami(client)
        assert client.requests["POST"] == 2  # no request was refused and sent again
    assert first["username"].startswith("system:bootstrap:") and TOKEN_GROUP in first["groups"]
    assert second["username"] != first["username"]  # a new token, from a second run
    seen = runs(log)
    assert len(seen) == 2 and {r["server"] for r in seen} == {cluster.server}  # provideClusterInfo
    assert {r["apiVersion"] for r in seen} == {"client.authentication.k8s.io/v1"}


def test_a_refused_exec_token_runs_the_plugin_again(
    cluster: LocalCluster, tokens_bound: None, tmp_path: Path
) -> None:
    log = tmp_path / "plugin.log"
    user = exec_user(cluster, log, 2, TOKEN_HIDE_EXPIRY="1")
    conn = connection.load(str(write_kubeconfig(tmp_path, cluster, user)))
    with KubeClient(conn) as client:
        client.get(DEFAULT_NS)
        stale = conn.credential().token
        assert stale and len(runs(log)) == 1
        # The API server refuses the token once it expired (after its authentication cache's TTL).
        ca = base64.b64decode(admin_config(cluster)["clusters"][0]["cluster"]["certificate-authority-data"])
        with httpx.Client(verify=connection.Connection(cluster.server, ca_pem=ca).ssl_context()) as raw:
            wait_until(
                lambda: (
                    raw.get(f"{cluster.server}/api", headers={"Authorization": f"Bearer {stale}"}).status_code
                    == 401
                ),
                120,
                1,
                what="the API server to refuse the expired bootstrap token",
            )
        before, sent = client.requests["GET"], time.time()
        assert client.get(DEFAULT_NS) is not None
        assert client.requests["GET"] == before + 2  # refused, then sent again with the new token
    assert len(runs(log)) == 2
    # The API server's audit log shows the refusal (so it would show one during an up).
    assert any(refused_between(e, sent - 1, time.time() + 1) for e in cluster.audit_events("dynamo-infra"))


def test_pulumi_up_whose_await_outlives_the_token(
    cluster: LocalCluster, tokens_bound: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("creds-up")
    log = root / "plugin.log"
    # A CA bundle by relative path: the providers get the kubeconfig's content, read elsewhere.
    (root / "ca.crt").write_bytes((cluster.root / "pki" / "apiserver.crt").read_bytes())
    bundle = {"certificate-authority-data": None, "certificate-authority": "ca.crt"}
    kubeconfig = write_kubeconfig(root, cluster, exec_user(cluster, log, 4), bundle)
    project = copy_project(root)
    pool, ns = unique("creds"), unique("creds")
    graph = project / "examples" / "creds.yaml"
    graph.write_text(GRAPH.replace("intr", "creds").replace("NODE_POOL", pool))
    # Unrestricted: the graphs' providers use `kubeconfig`, the exec plugin's credential.
    stack = make_stack(
        project, cluster, "creds", ns, [graph], restricted=False, **{"await": {"timeoutSeconds": 300}}
    )
    from pulumi import automation as auto

    stack.set_config("dynamo-infra:kubeconfigPath", auto.ConfigValue(str(kubeconfig)))
    result: list[auto.UpResult] = []
    with KubeClient(connection.load(str(cluster.kubeconfig))) as admin:
        worker = threading.Thread(target=lambda: result.append(up(stack)))
        started = time.time()
        worker.start()
        try:
            # Held: the worker cannot schedule. Several token lifetimes pass mid-await.
            def worker_deployment() -> bool:
                assert worker.is_alive(), "the up ended before it applied the worker's Deployment"
                return any(
                    d["metadata"]["name"] != "creds-frontend" for d in admin.list("apps/v1", "Deployment", ns)
                )

            wait_until(worker_deployment, 240, 1, what="the worker Deployment")
            held = time.time()

            def renewed_while_held() -> list[dict[str, Any]]:
                assert worker.is_alive(), "the up ended while the worker was held"
                during = [r for r in runs(log) if r["time"] >= held]
                return during if len(during) >= RENEWALS else []

            during = wait_until(renewed_while_held, 60, 1, what=f"{RENEWALS} token renewals mid-await")
            path = "/api/v1/nodes/kwok-gpu-0"
            admin.request("PATCH", path, body={"metadata": {"labels": {"pool": pool}}},
                          content_type="application/merge-patch+json")  # fmt: skip
            worker.join(300)
            refused = [
                e for e in cluster.audit_events("dynamo-infra") if refused_between(e, started, time.time())
            ]
        finally:
            admin.request("PATCH", "/api/v1/nodes/kwok-gpu-0", body={"metadata": {"labels": {"pool": None}}},
                          content_type="application/merge-patch+json")  # fmt: skip
            stack.destroy(on_output=lambda _: None)
            admin.delete(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, propagation="Background"
            )
    assert result and result[0].outputs["graphs"].value["creds"]["state"] == "successful"
    # The awaiting client renewed its 4 s token while held (once per ~3 s, not once per client),
    # before it expired: the API server refused none of the up's requests.
    assert len(during) >= RENEWALS, during
    assert refused == []


def refused_between(event: Manifest, start: float, end: float) -> bool:
    """Whether an audit event is a 401 received between `start` and `end` (epoch seconds)."""
    received = datetime.datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00"))
    return event.get("responseStatus", {}).get("code") == 401 and start <= received.timestamp() <= end


def test_client_certificates_from_files_data_and_exec(cluster: LocalCluster, tmp_path: Path) -> None:
    cert, key = cluster.issue_client_cert("creds-user", ["creds-group"])
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "user.crt").write_bytes(cert)
    (tmp_path / "certs" / "user.key").write_bytes(key)
    users = {
        "files": {"client-certificate": "certs/user.crt", "client-key": "certs/user.key"},  # relative paths
        "data": {
            "client-certificate-data": base64.b64encode(cert).decode(),
            "client-key-data": base64.b64encode(key).decode(),
        },
        "exec": exec_user(
            cluster,
            tmp_path / "plugin.log",
            60,
            CLIENT_CERT_FILE=str(tmp_path / "certs" / "user.crt"),
            CLIENT_KEY_FILE=str(tmp_path / "certs" / "user.key"),
        ),
    }
    for kind, user in users.items():
        conn = connection.load(str(write_kubeconfig(tmp_path, cluster, user)))
        with KubeClient(conn) as client:
            me = whoami(client)
        assert me["username"] == "creds-user" and "creds-group" in me["groups"], (kind, me)


def test_ca_bundle_file_tls_server_name_and_a_wrong_ca(cluster: LocalCluster, tmp_path: Path) -> None:
    token = {"token": admin_config(cluster)["users"][0]["user"]["token"]}
    (tmp_path / "ca.crt").write_bytes((cluster.root / "pki" / "apiserver.crt").read_bytes())
    bundle = {"certificate-authority-data": None, "certificate-authority": "ca.crt"}
    with KubeClient(connection.load(str(write_kubeconfig(tmp_path, cluster, token, bundle)))) as client:
        assert client.get(DEFAULT_NS) is not None
    named = {"tls-server-name": "kubernetes.default"}  # one of the serving certificate's names
    with KubeClient(connection.load(str(write_kubeconfig(tmp_path, cluster, token, named)))) as client:
        assert client.get(DEFAULT_NS) is not None
    other_ca, _ = localpki.certificate("another-ca", [], None, ca=True)
    (tmp_path / "other.crt").write_bytes(other_ca)
    failures = {
        "wrong CA": {"certificate-authority-data": None, "certificate-authority": "other.crt"},
        "wrong name": {"tls-server-name": "elsewhere.invalid"},
    }
    for case, entry in failures.items():
        with KubeClient(connection.load(str(write_kubeconfig(tmp_path, cluster, token, entry)))) as client:
            started = time.monotonic()
            with pytest.raises(KubeError, match="is not trusted: its certificate failed verification") as e:
                client.get(DEFAULT_NS)
            assert time.monotonic() - started < 5, case  # not retried as if unreachable
            assert token["token"] not in str(e.value)


class ConnectProxy:
    """An HTTP CONNECT proxy on loopback (a thread per tunnel) that counts its tunnels."""

    def __init__(self) -> None:
        self.tunnels = 0
        self.server = self._listen()
        self.port = self.server.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @staticmethod
    def _listen() -> socket.socket:
        """A listener on a free loopback port from PORTS (seeded choice)."""
        for port in random.Random(SEED).sample(PORTS, 50):
            try:
                return socket.create_server(("127.0.0.1", port))
            except OSError:
                continue
        raise RuntimeError(f"no free port in {PORTS}")

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
            method, target = head.split(b" ")[:2]
            if method != b"CONNECT":
                client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
                return
            host, port = target.decode().rsplit(":", 1)
            with socket.create_connection((host, int(port))) as upstream:
                self.tunnels += 1
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                pair = {client: upstream, upstream: client}
                while True:
                    ready, _, _ = select.select(list(pair), [], [], 30)
                    if not ready:
                        return
                    for sock in ready:
                        data = sock.recv(65536)
                        if not data:
                            return
                        pair[sock].sendall(data)

    def close(self) -> None:
        self.server.close()


def test_proxy_url_tunnels_requests(
    cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = {"token": admin_config(cluster)["users"][0]["user"]["token"]}
    proxy = ConnectProxy()
    try:
        url = f"http://127.0.0.1:{proxy.port}"
        path = write_kubeconfig(tmp_path, cluster, token, {"proxy-url": url}, namespace="team-a")
        conn = connection.load(str(path))
        assert conn.proxy_url == url and conn.namespace == "team-a"
        with KubeClient(conn) as client:
            for _ in range(3):
                assert client.get(DEFAULT_NS) is not None
        assert proxy.tunnels >= 1
        # HTTPS_PROXY from the environment does not apply to a loopback server (as in client-go).
        monkeypatch.setenv("HTTPS_PROXY", url)
        before = proxy.tunnels
        plain = connection.load(str(write_kubeconfig(tmp_path, cluster, token)))
        with KubeClient(plain) as client:
            assert client.get(DEFAULT_NS) is not None
        assert proxy.tunnels == before
    finally:
        proxy.close()
