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
from dynamo_infra.reconcile.base import Inputs, Provider, log
from dynamo_infra.reconcile.kube import KubeClient, object_key, stub
from dynamo_infra.reconcile.observe import component_statuses, record_status
from dynamo_infra.reconcile.ownership import (
    ForeignObject,
    foreign_owner,
    inventory_id,
    owner_of,
    refuse_foreign,
    with_inventory,
)
from dynamo_infra.reconcile.takeover import (
    OPERATOR_FINALIZER,
    OperatorGraph,
    finalizer_operations,
    merged_take_overs,
    release_operations,
    take_over,
    written_by_operator,
)
from dynamo_infra.reconcile.workload import Ownership, apply_objects, delete_objects, prune
from dynamo_infra.render.records import (
    COMPONENTS_ANNOTATION,
    DGD_KIND,
    DGDSA_KIND,
    RECORD_API_VERSION,
    adapter_status,
    components_annotation,
    graph_record,
    graph_record_status,
)
from dynamo_infra.render.replicas import REPLICAS_AGENT

# The inventory "component" of a graph's records (not a valid component name: no clash with one).
RECORDS_COMPONENT = "#records"
CRD_API_VERSION = "apiextensions.k8s.io/v1"
# The CRDs the records need, each storing the records' version.
RECORD_CRDS = {
    DGD_KIND: "dynamographdeployments.nvidia.com",
    DGDSA_KIND: "dynamographdeploymentscalingadapters.nvidia.com",
}


def storage_version(crd: Manifest) -> str:
    return next(
        (str(v["name"]) for v in (crd.get("spec") or {}).get("versions") or [] if v.get("storage")), ""
    )


def unrecordable(client: KubeClient) -> str:
    """Why the records cannot be written here ("" when they can)."""
    wanted = RECORD_API_VERSION.split("/")[-1]
    for kind, name in RECORD_CRDS.items():
        crd = client.get(stub(CRD_API_VERSION, "CustomResourceDefinition", "", name))
        if crd is None:
            return f"CRD {name} is not installed"
        stored = storage_version(crd)
        if stored != wanted:
            return (
                f"CRD {name} stores {stored}, not {wanted} (installed by another tool: its conversion "
                "webhook, which only the Dynamo operator serves, would have to convert every write)"
            )
        if not client.serves(RECORD_API_VERSION, kind):
            return f"the API server does not serve {kind} {RECORD_API_VERSION} yet"
    return ""


def operator_dgd(meta: Manifest) -> bool:
    """Whether a DGD (its metadata) was reconciled by the Dynamo operator: the graph moving from it."""
    return OPERATOR_FINALIZER in (meta.get("finalizers") or []) or written_by_operator(meta)


def adoption_operations(meta: Manifest, owners: Any) -> list[Manifest]:
    """What ties the operator's DGD to it: its finalizer, annotations and managedFields entries."""
    return [*finalizer_operations(meta), *release_operations(meta, owners)]


@dataclasses.dataclass(frozen=True)
class RecordsInputs(Inputs):
    graph: str = ""
    dgd: Manifest = dataclasses.field(default_factory=dict)
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)
    adapters: dict[str, Manifest] = dataclasses.field(default_factory=dict)
    components: dict[str, Manifest] = dataclasses.field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.graph}/{RECORDS_COMPONENT}"

    @property
    def inventory(self) -> str:
        return inventory_id(self.namespace, self.graph, RECORDS_COMPONENT)

    def record_stub(self) -> Manifest:
        return stub(RECORD_API_VERSION, DGD_KIND, self.namespace, self.graph)


def record_replicas(record: Manifest | None) -> dict[str, int]:
    """The replicas of each component of a live DGD record that sets them ({} when there is none)."""
    return {
        str(c["name"]): int(c["replicas"])
        for c in ((record or {}).get("spec") or {}).get("components") or []
        if c.get("name") and c.get("replicas") is not None
    }


def kept_replicas(client: KubeClient, ins: RecordsInputs) -> dict[str, int]:
    """The live record's replicas of the components the agent owns (changed at run time by the planner
    or through their adapters): kept over the graph's. Empty before the record exists."""
    owned = {n for n, c in (ins.components or {}).items() if c.get("replicas") == REPLICAS_AGENT}
    live = record_replicas(client.get(ins.record_stub())) if owned else {}
    return {n: r for n, r in live.items() if n in owned}


