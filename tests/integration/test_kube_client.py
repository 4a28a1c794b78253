"""The client against the local API server: waits that watch (a finalizer held deletion, a change; an
identity that may not watch polls) and API Priority and Fairness' 429 with its
`Retry-After` honoured."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube import client as kube_module
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient, stub
from dynamo_infra.kube.errors import KubeError
from tests.integration.harness import account_token, kube_client
from tools.localcluster import LocalCluster

NAMESPACE_PREFIX = "kube"
FINALIZER = "dynamo-infra.test/hold"
FLOWCONTROL = "flowcontrol.apiserver.k8s.io/v1"
# The throttled identity's flow schema and priority level (no seats, no queue: every request 429).
THROTTLE = "dynamo-infra-test-throttle"
# Concurrent requests per burst, and bursts at most until one is throttled.
BURST = 30
BURSTS = 10


def later(seconds: float, action: Callable[[], object]) -> threading.Thread:
    def run() -> None:
        time.sleep(seconds)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def configmap(namespace: str, **extra: object) -> Manifest:
    return {**stub("v1", "ConfigMap", namespace, "held"), **extra}


def test_a_deletion_wait_watches_until_the_finalizer_is_gone(
    cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    held = configmap(namespace)
    held["metadata"]["finalizers"] = [FINALIZER]
    kube.apply(held)
    kube.delete(held, propagation="Background")
    with kube_client(cluster) as other:
        release = later(1.0, lambda: other.patch(held, [{"op": "remove", "path": "/metadata/finalizers"}]))
        gets, started = kube.requests["GET"], time.monotonic()
        assert kube.wait_deleted(held, 30)
        release.join()
    # One list, then the watch told of the deletion: no poll.
    assert kube.requests["GET"] - gets == 1 and kube.requests["WATCH"] >= 1
    assert time.monotonic() - started < 10


def test_a_wait_for_a_change_returns_it_as_it_happens(
    cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    cm = configmap(namespace, data={"k": "before"})
    kube.apply(cm)
    with kube_client(cluster) as other:
        change = later(0.5, lambda: other.apply(configmap(namespace, data={"k": "after"})))
        met, last = kube.wait_for(cm, lambda now: ((now or {}).get("data") or {}).get("k") == "after", 30)
        change.join()
    assert met and last is not None and last["kind"] == "ConfigMap" and kube.requests["WATCH"] >= 1


def account_client(cluster: LocalCluster, kube: KubeClient, namespace: str, account: str) -> KubeClient:
    """A client of the local API server as a service account of `namespace` (created here)."""
    kube.apply(stub("v1", "ServiceAccount", namespace, account))
    base = connection.load(str(cluster.kubeconfig))
    token = account_token(kube, namespace, account)
    return KubeClient(dataclasses.replace(base, token=token, client_cert_pem=None, client_key_pem=None))


def test_an_identity_that_may_not_watch_polls(
    cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    """Denied the watch (403), the wait polls with `get` and sees the deletion; the client tries no
    other watch."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "no-watch", "namespace": namespace},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "delete"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "no-watch", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "no-watch"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
    }
    kube.apply(role)
    kube.apply(binding)
    cm = configmap(namespace, data={"k": "v"})
    kube.apply(cm)
    with account_client(cluster, kube, namespace, "reader") as reader:
        later(1.0, lambda: kube.delete(cm))
        assert reader.wait_deleted(cm, 30)
        assert reader.requests["WATCH"] == 1 and not reader.watches(cm)
        assert reader.requests["GET"] >= 3  # discovery, the list, then polls


@pytest.fixture()
def throttled(cluster: LocalCluster, kube: KubeClient, namespace: str) -> Iterator[KubeClient]:
    """A client as a service account every request of which API Priority and Fairness rejects (429)."""
    level = {
        "apiVersion": FLOWCONTROL,
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": THROTTLE},
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": 0,
                "lendablePercent": 0,
                "borrowingLimitPercent": 0,
                "limitResponse": {"type": "Reject"},
            },
        },
    }
    every = {
        "verbs": ["*"],
        "apiGroups": ["*"],
        "resources": ["*"],
        "namespaces": ["*"],
        "clusterScope": True,
    }
    schema = {
        "apiVersion": FLOWCONTROL,
        "kind": "FlowSchema",
        "metadata": {"name": THROTTLE},
        "spec": {
            "priorityLevelConfiguration": {"name": THROTTLE},
            "matchingPrecedence": 100,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [
                {
                    "subjects": [
                        {
                            "kind": "ServiceAccount",
                            "serviceAccount": {"name": "throttled", "namespace": namespace},
                        }
                    ],
                    "resourceRules": [every],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                }
            ],
        },
    }
    kube.apply(level)
    kube.apply(schema)
    try:
        with account_client(cluster, kube, namespace, "throttled") as client:
            yield client
    finally:
        kube.delete(schema, propagation="Background")
        kube.delete(level, propagation="Background")


def test_429_of_priority_and_fairness_is_retried_after_its_retry_after(
    throttled: KubeClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bursts of requests at a priority level of one seat that rejects without queueing: the ones
    turned away (429, `Retry-After: 1`) wait what the server says and get through on a retry."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    real_sleep = time.sleep
    pauses: list[float] = []
    monkeypatch.setattr(kube_module.time, "sleep", lambda s: (pauses.append(s), real_sleep(s)))
    answers: list[int] = []

    def one(barrier: threading.Barrier) -> None:
        barrier.wait()
        try:
            throttled.request("GET", path)
        except KubeError as e:
            answers.append(e.status)

    for _ in range(BURSTS):
        barrier = threading.Barrier(BURST)
        threads = [threading.Thread(target=one, args=(barrier,)) for _ in range(BURST)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if pauses:
            break
        real_sleep(0.5)
    assert pauses, "no request of the bursts was throttled"
    # The server's Retry-After paced each retry (the backoff would start at 0.2 s), and every request
    # got through to authorization (403: the account may not list), none left throttled.
    assert all(p >= 1 for p in pauses), pauses
    assert set(answers) == {403}, answers
