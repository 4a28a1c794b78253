"""Readiness awaits watch the first object that is not ready, between looks, where the client may watch;
where it may not, they look again every POLL_INTERVAL_S as before."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import object_key, stub
from dynamo_infra.reconcile import base, workload

SERVICE = stub("v1", "Service", "ns", "svc")
CONFIGMAP = stub("v1", "ConfigMap", "ns", "cm")


class Cluster:
    """A fake client: the Service exists; the ConfigMap is created during the first wait."""

    def __init__(self, may_watch: bool) -> None:
        self.live: dict[str, Manifest] = {object_key(SERVICE): SERVICE}
        self.may_watch = may_watch
        self.waits: list[tuple[str, float]] = []
        self.gets = 0

    def get(self, obj: Manifest) -> Manifest | None:
        self.gets += 1
        return self.live.get(object_key(obj))

    def watches(self, obj: Manifest) -> bool:
        return self.may_watch

    def wait_for(
        self, obj: Manifest, until: Callable[[Manifest | None], bool], timeout: float, poll: float
    ) -> tuple[bool, Manifest | None]:
        self.waits.append((object_key(obj), timeout))
        assert not until(None)  # no change yet
        self.live[object_key(obj)] = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "5"}}
        return until(self.live[object_key(obj)]), self.live[object_key(obj)]


def objects() -> dict[str, Manifest]:
    return {object_key(o): o for o in (SERVICE, CONFIGMAP)}


def test_a_readiness_await_watches_the_object_not_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(workload.time, "sleep", slept.append)
    monkeypatch.setattr(base.time, "sleep", slept.append)
    cluster = Cluster(may_watch=True)
    status = workload.await_ready(cluster, objects(), 600, "c")  # type: ignore[arg-type]
    assert status.ready and slept == []
    # Watched until the next progress line at most, then looked at again.
    assert cluster.waits == [(object_key(CONFIGMAP), pytest.approx(base.PROGRESS_EVERY_S, abs=1))]


def test_without_watches_the_await_polls_every_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Cluster(may_watch=False)

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        cluster.live[object_key(CONFIGMAP)] = CONFIGMAP

    slept: list[float] = []
    monkeypatch.setattr(workload.time, "sleep", sleep)
    status = workload.await_ready(cluster, objects(), 600, "c")  # type: ignore[arg-type]
    assert status.ready and slept == [base.POLL_INTERVAL_S] and cluster.waits == []


def test_objects_seen_by_the_apply_are_not_read_again_at_the_first_look() -> None:
    cluster = Cluster(may_watch=True)
    seen: dict[str, Manifest | None] = {object_key(SERVICE): SERVICE, object_key(CONFIGMAP): CONFIGMAP}
    status = workload.await_ready(cluster, objects(), 600, "c", seen)  # type: ignore[arg-type]
    assert status.ready and cluster.gets == 0 and cluster.waits == []
    # One not ready as seen: watched, then every object looked at again.
    seen[object_key(CONFIGMAP)] = None
    assert workload.await_ready(cluster, objects(), 600, "c", seen).ready  # type: ignore[arg-type]
    assert cluster.gets == 2 and [k for k, _ in cluster.waits] == [object_key(CONFIGMAP)]
