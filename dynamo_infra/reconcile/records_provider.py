"""The dynamic provider of a graph's records: its DynamoGraphDeployment and DGDSAs, with live status.

Inputs: kubeconfig (secret), context, namespace, graph,
  dgd: the graph as written, in the hub version (v1beta1 manifest); annotations: the operator's,
  adapters: {component: DGDSA (v1beta1)}, components: {component: {watch: {key: stub}, workload: key,
  runtimeNamespace: str, scaleTarget: {apiVersion, kind, name}, replicas: graph|agent|autoscaler}}
  (the objects whose status is the component's; where its replicas live and who owns them), also
  written on the DGD as annotation COMPONENTS_ANNOTATION for the dynamo-infra agent.
Outputs: the inputs (`dgd` and `components` packed: `reconcile.base.pack`) plus `status` (the DGD status written), `recorded` ("" when the records are in the
cluster, else why not) and `takenOver`.

Status is written through the status subresource on every create, update and read (refresh), never
diffed. Records are written only where the DGD and DGDSA CRDs store v1beta1 (the platform's): a CRD
another tool installed that stores v1alpha1 behind the operator's conversion webhook would refuse
every v1beta1 write once the operator is gone; the graph then runs without records, and says so.

Check and Diff need only the inputs (`reconcile.inputs`); what writes, deletes and reads is in
`records_calls`, imported on the first of those calls by `Provider.calls` (see `reconcile.base`).
"""

from __future__ import annotations

from typing import Any

from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from dynamo_infra.reconcile.base import Provider
from dynamo_infra.reconcile.inputs import RecordsInputs


class GraphRecordsProvider(Provider[RecordsInputs]):
    """Writes a graph's DGD and DGDSAs as the operator's users see them, and keeps their status."""

    inputs = RecordsInputs
    calls_module = "dynamo_infra.reconcile.records_calls"
    packed = ("dgd", "components")

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = self.changes(olds, news)
        return DiffResult(changes=bool(changed), replaces=[], stables=["graph"], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        ins = self.typed(props)
        return CreateResult(id_=ins.label, outs=self.outputs(self.calls(ins).reconcile(ins, props, [], {})))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        from dynamo_infra.render.runtime.records import DGDSA_KIND  # here: Check and Diff stay light

        ins = self.typed(news)
        previous = [k for k in olds.get("inventory") or [] if f"/{DGDSA_KIND}/" in k]
        taken = dict(olds.get("takenOver") or {})
        return UpdateResult(outs=self.outputs(self.calls(ins).reconcile(ins, news, previous, taken)))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        ins = self.typed(props)
        self.calls(ins).delete(ins, props)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh writes the status as it is now; a record deleted (or replaced) by hand is gone, and
        the next `up` creates it again."""
        ins = self.typed(props)
        outs = self.calls(ins).read(ins, props)
        return ReadResult(None, {}) if outs is None else self.read_result(id_, outs)