def write_status(client: KubeClient, ins: RecordsInputs) -> Manifest:
    """The DGD's and DGDSAs' status from the live workloads, written through their status subresource."""
    live = client.get(ins.record_stub())
    status = record_status(client, dict(ins.components or {}), live)
    if live is not None:
        client.apply({**ins.record_stub(), "status": status}, subresource="status")
    for adapter in (ins.adapters or {}).values():
        found = client.get(adapter)
        if found is not None:
            target = stub(RECORD_API_VERSION, DGDSA_KIND, ins.namespace, adapter["metadata"]["name"])
            client.apply({**target, "status": adapter_status(found)}, subresource="status")
    return status


class GraphRecordsProvider(Provider[RecordsInputs]):
    """Writes a graph's DGD and DGDSAs as the operator's users see them, and keeps their status."""

    inputs = RecordsInputs

    def _reconcile(self, props: dict[str, Any], previous: list[str], taken: dict[str, Any]) -> dict[str, Any]:
        ins = self.typed(props)
        with ins.client() as client:
            why = unrecordable(client)
            if why:
                log(f"{ins.label}: no DynamoGraphDeployment record: {why}")
                statuses, workloads = component_statuses(client, dict(ins.components or {}))
                status = graph_record_status(statuses, workloads)
                return {**props, "status": status, "recorded": why, "inventory": [], "takenOver": taken}
            operator = OperatorGraph(client, ins.namespace, ins.graph)
            adapters = {
                object_key(a): with_inventory(a, ins.label, ins.inventory)
                for a in (ins.adapters or {}).values()
            }
            adopted = refuse_foreign(
                client, {k: a for k, a in adapters.items() if k not in previous}, ins.label, operator
            )
            # The adapters are the source of truth of their components' replicas once they exist.
            replicas = {}
            for component, a in (ins.adapters or {}).items():
                found = client.get(a)
                if found is not None:
                    replicas[component] = int(found["spec"]["replicas"])
            annotations = {
                **(ins.annotations or {}),
                COMPONENTS_ANNOTATION: components_annotation(dict(ins.components or {})),
            }
            record = with_inventory(
                graph_record(ins.dgd, ins.namespace, annotations, replicas, kept_replicas(client, ins)),
                ins.label,
                ins.inventory,
            )
            found_dgd = client.get_metadata(record)
            meta = (found_dgd or {}).get("metadata") or {}
            who = foreign_owner(found_dgd, ins.label) if found_dgd else None
            if who is not None and not operator_dgd(meta):
                raise ForeignObject(
                    f"{ins.label}: not taking over {DGD_KIND} {ins.graph}: it belongs to {who} "
                    "(delete it, or rename the graph)"
                )
            stored = client.apply(record)
            report = take_over(
                operator, adopted, {}, apply_objects(client, adapters, Ownership(replicas_external=True), log)
            )
            if who is not None:
                operator.release(stored, adoption_operations)
                report.objects[object_key(record)] = "the Dynamo operator (its reconciled graph)"
                log(f"{ins.label}: took over {DGD_KIND} {ins.graph} from the Dynamo operator")
            for line in report.lines(ins.label):
                log(line)
            prune(client, previous, adapters, {}, log)
            status = write_status(client, ins)
        return {
            **props,
            "status": status,
            "recorded": "",
            "inventory": [object_key(record), *adapters],
            "takenOver": merged_take_overs([taken, report.to_dict()]),
        }

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = self.changes(olds, news)
        return DiffResult(changes=bool(changed), replaces=[], stables=["graph"], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        ins = self.typed(props)
        return CreateResult(id_=ins.label, outs=self._reconcile(props, [], {}))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        previous = [k for k in olds.get("inventory") or [] if f"/{DGDSA_KIND}/" in k]
        return UpdateResult(outs=self._reconcile(news, previous, dict(olds.get("takenOver") or {})))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        ins = self.typed(props)
        keys = list(props.get("inventory") or [])
        if not keys:
            return
        adapters = {object_key(a): a for a in (ins.adapters or {}).values()}
        with ins.client() as client:
            delete_objects(client, keys, {object_key(ins.record_stub()): ins.record_stub(), **adapters}, log)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh writes the status as it is now; a record deleted (or replaced) by hand is gone, and
        the next `up` creates it again."""
        ins = self.typed(props)
        with ins.client() as client:
            if props.get("recorded") or unrecordable(client):
                return self.read_result(id_, props)
            # Gone, or another's object of the same name: `up` creates the record (adopting or refusing).
            if owner_of(client.get_metadata(ins.record_stub())) != ins.label:
                return ReadResult(None, {})
            status = write_status(client, ins)
        return self.read_result(id_, {**props, "status": status})
