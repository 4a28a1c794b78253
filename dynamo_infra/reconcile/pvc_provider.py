"""Dynamic provider for a graph's PersistentVolumeClaims, with the operator's create semantics.

- `create: true`: the claim is created when missing; an existing claim is never modified.
- `create: false`: the claim must already exist (clear error otherwise).
- Destroy keeps the claim (and its data) unless `deleteOnDestroy` was set, and never deletes a
  claim it did not create.
Inputs: kubeconfig (secret), context, namespace, name, manifest (None when not created by us),
create, deleteOnDestroy, await {mode, timeoutSeconds}. Outputs add `adopted`, `phase`, `volumeName`.
"""

from __future__ import annotations

import time
from typing import Any

from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from dynamo_infra.reconcile import connection
from dynamo_infra.reconcile.kube import KubeClient, Obj
from dynamo_infra.reconcile.provider import log

# Inputs whose change is reported by `pulumi preview` (the claim itself is never rewritten).
DIFFED_INPUTS = (
    "kubeconfig",
    "context",
    "namespace",
    "name",
    "manifest",
    "create",
    "deleteOnDestroy",
    "await",
)
# Volume binding mode under which a claim stays Pending until a pod uses it.
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


class MissingClaim(RuntimeError):
    """A claim the graph uses but does not create is absent."""


def _stub(namespace: str, name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
    }


def _waits_for_consumer(client: KubeClient, claim: Obj) -> bool:
    sc_name = (claim.get("spec") or {}).get("storageClassName")
    if not sc_name:
        return False
    sc = client.get(
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": sc_name}}
    )
    return bool(sc and sc.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER)


class PersistentVolumeClaimProvider(ResourceProvider):
    serialize_as_secret_always = False

    @staticmethod
    def _client(props: dict[str, Any]) -> KubeClient:
        return KubeClient(connection.load(props["kubeconfig"], props.get("context") or None))

    def _ensure(self, props: dict[str, Any], adopted_before: bool | None) -> dict[str, Any]:
        ns, name = props["namespace"], props["name"]
        with self._client(props) as client:
            live = client.get(_stub(ns, name))
            adopted = adopted_before if adopted_before is not None else live is not None
            if live is None:
                if not props.get("create") or not props.get("manifest"):
                    raise MissingClaim(
                        f"PersistentVolumeClaim {ns}/{name} does not exist and the graph does not create it "
                        "(create it first, or set create: true with storageClass, size and volumeAccessMode)"
                    )
                log(f"creating PersistentVolumeClaim {ns}/{name}")
                live = client.apply(props["manifest"], force=False)
            elif props.get("manifest") and not adopted_before:
                log(f"PersistentVolumeClaim {ns}/{name} exists: kept as it is")
            live = self._await_bound(client, props, live)
        status = live.get("status") or {}
        return {
            **props,
            "adopted": adopted,
            "phase": status.get("phase", ""),
            "volumeName": (live.get("spec") or {}).get("volumeName", ""),
        }

    def _await_bound(self, client: KubeClient, props: dict[str, Any], live: Obj) -> Obj:
        policy = props.get("await") or {}
        if policy.get("mode", "wait") == "skip" or _waits_for_consumer(client, live):
            return live
        deadline = time.monotonic() + float(policy.get("timeoutSeconds", 600))
        while (live.get("status") or {}).get("phase") != "Bound":
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"PersistentVolumeClaim {props['namespace']}/{props['name']} not Bound "
                    f"(phase {(live.get('status') or {}).get('phase', 'unknown')}) after {policy.get('timeoutSeconds')}s"
                )
            time.sleep(1)
            live = client.get(live) or live
        return live

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        if not news.get("name"):
            failures.append(CheckFailure("name", "a claim name is required"))
        if news.get("create") and not news.get("manifest"):
            failures.append(CheckFailure("manifest", "create: true needs the claim's manifest"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [k for k in DIFFED_INPUTS if olds.get(k) != news.get(k)]
        replaces: list[str] = [k for k in ("namespace", "name") if k in changed]
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = self._ensure(props, None)
        return CreateResult(id_=f"{props['namespace']}/{props['name']}", outs=outs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self._ensure(news, bool(olds.get("adopted"))))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        ns, name = props["namespace"], props["name"]
        if not props.get("deleteOnDestroy") or props.get("adopted"):
            why = "it existed before this stack" if props.get("adopted") else "deleteOnDestroy is not set"
            log(f"retaining PersistentVolumeClaim {ns}/{name} and its data ({why})")
            return
        with self._client(props) as client:
            claim = _stub(ns, name)
            if client.delete(claim, propagation="Background"):
                log(f"deleting PersistentVolumeClaim {ns}/{name}")
                client.wait_deleted(claim, 120)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with self._client(props) as client:
            live = client.get(_stub(props["namespace"], props["name"]))
        if live is None:
            return ReadResult(None, {})
        outs = {
            **props,
            "phase": (live.get("status") or {}).get("phase", ""),
            "volumeName": (live.get("spec") or {}).get("volumeName", ""),
        }
        return ReadResult(id_, outs, {k: props.get(k) for k in DIFFED_INPUTS if k in props})
