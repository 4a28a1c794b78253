"""Dynamic provider that holds a graph as the user wrote it, so an update can be admitted as the
operator's validating webhook admits one: `check` compares the graph in the stack's state with the
new one (`api.admission.review_update`: immutable fields, scaling-adapter replicas, runtime version)
and fails the preview or `up` before any object is written. It touches no cluster.

Inputs: graph (the DGD manifest), features (the operator's gates the webhook reads), namespace.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from dynamo_infra.api import DynamoValidationError
from dynamo_infra.api.admission import OperatorFeatures, review_update
from dynamo_infra.api.base import Resource
from dynamo_infra.api.loader import load_documents
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.base import Inputs, Provider, log

# The input a failed check names.
GRAPH_INPUT = "graph"


@dataclasses.dataclass(frozen=True)
class AdmissionInputs(Inputs):
    graph: Manifest = dataclasses.field(default_factory=dict)
    # OperatorFeatures as a mapping of its field names.
    features: dict[str, bool] = dataclasses.field(default_factory=dict)


def features_props(features: OperatorFeatures) -> dict[str, bool]:
    return dataclasses.asdict(features)


def _typed(manifest: Manifest) -> Resource:
    (doc,) = load_documents([manifest], admission=False).documents
    return doc


class GraphAdmissionProvider(Provider[AdmissionInputs]):
    inputs = AdmissionInputs

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        old, new = self.typed(olds), self.typed(news)
        if not old.graph:
            return CheckResult(news, [])
        try:
            review = review_update(
                _typed(old.graph),
                _typed(new.graph),
                OperatorFeatures(**new.features),
                namespace=new.namespace,
            )
        except DynamoValidationError as e:
            return CheckResult(news, [CheckFailure(GRAPH_INPUT, str(e))])
        for warning in review.warnings:
            log(f"admission: {warning}")
        return CheckResult(news, [CheckFailure(GRAPH_INPUT, str(p)) for p in review.problems])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=bool(self.changes(olds, news)), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        ins = self.typed(props)
        return CreateResult(
            id_=f"{ins.namespace}/{ins.graph.get('metadata', {}).get('name', '')}", outs=props
        )

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=news)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return self.read_result(id_, props)
