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

Check and Diff need only the inputs; what writes, deletes and reads is in `pvc_calls`, imported by
those calls (see `reconcile.base`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.base import Inputs, Provider


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
        from dynamo_infra.kube.client import stub  # here: Check and Diff stay light

        return stub("v1", "PersistentVolumeClaim", self.namespace, self.name)


class PersistentVolumeClaimProvider(Provider[ClaimInputs]):
    inputs = ClaimInputs

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
        from dynamo_infra.reconcile import pvc_calls as calls  # here: Check and Diff stay light

        ins = self.typed(props)
        return CreateResult(id_=f"{ins.namespace}/{ins.name}", outs=calls.ensure(ins, props, None, {}))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        from dynamo_infra.reconcile import pvc_calls as calls

        taken = dict(olds.get("takenOver") or {})
        return UpdateResult(outs=calls.ensure(self.typed(news), news, bool(olds.get("adopted")), taken))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        from dynamo_infra.reconcile import pvc_calls as calls

        calls.delete(self.typed(props), props)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        from dynamo_infra.reconcile import pvc_calls as calls

        outs = calls.read(self.typed(props), props)
        return ReadResult(None, {}) if outs is None else self.read_result(id_, outs)
