"""PersistentVolumeClaim: a graph's claim, created when missing, retained on destroy by default."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.dynamic import Resource

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.pvc_provider import PersistentVolumeClaimProvider


class PersistentVolumeClaim(Resource):
    """`manifest` set: created when missing (an existing claim is never modified); None: must exist.

    `delete_on_destroy` opts in to deleting the claim (and its data) when the stack is destroyed.
    """

    phase: pulumi.Output[str]
    volume_name: pulumi.Output[str]
    adopted: pulumi.Output[bool]

    def __init__(
        self,
        name: str,
        *,
        kubeconfig: pulumi.Input[str],
        context: str | None,
        namespace: str,
        claim_name: str,
        manifest: Manifest | None,
        delete_on_destroy: bool = False,
        await_policy: dict[str, Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "kubeconfig": pulumi.Output.secret(kubeconfig),
            "context": context or "",
            "namespace": namespace,
            "name": claim_name,
            "manifest": manifest,
            "create": manifest is not None,
            "deleteOnDestroy": delete_on_destroy,
            "await": await_policy or {"mode": "wait", "timeoutSeconds": 600},
            "phase": None,
            "volumeName": None,
            "adopted": None,
        }
        super().__init__(PersistentVolumeClaimProvider(), name, props, opts)
