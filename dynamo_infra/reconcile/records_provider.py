"""The dynamic provider of a graph's records: its DynamoGraphDeployment and DGDSAs, with live status.

Inputs: kubeconfig (secret), context, namespace, graph,
  dgd: the graph as written, in the hub version (v1beta1 manifest); annotations: the operator's,
  adapters: {component: DGDSA (v1beta1)}, components: {component: {watch: {key: stub}, workload: key,
  runtimeNamespace: str, scaleTarget: {apiVersion, kind, name}, replicas: graph|agent|autoscaler}}
  (the objects whose status is the component's; where its replicas live and who owns them), also
  written on the DGD as annotation COMPONENTS_ANNOTATION for the dynamo-infra agent.
Outputs: the inputs plus `status` (the DGD status written), `recorded` ("" when the records are in the
cluster, else why not) and `takenOver`.

Status is written through the status subresource on every create, update and read (refresh), never
diffed. Records are written only where the DGD and DGDSA CRDs store v1beta1 (the platform's): a CRD
another tool installed that stores v1alpha1 behind the operator's conversion webhook would refuse
every v1beta1 write once the operator is gone; the graph then runs without records, and says so.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.reconcile.base import Inputs, Provider

# The inventory "component" of a graph's records (not a valid component name: no clash with one).
RECORDS_COMPONENT = "#records"


@dataclasses.dataclass(frozen=True)
class RecordsInputs(Inputs):
    graph: str = ""
    # The stack writing the records (`project/stack`): another stack's graph of the same name is refused.
    stack: str = ""
    dgd: Manifest = dataclasses.field(default_factory=dict)
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)
    adapters: dict[str, Manifest] = dataclasses.field(default_factory=dict)
    components: dict[str, Manifest] = dataclasses.field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.graph}/{RECORDS_COMPONENT}"

    @property
    def inventory(self) -> str:
        from dynamo_infra.reconcile.ownership import inventory_id  # here: Check and Diff stay light

        return inventory_id(self.namespace, self.graph, RECORDS_COMPONENT)


class GraphRecordsProvider(Provider[RecordsInputs]):
    """Writes a graph's DGD and DGDSAs as the operator's users see them, and keeps their status."""

    inputs = RecordsInputs

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = self.changes(olds, news)
        return DiffResult(changes=bool(changed), replaces=[], stables=["graph"], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        from dynamo_infra.reconcile import records_calls as calls  # here: Check and Diff stay light

        ins = self.typed(props)
        return CreateResult(id_=ins.label, outs=calls.reconcile(ins, props, [], {}))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        from dynamo_infra.reconcile import records_calls as calls
        from dynamo_infra.render.runtime.records import DGDSA_KIND

        previous = [k for k in olds.get("inventory") or [] if f"/{DGDSA_KIND}/" in k]
        taken = dict(olds.get("takenOver") or {})
        return UpdateResult(outs=calls.reconcile(self.typed(news), news, previous, taken))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        from dynamo_infra.reconcile import records_calls as calls

        calls.delete(self.typed(props), props)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh writes the status as it is now; a record deleted (or replaced) by hand is gone, and
        the next `up` creates it again."""
        from dynamo_infra.reconcile import records_calls as calls

        outs = calls.read(self.typed(props), props)
        return ReadResult(None, {}) if outs is None else self.read_result(id_, outs)
