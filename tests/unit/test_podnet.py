"""The harness's pod network forwards `<podIP>:<containerPort>` to the pod process's loopback port."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tools.podnet import PodNetwork

POD_IP, CONTAINER_PORT = "10.244.0.7", 9090


class Echo(BaseHTTPRequestHandler):
    """A pod process: answers with its method, path and body."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        out = f"{self.command} {self.path} {body.decode()}".encode()
        self.send_response(500 if self.path.endswith("/fail") else 200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_DELETE = answer


@pytest.fixture()
def pod_process() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_requests_to_a_pod_address_reach_its_process(pod_process: int) -> None:
    routes = {(POD_IP, CONTAINER_PORT): pod_process}
    with (
        PodNetwork(lambda host, port: routes.get((host, port))) as net,
        httpx.Client(proxy=net.url) as client,
    ):
        posted = client.post(f"http://{POD_IP}:{CONTAINER_PORT}/v1/loras?x=1", json={"lora_name": "a"})
        assert (posted.status_code, posted.text) == (200, 'POST /v1/loras?x=1 {"lora_name":"a"}')
        failed = client.delete(f"http://{POD_IP}:{CONTAINER_PORT}/v1/loras/fail")
        assert (failed.status_code, failed.text) == (500, "DELETE /v1/loras/fail ")
        # An address no pod process has: a 502 naming it, as a real proxy answers an unreachable host.
        missing = client.get(f"http://{POD_IP}:8000/health")
        assert missing.status_code == 502 and f"{POD_IP}:8000" in missing.text
        # Any other host: forwarded as it is (here the pod process's own loopback address).
        direct = client.get(f"http://127.0.0.1:{pod_process}/metadata")
        assert (direct.status_code, direct.text) == (200, "GET /metadata ")
        assert net.requests == [
            ("POST", f"{POD_IP}:{CONTAINER_PORT}/v1/loras", 200),
            ("DELETE", f"{POD_IP}:{CONTAINER_PORT}/v1/loras/fail", 500),
            ("GET", f"{POD_IP}:8000/health", 502),
            ("GET", f"127.0.0.1:{pod_process}/metadata", 200),
        ]


def test_clients_honour_the_proxy_variables(pod_process: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a pod process's environment does to an httpx client (the agent's): pod addresses through the
    pod network, loopback direct."""
    routes = {(POD_IP, CONTAINER_PORT): pod_process}
    with PodNetwork(lambda host, port: routes.get((host, port))) as net:
        monkeypatch.setenv("HTTP_PROXY", net.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        with httpx.Client() as client:
            assert client.get(f"http://{POD_IP}:{CONTAINER_PORT}/live").text == "GET /live "
            assert client.get(f"http://127.0.0.1:{pod_process}/direct").text == "GET /direct "
        assert [path for _, path, _ in net.requests] == [f"{POD_IP}:{CONTAINER_PORT}/live"]
