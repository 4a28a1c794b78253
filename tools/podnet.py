"""The pod network of the pods-as-processes harness: an HTTP forward proxy on loopback.

kwok gives pods IP addresses (the local cluster's pod CIDR) that are not on this machine, and
tools/podprocs.py moves each container port to a free loopback port. Whatever calls a pod the way a
cluster's own controllers do, at `http://<podIP>:<containerPort>` from its EndpointSlice (the agent
loading LoRA adapters), gets there through this proxy: it forwards a request for
`<podIP>:<containerPort>` of a running pod process to `127.0.0.1:<the port standing in for it>`, and
answers 502 for a pod address no process serves. Requests to any other host go there unchanged (the
runtime's own calls to the addresses its processes advertise). Pod processes get HTTP_PROXY pointing
here and NO_PROXY for loopback, so their API-server calls stay direct.

    with PodNetwork(route) as net:        # route(podIP, port) -> loopback port, or None
        env["HTTP_PROXY"] = net.url
"""

from __future__ import annotations

import http.client
import ipaddress
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tools.localcluster import POD_CIDR

# Hosts a pod process reaches directly (the API server and every loopback port of the harness).
NO_PROXY = "127.0.0.1,localhost"
# Seconds a forwarded request may take.
FORWARD_TIMEOUT_S = 30.0
# Request headers that belong to one hop only (RFC 9110 §7.6.1), not forwarded.
HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)

# Response headers the proxy writes itself.
REPLACED_HEADERS = frozenset({"content-length", "date", "server"})

Route = Callable[[str, int], int | None]


class PodNetwork:
    """A forward proxy for plain HTTP to pod addresses; `requests` records what went where."""

    def __init__(self, route: Route, pod_cidr: str = POD_CIDR) -> None:
        self.route = route
        self.pod_network = ipaddress.ip_network(pod_cidr, strict=False)
        # (method, "host:port/path", status) of every request, oldest first.
        self.requests: list[tuple[str, str, int]] = []
        network = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def forward(self) -> None:
                network.forward(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = forward

            def do_CONNECT(self) -> None:
                self.send_error(501, "the pod network forwards plain HTTP only")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="podnet", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> PodNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def is_pod(self, host: str) -> bool:
        try:
            return ipaddress.ip_address(host) in self.pod_network
        except ValueError:
            return False

    def forward(self, handler: BaseHTTPRequestHandler) -> None:
        target = urlsplit(handler.path)
        host, port = target.hostname or "", target.port or 80
        where = f"{host}:{port}{target.path}"
        upstream: tuple[str, int] = (host, port)
        if self.is_pod(host):
            local = self.route(host, port) if target.scheme == "http" else None
            if local is None:
                self.requests.append((handler.command, where, 502))
                handler.send_error(502, f"no pod process serves {host}:{port}")
                return
            upstream = ("127.0.0.1", local)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_HEADERS}
        path = target.path + (f"?{target.query}" if target.query else "")
        conn = http.client.HTTPConnection(*upstream, timeout=FORWARD_TIMEOUT_S)
        try:
            conn.request(handler.command, path or "/", body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        except OSError as e:
            self.requests.append((handler.command, where, 502))
            handler.send_error(502, f"{host}:{port} (at {upstream[0]}:{upstream[1]}): {e}")
            return
        finally:
            conn.close()
        self.requests.append((handler.command, where, resp.status))
        handler.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP_HEADERS | REPLACED_HEADERS:
                handler.send_header(k, v)
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(data)
        handler.close_connection = True
