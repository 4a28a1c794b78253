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
by those calls (see `reconcile.base`).
"""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.base import Inputs, Provider

# Kinds of the snapshot API (`render.features.snapshot`) a checkpoint input may be.
SNAPSHOT_KINDS = ("SnapshotJob", "PodSnapshot")


def meta(obj: Manifest | None) -> Manifest:
    """An object's metadata ({} when it has none)."""
    return (obj or {}).get("metadata") or {}


@dataclasses.dataclass(frozen=True)
class CheckpointInputs(Inputs):
    # The DynamoCheckpoint manifest.
    checkpoint: Manifest = dataclasses.field(default_factory=dict)
    # Its capture Job (rendered by `render.features.checkpoint.capture_job`).
    job: Manifest = dataclasses.field(default_factory=dict)
    # `project/stack/resource`: tells our objects from another stack's.
    owner: str = ""
    # Block until Ready (at most `timeoutSeconds`).
    wait: bool = False
    timeout_seconds: float | None = None

    @property
    def names(self) -> tuple[str, str, str]:
        """Namespace, checkpoint name, capture Job name ("" through the snapshot API)."""
        return self.namespace, meta(self.checkpoint)["name"], str(meta(self.job).get("name") or "")

    @property
    def snapshot_api(self) -> bool:
        """The checkpoint is a SnapshotJob or PodSnapshot (runtime at least 1.5.0)."""
        return self.checkpoint.get("kind") in SNAPSHOT_KINDS

    @property
    def label(self) -> str:
        kind = self.checkpoint.get("kind") or "DynamoCheckpoint"
        return f"{kind} {self.namespace}/{meta(self.checkpoint)['name']}"

    @property
    def job_stub(self) -> Manifest:
        from dynamo_infra.reconcile.kube import stub  # here: Check and Diff stay light

        return stub("batch/v1", "Job", self.namespace, meta(self.job)["name"])


class CheckpointProvider(Provider[CheckpointInputs]):
    """Reconciles one checkpoint: capture Job (+ DynamoCheckpoint when served), phase, duplicates."""

    inputs = CheckpointInputs

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
        if not news.get("kubeconfig"):
            failures.append(CheckFailure("kubeconfig", "a kubeconfig (content or path) is required"))
        return CheckResult(news, failures)

    def _check_snapshot(self, news: dict[str, Any]) -> CheckResult:
        """A SnapshotJob or PodSnapshot: named, owned, and its API served by the cluster."""
        failures = []
        if not meta(news.get("checkpoint")).get("name"):
            failures.append(CheckFailure("checkpoint", "metadata.name is required"))
        if not news.get("owner"):
            failures.append(CheckFailure("owner", "an owner (project/stack/resource) is required"))
        if not news.get("kubeconfig"):
            failures.append(CheckFailure("kubeconfig", "a kubeconfig (content or path) is required"))
        elif not failures and isinstance(news.get("kubeconfig"), str):
            from dynamo_infra.reconcile import snapshot_calls  # here: only snapshot-API checks load it

            problem = snapshot_calls.preview_problem(self.typed(news))
            if problem is not None:
                failures.append(CheckFailure("checkpoint", problem))
        return CheckResult(news, failures)

    def _calls(self, ins: CheckpointInputs) -> ModuleType:
        """The calls module of the checkpoint's API (imported here: Check and Diff stay light)."""
        if ins.snapshot_api:
            from dynamo_infra.reconcile import snapshot_calls

            return snapshot_calls
        from dynamo_infra.reconcile import checkpoint_calls

        return checkpoint_calls

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
        outs = self._calls(ins).reconcile(ins, props)
        return CreateResult(id_=f"{ins.namespace}/{outs['checkpointName']}", outs=outs)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        ins = self.typed(news)
        return UpdateResult(outs=self._calls(ins).reconcile(ins, news))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        ins = self.typed(props)
        self._calls(ins).delete(ins, props)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """The phase the live capture Job implies; gone when neither Job nor checkpoint exists."""
        ins = self.typed(props)
        outs = self._calls(ins).read(ins, props)
        return ReadResult(None, {}) if outs is None else self.read_result(id_, outs)
