"""Dynamic provider for a graph's PersistentVolumeClaims, with the operator's create semantics.

- `create: true`: the claim is created when missing; an existing claim is never modified.
- `create: false`: the claim must already exist (clear error otherwise).
- Destroy keeps the claim (and its data) unless `deleteOnDestroy` was set, and never deletes a
  claim it did not create.
- A claim the Dynamo operator made for the same graph (owned by its DGD) loses that ownerReference,
  and nothing else: deleting the DGD later would delete the claim and its data (`takeover`).
Inputs: kubeconfig (secret), context, namespace, name, graph, manifest (None when not created by us),
create, deleteOnDestroy, await {mode, timeoutSeconds}. Outputs add `adopted`, `phase`, `volumeName`,
`takenOver` (as the workloads report it).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.reconcile.base import (
    DELETE_TIMEOUT_S,
    AwaitTimeout,
    Inputs,
    Provider,
    await_skipped,
    await_timeout,
    await_until,
    log,
)
from dynamo_infra.reconcile.kube import KubeClient, object_key, stub
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


@dataclasses.dataclass(frozen=True)
class ClaimInputs(Inputs):
    name: str = ""
    # The graph using the claim (whose DGD may own it, when the operator made it).
    graph: str = ""
    # The claim to create when missing; None when the graph does not create it.
    manifest: Manifest | None = None
    create: bool = False
    delete_on_destroy: bool = False
    # {mode: wait|skip, timeoutSeconds}.
    await_: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def stub(self) -> Manifest:
        return stub("v1", "PersistentVolumeClaim", self.namespace, self.name)


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


class PersistentVolumeClaimProvider(Provider[ClaimInputs]):
    inputs = ClaimInputs

    def _ensure(
        self, props: dict[str, Any], adopted_before: bool | None, taken: dict[str, Any]
    ) -> dict[str, Any]:
        ins = self.typed(props)
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
            live = self._await_bound(client, ins, live)
        took = merged_take_overs([taken, report.to_dict()])
        return {**props, "adopted": adopted, **self._observed(live), "takenOver": took}

    @staticmethod
    def _observed(live: Manifest) -> dict[str, Any]:
        return {"phase": _phase(live), "volumeName": (live.get("spec") or {}).get("volumeName", "")}

    @staticmethod
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

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        if not news.get("name"):
            failures.append(CheckFailure("name", "a claim name is required"))
        if news.get("create") and not news.get("manifest"):
            failures.append(CheckFailure("manifest", "create: true needs the claim's manifest"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = self.changes(olds, news)
        replaces: list[str] = [k for k in ("namespace", "name") if k in changed]
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = self._ensure(props, None, {})
        ins = self.typed(props)
        return CreateResult(id_=f"{ins.namespace}/{ins.name}", outs=outs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        taken = dict(olds.get("takenOver") or {})
        return UpdateResult(outs=self._ensure(news, bool(olds.get("adopted")), taken))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        ins = self.typed(props)
        ns, name = ins.namespace, ins.name
        if not ins.delete_on_destroy or props.get("adopted"):
            why = "it existed before this stack" if props.get("adopted") else "deleteOnDestroy is not set"
            log(f"retaining PersistentVolumeClaim {ns}/{name} and its data ({why})")
            return
        with ins.client() as client:
            if client.delete(ins.stub, propagation="Background"):
                log(f"deleting PersistentVolumeClaim {ns}/{name}")
                client.wait_deleted(ins.stub, DELETE_TIMEOUT_S)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        ins = self.typed(props)
        with ins.client() as client:
            live = client.get(ins.stub)
        if live is None:
            return ReadResult(None, {})
        return self.read_result(id_, {**props, **self._observed(live)})
