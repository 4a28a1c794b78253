"""GraphAdmission: a graph as the user wrote it, kept in the stack's state so that an update is
admitted as the operator's validating webhook admits one (`reconcile.admission_provider`)."""

from __future__ import annotations

import pulumi
from pulumi.dynamic import Resource

from dynamo_infra.api.admission import OperatorFeatures
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.admission_provider import GraphAdmissionProvider, features_props


class GraphAdmission(Resource):
    """Fails the preview or `up` of a graph change the webhook would deny (e.g. a component added or
    removed, a node topology or topology constraint changed): the graph's other resources depend on it."""

    def __init__(
        self,
        name: str,
        graph: Manifest,
        features: OperatorFeatures,
        namespace: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {"graph": graph, "features": features_props(features), "namespace": namespace}
        super().__init__(GraphAdmissionProvider(), name, props, opts)
