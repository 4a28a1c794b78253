"""The operator's validating webhook on a graph update, for a provider's `check`: what it would deny
in replacing the graph as written in the stack's state by the new one, as check failures. Loads the
API models only when the graph changed (Check stays light on every no-op run)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pulumi.dynamic import CheckFailure

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.base import log

if TYPE_CHECKING:
    from dynamo_infra.api.base import Resource

# The property a failed check names: none (the engine would print the whole graph with it).
NO_PROPERTY = ""


def _integers(value: Any) -> Any:
    """The value with Pulumi's numbers back as JSON integers where they are whole (1.0 -> 1)."""
    if isinstance(value, dict):
        return {k: _integers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integers(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _typed(manifest: Manifest) -> Resource:
    from dynamo_infra.api.loader import load_documents  # here: Check and Diff stay light (reconcile.base)

    (doc,) = load_documents([_integers(manifest)], admission=False).documents
    return doc


def review_change(
    old: Manifest | None, new: Manifest, features: dict[str, bool], namespace: str
) -> list[CheckFailure]:
    """What the webhook would deny in the update of graph `old` (as written, None or {} when there was
    none) to `new`, as check failures; its warnings are logged. A creation or no change is no update:
    the program's own admission of the graph is the webhook's answer."""
    if not old or _integers(old) == _integers(new):
        return []
    from dynamo_infra.api import DynamoValidationError  # here: an unchanged graph loads no model
    from dynamo_infra.api.admission import OperatorFeatures, review_update

    try:
        review = review_update(_typed(old), _typed(new), OperatorFeatures(**features), namespace=namespace)
    except DynamoValidationError as e:
        return [CheckFailure(NO_PROPERTY, str(e))]
    for warning in review.warnings:
        log(f"admission: {warning}")
    return [CheckFailure(NO_PROPERTY, str(p)) for p in review.problems]
