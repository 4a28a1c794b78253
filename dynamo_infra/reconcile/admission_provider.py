"""Dynamic provider that holds a graph as the user wrote it, so an update can be admitted as the
operator's validating webhook admits one: `check` compares the graph in the stack's state with the
new one (`api.admission.review_update`: immutable fields, scaling-adapter replicas, runtime version)
and fails the preview or `up` before any object is written (an unchanged graph, as on every no-op
run, is no update: the program admits the graph as written on every run). It touches no cluster, and
never shows as a change itself.

Inputs: graph (the DGD manifest), features (the operator's gates the webhook reads), namespace.
Outputs: the inputs, `graph` packed (`reconcile.base.pack`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.base import Inputs, Provider, log

if TYPE_CHECKING:
    from dynamo_infra.api.admission import OperatorFeatures
    from dynamo_infra.api.base import Resource

# The property a failed check names: none (the engine would print the whole graph with it).
NO_PROPERTY = ""


@dataclasses.dataclass(frozen=True)
class AdmissionInputs(Inputs):
    graph: Manifest = dataclasses.field(default_factory=dict)
    # OperatorFeatures as a mapping of its field names.
    features: dict[str, bool] = dataclasses.field(default_factory=dict)


def features_props(features: OperatorFeatures) -> dict[str, bool]:
    return dataclasses.asdict(features)


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


class GraphAdmissionProvider(Provider[AdmissionInputs]):
    inputs = AdmissionInputs
    packed = ("graph",)

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        old, new = self.typed(olds), self.typed(news)
        return CheckResult(news, review_change(old.graph, new.graph, new.features, new.namespace))

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        """Never a change: `check` has reviewed the new graph and the graph's object resources show what
        changes. The engine still keeps the new inputs in the state (a same step), which the next
        `check` compares with."""
        return DiffResult(changes=False, replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        ins = self.typed(props)
        return CreateResult(
            id_=f"{ins.namespace}/{ins.graph.get('metadata', {}).get('name', '')}", outs=self.outputs(props)
        )

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self.outputs(news))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return self.read_result(id_, props)
