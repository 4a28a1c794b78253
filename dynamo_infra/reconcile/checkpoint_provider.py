"""Dynamic provider that plays the operator's checkpoint controller for one DynamoCheckpoint.

Nobody runs DynamoCheckpoint objects without the operator, so this provider does what its
checkpoint controller would: it runs the capture Job, follows it to a phase (Pending, Creating,
Ready, Failed), refuses a checkpoint whose key another checkpoint in the namespace already owns,
and on destroy deletes (policy `Delete`) or keeps (`Retain`) what the capture produced. When the
cluster serves the DynamoCheckpoint CRD, the object is applied too and its status kept current.

"Ready" here means the capture Job is Complete: no snapshot agent runs locally, so there is no
PodSnapshot to wait for (the operator also needs the PodSnapshot bound and succeeded). Where the
snapshot agent runs (its PodSnapshot CRDs served), the operator's remaining steps would go in
`_await`: once the Job's pod exists, create the PodSnapshot `<checkpoint name>` (label
`nvidia.com/snapshot-owner`, `spec.source.podRef` = the pod's name, uid and target container,
owned by the DynamoCheckpoint); Ready = `status.boundPodSnapshotContentName` set, its Succeeded
condition True and the Job Complete; a failed Job or PodSnapshot = Failed; then delete the
terminal Job (the PodSnapshotContent holds the artifact).

Components whose runtime is at least 1.5.0 checkpoint through the snapshot API instead: `checkpoint`
is then a SnapshotJob (an automatic capture, created) or a PodSnapshot (a `checkpointRef`, looked
up), `job` is empty, and `snapshot_calls` does the work (`check` also fails every preview where the
cluster does not serve that API, naming what to install).

Inputs: kubeconfig (secret), context, namespace, checkpoint (the DynamoCheckpoint manifest), job
(its capture Job, rendered by `render.features.checkpoint.capture_job`), owner (`project/stack/resource`,
tells our objects from another stack's), wait (block until Ready), timeoutSeconds.
Outputs add phase, ready, message, identityHash, checkpointId, checkpointName, jobName, crdApplied.

Check and Diff need only the inputs; what writes, deletes and reads is in `checkpoint_calls`, imported
on the first of those calls by `Provider.calls` (see `reconcile.base`); the inputs are in
`reconcile.inputs`.
"""

from __future__ import annotations

from typing import Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from dynamo_infra.reconcile.base import Provider, kubeconfig_given
from dynamo_infra.reconcile.inputs import SNAPSHOT_KINDS, CheckpointInputs, meta

# What a checkpoint through the snapshot API (runtime at least 1.5.0) calls to write, delete and read.
SNAPSHOT_CALLS = "dynamo_infra.reconcile.snapshot_calls"


class CheckpointProvider(Provider[CheckpointInputs]):
    """Reconciles one checkpoint: capture Job (+ DynamoCheckpoint when served), phase, duplicates."""

    inputs = CheckpointInputs
    calls_module = "dynamo_infra.reconcile.checkpoint_calls"

    # --- ResourceProvider -------------------------------------------------------------------------

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        ckpt, job = news.get("checkpoint"), news.get("job")
        if isinstance(ckpt, dict) and ckpt.get("kind") in SNAPSHOT_KINDS:
            return self._check_snapshot(news)
        if not isinstance(ckpt, dict) or not meta(ckpt).get("name"):
            failures.append(
                CheckFailure("checkpoint", "a DynamoCheckpoint manifest with metadata.name is required")
            )
        elif not ((ckpt.get("spec") or {}).get("job") or {}).get("podTemplateSpec"):
            failures.append(CheckFailure("checkpoint", "spec.job.podTemplateSpec is required"))
        if not isinstance(job, dict) or not meta(job).get("name"):
            failures.append(CheckFailure("job", "the capture Job manifest with metadata.name is required"))
        if not news.get("owner"):
            failures.append(CheckFailure("owner", "an owner (project/stack/resource) is required"))
        if not kubeconfig_given(news):
            failures.append(CheckFailure("kubeconfig", "a kubeconfig (content or path) is required"))
        return CheckResult(news, failures)

    def _check_snapshot(self, news: dict[str, Any]) -> CheckResult:
        """A SnapshotJob or PodSnapshot: named, owned, and its API served by the cluster."""
        failures = []
        if not meta(news.get("checkpoint")).get("name"):
            failures.append(CheckFailure("checkpoint", "metadata.name is required"))
        if not news.get("owner"):
            failures.append(CheckFailure("owner", "an owner (project/stack/resource) is required"))
        if not kubeconfig_given(news):
            failures.append(CheckFailure("kubeconfig", "a kubeconfig (content or path) is required"))
        elif not failures and isinstance(news.get("kubeconfig", ""), str):
            ins = self.typed(news)
            problem = self.calls(ins).preview_problem(ins)  # only snapshot-API checks load their calls
            if problem is not None:
                failures.append(CheckFailure("checkpoint", problem))
        return CheckResult(news, failures)

    def calls_module_for(self, ins: CheckpointInputs) -> str:
        """The calls module of the checkpoint's API."""
        return SNAPSHOT_CALLS if ins.snapshot_api else self.calls_module

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        """Input changes; a checkpoint not yet Ready is looked at again by every `up`."""
        changed = self.changes(olds, news)
        replaces: list[str] = [k for k in ("namespace", "owner") if k in changed]
        for key in ("checkpoint", "job"):
            if meta(olds.get(key)).get("name") != meta(news.get(key)).get("name"):
                replaces.append(key)
        pending = not olds.get("ready")  # every output carries `ready` (phase Ready)
        return DiffResult(changes=bool(changed) or pending, replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        ins = self.typed(props)
        outs = self.calls(ins).reconcile(ins, props)
        return CreateResult(id_=f"{ins.namespace}/{outs['checkpointName']}", outs=outs)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        ins = self.typed(news)
        return UpdateResult(outs=self.calls(ins).reconcile(ins, news))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        ins = self.typed(props)
        self.calls(ins).delete(ins, props)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """The phase the live capture Job implies; gone when neither Job nor checkpoint exists."""
        ins = self.typed(props)
        outs = self.calls(ins).read(ins, props)
        return ReadResult(None, {}) if outs is None else self.read_result(id_, outs)
