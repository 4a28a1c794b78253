"""PersistentVolumeClaim: a graph's claim, created when missing, retained on destroy by default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.args import Kubeconfig, args_of, kubeconfig_props
from dynamo_infra.components.takeover import TakingOverResource
from dynamo_infra.reconcile.pvc_provider import PersistentVolumeClaimProvider


@dataclass(frozen=True)
class PersistentVolumeClaimArgs:
    """The inputs of a PersistentVolumeClaim (the same as its keyword arguments)."""

    kubeconfig: Kubeconfig
    namespace: str
    claim_name: str
    # The graph using it (a claim the Dynamo operator made for it is freed from its DGD).
    graph: str = ""
    # The claim to create when missing; None: the claim must exist.
    manifest: Manifest | None = None
    context: str | None = None
    delete_on_destroy: bool = False
    await_policy: dict[str, Any] | None = None


class PersistentVolumeClaim(TakingOverResource):
    """`manifest` set: created when missing (an existing claim is never modified); None: must exist.

    `delete_on_destroy` opts in to deleting the claim (and its data) when the stack is destroyed.
    """

    phase: pulumi.Output[str]
    volume_name: pulumi.Output[str]
    adopted: pulumi.Output[bool]

    def __init__(
        self,
        name: str,
        args: PersistentVolumeClaimArgs | None = None,
        *,
        kubeconfig: Kubeconfig | None = None,
        context: str | None = None,
        namespace: str | None = None,
        claim_name: str | None = None,
        graph: str | None = None,
        manifest: Manifest | None = None,
        delete_on_destroy: bool | None = None,
        await_policy: dict[str, Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        a = args_of(
            "PersistentVolumeClaim",
            PersistentVolumeClaimArgs,
            args,
            {
                "kubeconfig": kubeconfig,
                "context": context,
                "namespace": namespace,
                "claim_name": claim_name,
                "graph": graph,
                "manifest": manifest,
                "delete_on_destroy": delete_on_destroy,
                "await_policy": await_policy,
            },
        )
        props = {
            **kubeconfig_props(a.kubeconfig),
            "context": a.context or "",
            "namespace": a.namespace,
            "name": a.claim_name,
            "graph": a.graph,
            "manifest": a.manifest,
            "create": a.manifest is not None,
            "deleteOnDestroy": a.delete_on_destroy,
            "await": a.await_policy or {"mode": "wait", "timeoutSeconds": 600},
            "phase": None,
            "volumeName": None,
            "adopted": None,
            "takenOver": None,
        }
        super().__init__(PersistentVolumeClaimProvider(), name, props, opts)
