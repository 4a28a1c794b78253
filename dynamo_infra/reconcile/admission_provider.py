"""Dynamic provider that holds a graph as the user wrote it, so an update can be admitted as the
operator's validating webhook admits one: `check` compares the graph in the stack's state with the
new one (`reconcile.review`: immutable fields, scaling-adapter replicas, runtime version) and fails
the preview or `up` before any object is written (an unchanged graph, as on every no-op run, is no
update: the program admits the graph as written on every run). It touches no cluster, and never
shows as a change itself. A graph with shared objects has none: their workload keeps its admission.

Inputs: graph (the DGD manifest), features (the operator's gates the webhook reads), namespace.
Outputs: the inputs, `graph` packed (`reconcile.base.pack`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from pulumi.dynamic import CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.base import Inputs, Provider
from dynamo_infra.reconcile.review import review_change

if TYPE_CHECKING:
    from dynamo_infra.api.admission import OperatorFeatures


@dataclasses.dataclass(frozen=True)
class AdmissionInputs(Inputs):
    graph: Manifest = dataclasses.field(default_factory=dict)
    # OperatorFeatures as a mapping of its field names.
    features: dict[str, bool] = dataclasses.field(default_factory=dict)


def features_props(features: OperatorFeatures) -> dict[str, bool]:
    return dataclasses.asdict(features)


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
