"""Checkpoint: one DynamoCheckpoint and its capture Job, run as the operator's checkpoint controller; for
runtimes from 1.5.0 on, a SnapshotJob (automatic capture) or a referenced PodSnapshot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import Resource

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.args import Kubeconfig, args_of, kubeconfig_props
from dynamo_infra.reconcile.checkpoint_provider import CheckpointProvider
from dynamo_infra.reconcile.inputs import SNAPSHOT_KINDS
from dynamo_infra.render.features.checkpoint import DEFAULT_SECCOMP_PROFILE, capture_job


@dataclass(frozen=True)
class CheckpointArgs:
    """The inputs of a Checkpoint (the same as its keyword arguments)."""

    # The DynamoCheckpoint manifest (namespace set); or a SnapshotJob / PodSnapshot (snapshot API).
    checkpoint: Manifest
    kubeconfig: Kubeconfig
    context: str | None = None
    wait: bool = True
    timeout_seconds: int | None = None
    seccomp_profile: str = DEFAULT_SECCOMP_PROFILE


class Checkpoint(Resource):
    """A DynamoCheckpoint (a graph's, or one written by hand) captured by its Job. Given a SnapshotJob,
    it is created and followed to Completed with its PodSnapshot Ready; given a PodSnapshot, that one
    is waited for (never written). Both need the ai-dynamo/snapshot API in the cluster.

    `wait` blocks `pulumi up` until the capture Job is Complete (phase Ready) or fails, at most
    `timeout_seconds`; without it the resource is created with phase Creating and every later `up`
    looks again until it is Ready. Destroy deletes the capture Job (and the DynamoCheckpoint, when
    the cluster serves its CRD) unless the checkpoint's deletion policy is `Retain`.
    """

    phase: pulumi.Output[str]
    ready: pulumi.Output[bool]
    message: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        checkpoint: Manifest | CheckpointArgs,
        *,
        kubeconfig: Kubeconfig | None = None,
        context: str | None = None,
        wait: bool | None = None,
        timeout_seconds: int | None = None,
        seccomp_profile: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        args = args_of(
            "Checkpoint",
            CheckpointArgs,
            checkpoint,
            {
                "kubeconfig": kubeconfig,
                "context": context,
                "wait": wait,
                "timeout_seconds": timeout_seconds,
                "seccomp_profile": seccomp_profile,
            },
        )
        checkpoint, kubeconfig, context = args.checkpoint, args.kubeconfig, args.context
        props = {
            **kubeconfig_props(kubeconfig),
            "context": context or "",
            "namespace": checkpoint["metadata"]["namespace"],
            "checkpoint": checkpoint,
            "job": {}
            if checkpoint.get("kind") in SNAPSHOT_KINDS
            else capture_job(checkpoint, args.seccomp_profile),
            "owner": f"{pulumi.get_project()}/{pulumi.get_stack()}/{name}",
            "wait": args.wait,
            "timeoutSeconds": args.timeout_seconds,
            "phase": None,
            "ready": None,
            "message": None,
            "identityHash": None,
            "checkpointId": None,
            "checkpointName": None,
            "jobName": None,
            "crdApplied": None,
        }
        super().__init__(CheckpointProvider(), name, props, opts)

    def _output(self, key: str) -> pulumi.Output[Any]:
        value: pulumi.Output[Any] = self.__dict__[key]
        return value

    @property
    def identity_hash(self) -> pulumi.Output[str]:
        return self._output("identityHash")

    @property
    def checkpoint_id(self) -> pulumi.Output[str]:
        return self._output("checkpointId")

    @property
    def checkpoint_name(self) -> pulumi.Output[str]:
        return self._output("checkpointName")

    @property
    def job_name(self) -> pulumi.Output[str]:
        return self._output("jobName")

    @property
    def crd_applied(self) -> pulumi.Output[bool]:
        return self._output("crdApplied")
