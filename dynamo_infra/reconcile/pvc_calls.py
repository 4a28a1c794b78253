"""What the claim provider (`reconcile.pvc_provider`) does when it writes, deletes or reads: imported only
by `Provider.calls` (named, never imported, by the provider), so a provider process that only checks
and diffs never loads the kube client, the API models or the takeover rules."""

from __future__ import annotations

from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.kube.client import KubeClient, object_key
from dynamo_infra.reconcile.base import (
    DELETE_TIMEOUT_S,
    AwaitTimeout,
    await_skipped,
    await_timeout,
    await_until,
    log,
)
from dynamo_infra.reconcile.inputs import ClaimInputs
from dynamo_infra.reconcile.takeover import (
    OperatorGraph,
    TakeOver,
    merged_take_overs,
    operator_owners,
    owner_operations,
)

# Volume binding mode under which a claim stays Pending until a pod uses it.
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
# Phase of a claim bound to a volume.
BOUND = "Bound"


class MissingClaim(DynamoInfraError):
    """A claim the graph uses but does not create is absent."""


def _phase(claim: Manifest) -> str:
    return str((claim.get("status") or {}).get("phase", ""))


def _waits_for_consumer(client: KubeClient, claim: Manifest) -> bool:
    sc_name = (claim.get("spec") or {}).get("storageClassName")
    if not sc_name:
        return False
    sc = client.get(
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": sc_name}}
    )
    return bool(sc and sc.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER)


def take_over_claim(client: KubeClient, ins: ClaimInputs, live: Manifest) -> TakeOver:
    """Free a claim the operator made for this graph from its DGD (the claim itself is kept as it is)."""
    meta = live["metadata"]
    owners = operator_owners(meta)
    if not owners:
        return TakeOver()
    claim = f"PersistentVolumeClaim {ins.namespace}/{ins.name}"
    operator = OperatorGraph(client, ins.namespace, ins.graph)
    why = operator.refusal(meta)
    if why is not None:
        log(f"{claim} belongs to {owners[0]}, {why}: kept as it is; deleting that object deletes the claim")
        return TakeOver()
    operator.release(live, owner_operations)
    log(f"{claim}: {owners[0]} no longer owns it (deleting it would delete the claim and its data)")
    return TakeOver({object_key(live): str(owners[0])}, operator.remove_finalizers())


def ensure(
    ins: ClaimInputs, props: dict[str, Any], adopted_before: bool | None, taken: dict[str, Any]
) -> dict[str, Any]:
    """Create the claim when missing and ours to create, free it from the operator, await Bound."""
    ns, name = ins.namespace, ins.name
    report = TakeOver()
    with ins.client() as client:
        live = client.get(ins.stub)
        adopted = adopted_before if adopted_before is not None else live is not None
        if live is None:
            if not ins.create or not ins.manifest:
                raise MissingClaim(
                    f"PersistentVolumeClaim {ns}/{name} does not exist and the graph does not create it "
                    "(create it first, or set create: true with storageClass, size and volumeAccessMode)"
                )
            log(f"creating PersistentVolumeClaim {ns}/{name}")
            live = client.apply(ins.manifest, force=False)
        else:
            if ins.manifest and not adopted_before:
                log(f"PersistentVolumeClaim {ns}/{name} exists: kept as it is")
            report = take_over_claim(client, ins, live)
        live = _await_bound(client, ins, live)
    took = merged_take_overs([taken, report.to_dict()])
    return {**props, "adopted": adopted, **observed(live), "takenOver": took}


def observed(live: Manifest) -> dict[str, Any]:
    return {"phase": _phase(live), "volumeName": (live.get("spec") or {}).get("volumeName", "")}


def _await_bound(client: KubeClient, ins: ClaimInputs, live: Manifest) -> Manifest:
    policy = ins.await_ or {}
    if await_skipped(policy) or _waits_for_consumer(client, live):
        return live
    timeout = await_timeout(policy)

    def expired(last: Manifest) -> AwaitTimeout:
        return AwaitTimeout(
            f"PersistentVolumeClaim {ins.namespace}/{ins.name} not Bound "
            f"(phase {_phase(last) or 'unknown'}) after {timeout:.0f}s"
        )

    return await_until(
        live,
        lambda: client.get(live) or live,
        lambda c: _phase(c) == BOUND,
        timeout=timeout,
        expired=expired,
    )


def delete(ins: ClaimInputs, props: dict[str, Any]) -> None:
    """Delete the claim only when this stack created it and `deleteOnDestroy` is set."""
    ns, name = ins.namespace, ins.name
    if not ins.delete_on_destroy or props.get("adopted"):
        why = "it existed before this stack" if props.get("adopted") else "deleteOnDestroy is not set"
        log(f"retaining PersistentVolumeClaim {ns}/{name} and its data ({why})")
        return
    with ins.client() as client:
        if client.delete(ins.stub, propagation="Background"):
            log(f"deleting PersistentVolumeClaim {ns}/{name}")
            client.wait_deleted(ins.stub, DELETE_TIMEOUT_S)


def read(ins: ClaimInputs, props: dict[str, Any]) -> dict[str, Any] | None:
    """The outputs as the live claim has them; None when it is gone."""
    with ins.client() as client:
        live = client.get(ins.stub)
    return None if live is None else {**props, **observed(live)}
