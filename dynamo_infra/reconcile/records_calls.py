"""What the records provider (`reconcile.records_provider`) does when it writes, deletes or reads:
imported only by `Provider.calls` (named, never imported, by the provider; see `reconcile.base`)."""

from __future__ import annotations

from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import KubeClient, object_key, stub
from dynamo_infra.reconcile.base import log
from dynamo_infra.reconcile.inputs import RecordsInputs
from dynamo_infra.reconcile.observe import component_statuses, record_status
from dynamo_infra.reconcile.ownership import (
    ForeignObject,
    foreign_owner,
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
from dynamo_infra.render.runtime.records import (
    COMPONENTS_ANNOTATION,
    DGD_KIND,
    DGDSA_KIND,
    RECORD_API_VERSION,
    adapter_status,
    components_annotation,
    graph_record,
    graph_record_status,
)
from dynamo_infra.render.runtime.replicas import REPLICAS_AGENT

CRD_API_VERSION = "apiextensions.k8s.io/v1"
# The CRDs the records need, each storing the records' version.
RECORD_CRDS = {
    DGD_KIND: "dynamographdeployments.nvidia.com",
    DGDSA_KIND: "dynamographdeploymentscalingadapters.nvidia.com",
}


def record_stub(ins: RecordsInputs) -> Manifest:
    """The graph's DGD record (a stub: apiVersion, kind, metadata)."""
    return stub(RECORD_API_VERSION, DGD_KIND, ins.namespace, ins.graph)


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
    live = record_replicas(client.get(record_stub(ins))) if owned else {}
    return {n: r for n, r in live.items() if n in owned}


def write_status(client: KubeClient, ins: RecordsInputs) -> Manifest:
    """The DGD's and DGDSAs' status from the live workloads, written through their status subresource."""
    live = client.get(record_stub(ins))
    status = record_status(client, dict(ins.components or {}), live)
    if live is not None:
        client.apply({**record_stub(ins), "status": status}, subresource="status")
    for adapter in (ins.adapters or {}).values():
        found = client.get(adapter)
        if found is not None:
            target = stub(RECORD_API_VERSION, DGDSA_KIND, ins.namespace, adapter["metadata"]["name"])
            client.apply({**target, "status": adapter_status(found)}, subresource="status")
    return status


def reconcile(
    ins: RecordsInputs, props: dict[str, Any], previous: list[str], taken: dict[str, Any]
) -> dict[str, Any]:
    """Write the DGD record and the adapters (adopting the operator's), then their status: the outputs."""
    with ins.client() as client:
        why = unrecordable(client)
        if why:
            log(f"{ins.label}: no DynamoGraphDeployment record: {why}")
            statuses, workloads = component_statuses(client, dict(ins.components or {}))
            status = graph_record_status(statuses, workloads)
            return {**props, "status": status, "recorded": why, "inventory": [], "takenOver": taken}
        operator = OperatorGraph(client, ins.namespace, ins.graph)
        adapters = {
            object_key(a): with_inventory(a, ins.label, ins.inventory, ins.stack)
            for a in (ins.adapters or {}).values()
        }
        adopted = refuse_foreign(
            client, {k: a for k, a in adapters.items() if k not in previous}, ins.label, operator, ins.stack
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
            ins.stack,
        )
        found_dgd = client.get_metadata(record)
        meta = (found_dgd or {}).get("metadata") or {}
        who = foreign_owner(found_dgd, ins.label, ins.stack) if found_dgd else None
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


def delete(ins: RecordsInputs, props: dict[str, Any]) -> None:
    """Delete the record and the adapters this resource applied."""
    keys = list(props.get("inventory") or [])
    if not keys:
        return
    adapters = {object_key(a): a for a in (ins.adapters or {}).values()}
    with ins.client() as client:
        delete_objects(client, keys, {object_key(record_stub(ins)): record_stub(ins), **adapters}, log)


def read(ins: RecordsInputs, props: dict[str, Any]) -> dict[str, Any] | None:
    """The outputs with the status as it is now (written again); None when the record is gone."""
    with ins.client() as client:
        if props.get("recorded") or unrecordable(client):
            return props
        # Gone, or another's object of the same name: `up` creates the record (adopting or refusing).
        if owner_of(client.get_metadata(record_stub(ins))) != ins.label:
            return None
        status = write_status(client, ins)
    return {**props, "status": status}
