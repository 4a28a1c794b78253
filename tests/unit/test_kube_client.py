"""The client against a mock API server (httpx MockTransport): `Retry-After` honoured on 429 and 503,
5xx retried only for requests that mean the same sent twice, and waits that watch (bookmarks, 410 Gone,
a refused watch falling back to polling)."""

from __future__ import annotations

import email.utils
import json
from collections.abc import Callable, Iterator

import httpx
import pytest

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube import client as kube
from dynamo_infra.kube import retry, watch
from dynamo_infra.kube.client import KubeClient, MayWatch, stub
from dynamo_infra.kube.connection import Connection
from dynamo_infra.kube.errors import KubeError

SERVER = "https://api.test:6443"
CONFIGMAP = stub("v1", "ConfigMap", "ns", "cm")
CORE_V1 = {"resources": [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True}]}
Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture()
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses the client and the poll make (without making them)."""
    pauses: list[float] = []
    monkeypatch.setattr(kube.time, "sleep", pauses.append)
    monkeypatch.setattr(watch.time, "sleep", pauses.append)
    return pauses


@pytest.fixture()
def mock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., KubeClient]]:
    made: list[KubeClient] = []

    def make(handler: Handler, may_watch: MayWatch | None = None) -> KubeClient:
        def new_http(self: KubeClient, pair: object) -> httpx.Client:
            return httpx.Client(base_url=SERVER, transport=httpx.MockTransport(handler))

        monkeypatch.setattr(KubeClient, "_new_http", new_http)
        client = KubeClient(Connection(server=SERVER, token="t"), may_watch=may_watch)
        made.append(client)
        return client

    yield make
    for c in made:
        c.close()


def answers(*responses: httpx.Response, seen: list[httpx.Request]) -> Handler:
    """A handler giving the responses in order (discovery answered apart), recording the requests."""
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1":
            return httpx.Response(200, json=CORE_V1)
        seen.append(request)
        return queue.pop(0)

    return handle


OK = httpx.Response(200, json={"kind": "ConfigMap", "metadata": {"name": "cm"}})


def test_429_waits_the_seconds_retry_after_names(mock: Callable[..., KubeClient], slept: list[float]) -> None:
    seen: list[httpx.Request] = []
    client = mock(answers(httpx.Response(429, headers={"Retry-After": "3"}), OK, seen=seen))
    assert client.get(CONFIGMAP) is not None
    assert len(seen) == 2 and slept == [3.0]


def test_503_waits_until_the_http_date_retry_after_names(
    mock: Callable[..., KubeClient], slept: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    now = 1_800_000_000.0
    monkeypatch.setattr(retry.time, "time", lambda: now)
    date = email.utils.formatdate(now + 7, usegmt=True)
    seen: list[httpx.Request] = []
    client = mock(answers(httpx.Response(503, headers={"Retry-After": date}), OK, seen=seen))
    # A server-side apply is retried like a read: applying the same fields twice is applying them once.
    client.apply({**CONFIGMAP, "data": {"k": "v"}})
    assert [r.method for r in seen] == ["PATCH", "PATCH"] and slept == [7.0]


def test_retry_after_is_bounded_and_unreadable_ones_back_off(
    mock: Callable[..., KubeClient], slept: list[float]
) -> None:
    seen: list[httpx.Request] = []
    client = mock(
        answers(
            httpx.Response(429, headers={"Retry-After": "86400"}),
            httpx.Response(429, headers={"Retry-After": "soon"}),
            httpx.Response(429),
            OK,
            seen=seen,
        )
    )
    assert client.get(CONFIGMAP) is not None
    assert slept == [retry.MAX_RETRY_AFTER_S, retry.backoff(2), retry.backoff(3)]
    assert retry.retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date past: at once


def test_5xx_is_not_retried_for_what_is_not_idempotent(
    mock: Callable[..., KubeClient], slept: list[float]
) -> None:
    seen: list[httpx.Request] = []
    unavailable = httpx.Response(503, headers={"Retry-After": "1"}, json={"message": "busy"})
    client = mock(answers(unavailable, unavailable, seen=seen))
    with pytest.raises(KubeError) as e:
        client.patch(CONFIGMAP, [{"op": "add", "path": "/data/k", "value": "v"}])
    assert e.value.status == 503 and len(seen) == 1 and slept == []
    # 429: the server handled nothing, so even a JSON patch is sent again.
    client = mock(answers(httpx.Response(429, headers={"Retry-After": "1"}), OK, seen=seen))
    client.patch(CONFIGMAP, [{"op": "add", "path": "/data/k", "value": "v"}])
    assert len(seen) == 3 and slept == [1.0]


def lines(*events: Manifest) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def configmap(version: str, **data: str) -> Manifest:
    return {"metadata": {"name": "cm", "namespace": "ns", "resourceVersion": version}, "data": data}


def listing(version: str, *items: Manifest) -> httpx.Response:
    return httpx.Response(200, json={"metadata": {"resourceVersion": version}, "items": list(items)})


def test_a_deletion_wait_watches_past_bookmarks_and_relists_after_410(
    mock: Callable[..., KubeClient], slept: list[float]
) -> None:
    seen: list[httpx.Request] = []
    client = mock(
        answers(
            listing("10", configmap("9")),
            # The first watch: a bookmark moves the version on, then the version is compacted away.
            httpx.Response(
                200,
                content=lines(
                    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}},
                    {"type": "MODIFIED", "object": configmap("13", k="v")},
                    {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}},
                ),
            ),
            listing("20", configmap("19")),
            # The server ends a watch at its timeoutSeconds; the next one goes on from the last version.
            httpx.Response(
                200, content=lines({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "21"}}})
            ),
            httpx.Response(200, content=lines({"type": "DELETED", "object": configmap("22")})),
            seen=seen,
        )
    )
    assert client.wait_deleted(CONFIGMAP, 30)
    watches = [dict(r.url.params) for r in seen if r.url.params.get("watch") == "1"]
    assert [w["resourceVersion"] for w in watches] == ["10", "20", "21"]
    assert all(
        w["fieldSelector"] == "metadata.name=cm" and w["allowWatchBookmarks"] == "true" for w in watches
    )
    assert all(0 < int(w["timeoutSeconds"]) <= watch.WATCH_TIMEOUT_S for w in watches)
    # Discovery and two lists; three watches; no pause.
    assert slept == [] and client.requests["GET"] == 3 and client.requests["WATCH"] == 3


def test_a_refused_watch_falls_back_to_polling_and_is_not_tried_again(
    mock: Callable[..., KubeClient], slept: list[float]
) -> None:
    seen: list[httpx.Request] = []
    client = mock(
        answers(
            listing("10", configmap("9")),
            httpx.Response(403, json={"kind": "Status", "code": 403}),
            OK,  # the poll's first get: still there
            httpx.Response(404, json={}),  # gone
            httpx.Response(404, json={}),  # the next wait polls at once
            seen=seen,
        )
    )
    assert client.wait_deleted(CONFIGMAP, 30, poll=0.5)
    assert slept == [watch.FIRST_POLL_S]
    assert (
        client.wait_deleted(CONFIGMAP, 30) and client.requests["WATCH"] == 1 and not client.watches(CONFIGMAP)
    )


def test_a_resource_the_client_may_not_watch_is_polled(
    mock: Callable[..., KubeClient], slept: list[float]
) -> None:
    seen: list[httpx.Request] = []
    client = mock(
        answers(OK, OK, httpx.Response(404, json={}), seen=seen), may_watch=lambda group, plural: False
    )
    assert client.wait_deleted(CONFIGMAP, 30, poll=0.5)
    assert [r.method for r in seen] == ["GET"] * 3 and client.requests["WATCH"] == 0
    assert slept == [watch.FIRST_POLL_S, 2 * watch.FIRST_POLL_S]


def test_a_wait_for_a_change_returns_the_object_as_changed(
    mock: Callable[..., KubeClient], slept: list[float]
) -> None:
    seen: list[httpx.Request] = []
    client = mock(
        answers(
            listing("10", configmap("9")),
            httpx.Response(200, content=lines({"type": "MODIFIED", "object": configmap("11", k="v")})),
            seen=seen,
        )
    )
    met, last = client.wait_for(CONFIGMAP, lambda cm: watch.resource_version(cm) != "9", 30)
    # Objects in watch events and lists are typed as the client knows them.
    assert met and last is not None and last["data"] == {"k": "v"} and last["kind"] == "ConfigMap"


def test_a_watch_that_ends_at_once_gives_way_to_polling(
    mock: Callable[..., KubeClient], slept: list[float]
) -> None:
    seen: list[httpx.Request] = []
    client = mock(
        answers(
            listing("10", configmap("9")),
            httpx.Response(200, content=b""),
            httpx.Response(404, json={}),
            seen=seen,
        )
    )
    assert client.wait_deleted(CONFIGMAP, 30)
    assert [r.url.params.get("watch") for r in seen] == [None, "1", None] and slept == []
    # Not refused: the next wait watches again.
    assert client.watches(CONFIGMAP)
