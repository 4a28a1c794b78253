"""CustomResourceDefinitions: the CRDs a platform installs, as one dynamic resource whose state keeps a
digest per CRD and the manifests packed (`reconcile.definitions_provider`), never deleted."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
from pulumi.dynamic import Resource

from dynamo_infra.api.manifest import Manifest, pack
from dynamo_infra.components.args import Kubeconfig, kubeconfig_props
from dynamo_infra.reconcile.definitions_provider import CustomResourceDefinitionsProvider
from dynamo_infra.reconcile.inputs import definition_digest


class CustomResourceDefinitions(Resource):
    """Server-side applies `manifests` (CRDs) under `field_manager` and waits until the
    API server serves each; retained on delete, as a CRD takes every resource of its kind with it."""

    def __init__(
        self,
        name: str,
        manifests: Sequence[Manifest],
        *,
        kubeconfig: Kubeconfig,
        context: str | None,
        field_manager: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        by_name = {str(m["metadata"]["name"]): m for m in manifests}
        props = {
            **kubeconfig_props(kubeconfig),
            "context": context or "",
            "definitions": {name: definition_digest(m) for name, m in by_name.items()},
            "manifests": pack(by_name),
            "fieldManager": field_manager,
        }
        retained = pulumi.ResourceOptions(retain_on_delete=True)
        super().__init__(
            CustomResourceDefinitionsProvider(), name, props, pulumi.ResourceOptions.merge(opts, retained)
        )
