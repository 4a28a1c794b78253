"""Admission: what the Dynamo operator's validating webhook (at the parity pin) answers for an object.

`review(obj)` applies the webhook's rules that need nothing but the object (the loader does this on
every Dynamo document it loads); `review(obj, features)` also those that depend on the operator's
feature gates (Grove, checkpointing, the InferencePool API: `ClusterOptions.operator_features`).
`review_update(old, new)` adds the rules of an update (immutable fields). Denials are `Problem`s at
our field path with the webhook's message; warnings are returned, never raised.
"""

from __future__ import annotations

from dynamo_infra.api import v1alpha1, v1beta1
from dynamo_infra.api.admission.checkpoint import checkpoint_review
from dynamo_infra.api.admission.features import OperatorFeatures, grove_pathway
from dynamo_infra.api.admission.graph import graph_review
from dynamo_infra.api.admission.resources import dcd_review, model_review, request_review
from dynamo_infra.api.admission.review import AdmissionDenied, Review
from dynamo_infra.api.admission.update import update_review
from dynamo_infra.api.base import Resource

__all__ = [
    "AdmissionDenied",
    "OperatorFeatures",
    "Review",
    "grove_pathway",
    "review",
    "review_update",
]


def review(
    obj: Resource, features: OperatorFeatures | None = None, *, namespace: str | None = None
) -> Review:
    """The webhook's answer to creating `obj` in `namespace` (default: its own).

    Without `features` the rules that depend on the cluster are left out (as at load).
    """
    if isinstance(obj, v1alpha1.DynamoGraphDeployment | v1beta1.DynamoGraphDeployment):
        return graph_review(obj, features, namespace)
    if isinstance(obj, v1alpha1.DynamoComponentDeployment | v1beta1.DynamoComponentDeployment):
        return dcd_review(obj, features, namespace)
    if isinstance(obj, v1alpha1.DynamoCheckpoint):
        return checkpoint_review(obj, features)
    if isinstance(obj, v1alpha1.DynamoModel):
        return model_review(obj)
    if isinstance(obj, v1alpha1.DynamoGraphDeploymentRequest | v1beta1.DynamoGraphDeploymentRequest):
        return request_review(obj, features)
    return Review()


def review_update(
    old: Resource, new: Resource, features: OperatorFeatures | None = None, *, namespace: str | None = None
) -> Review:
    """The webhook's answer to replacing `old` by `new` (same kind)."""
    return update_review(old, new, features, namespace)
