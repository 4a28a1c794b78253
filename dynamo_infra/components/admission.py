"""A graph as the user wrote it, kept in the stack's state so that an update is admitted as the
operator's validating webhook admits one (`reconcile.admission_provider`): by the graph's first
workload (`admission_props`), or by a GraphAdmission of its own when the graph has none."""

from __future__ import annotations

import pulumi
from pulumi.dynamic import Resource

from dynamo_infra.api.admission import OperatorFeatures
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.admission_provider import GraphAdmissionProvider, features_props


def admission_props(graph: Manifest, features: OperatorFeatures) -> Manifest:
    """A graph's admission as a workload keeps it: the graph as written and the webhook's gates."""
    return {"graph": graph, "features": features_props(features)}


class GraphAdmission(Resource):
    """Fails the preview or `up` of a graph change the webhook would deny (e.g. a component added or
    removed, a node topology or topology constraint changed): the graph's other resources depend on it.
    Only for a graph without shared objects (their workload keeps the admission otherwise)."""

    def __init__(
        self,
        name: str,
        graph: Manifest,
        features: OperatorFeatures,
        namespace: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {**admission_props(graph, features), "namespace": namespace}
        super().__init__(GraphAdmissionProvider(), name, props, opts)
