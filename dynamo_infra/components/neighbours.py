"""Who else deploys graphs into the stack's namespace, read when the program runs (before any resource
is registered, so a refusal fails the preview and the `up` before anything is written).

- A DynamoGraphDeployment that dynamo-infra did not write is the Dynamo operator's: the operator
  manages graphs in that namespace, and a stack never deploys beside it. The one exception is a DGD
  of the same name as one of the stack's graphs: the graph moving from the operator, taken over by
  the graph's resources (`reconcile.takeover`), which refuse what is not the operator's.
- A graph's DGD record written by another stack (`reconcile.ownership` stack annotation): that stack
  deploys a graph of the same name there; the second stack is refused, naming the first.

Each graph's resources refuse another stack's objects too (`ownership.refuse_foreign`), before they
write: this read only makes the refusal come first, and whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import FIELD_MANAGER, PROGRAM_USER_AGENT, KubeClient
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.reconcile.ownership import owner_of, stack_of
from dynamo_infra.reconcile.takeover import DGD_KIND, DYNAMO_API_VERSIONS
from dynamo_infra.render.names import ANNOTATION_CURRENT_WORKER_HASH
from dynamo_infra.render.runtime.records import RECORD_API_VERSION

# The DGD resource's plural and its CRD's name.
DGD_PLURAL = "dynamographdeployments"
DGD_CRD = f"{DGD_PLURAL}.nvidia.com"
# Accept header asking for a list of objects' metadata only.
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def list_graphs(client: KubeClient, namespace: str, versions: Sequence[str]) -> list[Manifest]:
    """The metadata of the namespace's DGDs, read in the first of `versions` the API server answers
    (none: the DGD CRD is not installed, so there are none). One request when the first is served."""
    for version in versions:
        path = f"/apis/{version}/namespaces/{namespace}/{DGD_PLURAL}"
        try:
            found = client.request("GET", path, accept=METADATA_LIST)
        except KubeError:
            continue
        return [dict(item.get("metadata") or {}) for item in found.get("items") or []]
    return []


def written_by_us(meta: Manifest) -> bool:
    """Whether dynamo-infra wrote a DGD: a graph's record (owner annotation, or our field manager on one
    recorded before owners were)."""
    return bool(owner_of({"metadata": meta})) or any(
        m.get("manager") == FIELD_MANAGER for m in meta.get("managedFields") or []
    )


def neighbour_problems(
    graphs_found: list[Manifest], namespace: str, stack: str, graphs: Sequence[str]
) -> list[str]:
    """Why the stack's `graphs` cannot be deployed beside the namespace's DGDs (their metadata)."""
    problems: list[str] = []
    operators: list[str] = []
    for meta in sorted(graphs_found, key=lambda m: str(m.get("name"))):
        name = str(meta.get("name"))
        if not written_by_us(meta):
            if name not in graphs:
                operators.append(name)
            continue
        theirs = stack_of({"metadata": meta})
        if name in graphs and theirs and theirs != stack:
            problems.append(
                f"graph {name}: namespace {namespace} runs a graph of that name deployed by stack {theirs} "
                f"(dynamo-infra resource {owner_of({'metadata': meta})}); rename the graph, or deploy it "
                "into another namespace"
            )
    if operators:
        problems.insert(
            0,
            f"namespace {namespace}: the Dynamo operator manages graphs there ({DGD_KIND} "
            f"{', '.join(operators)}); dynamo-infra does not deploy beside it (deploy into another "
            "namespace, or move those graphs off the operator first)",
        )
    return problems


def running_worker_hashes(graphs_found: list[Manifest], stack: str) -> dict[str, str]:
    """`graph name -> current worker hash` of the DGD records this stack wrote (the generation running)."""
    out: dict[str, str] = {}
    for meta in graphs_found:
        if written_by_us(meta) and stack_of({"metadata": meta}) in (stack, ""):
            running = (meta.get("annotations") or {}).get(ANNOTATION_CURRENT_WORKER_HASH)
            if running:
                out[str(meta.get("name"))] = str(running)
    return out


def read_versions(platform_crd: bool) -> tuple[str, ...]:
    """The Dynamo API versions to list DGDs in, best first: the platform's DGD CRD serves only the hub
    (v1beta1); another tool's (the operator's chart) stores v1alpha1 first, and reading another
    version would go through the operator's conversion webhook."""
    hub = (RECORD_API_VERSION,)
    rest = tuple(v for v in DYNAMO_API_VERSIONS if v != RECORD_API_VERSION)
    return (*hub, *rest) if platform_crd else (*rest, *hub)


def read_graph_records(
    kubeconfig: str, context: str | None, namespace: str, *, platform_crd: bool = True
) -> list[Manifest]:
    """The metadata of the namespace's DGDs (one list); `platform_crd`: whether the DGD CRD is the
    platform's (or absent)."""
    with KubeClient(connection.load(kubeconfig, context), PROGRAM_USER_AGENT) as client:
        return list_graphs(client, namespace, read_versions(platform_crd))


def read_neighbours(
    kubeconfig: str,
    context: str | None,
    namespace: str,
    stack: str,
    graphs: Sequence[str],
    *,
    platform_crd: bool = True,
) -> list[str]:
    """Why the stack (`project/stack`) cannot deploy `graphs` into `namespace` (empty when it can)."""
    found = read_graph_records(kubeconfig, context, namespace, platform_crd=platform_crd)
    return neighbour_problems(found, namespace, stack, graphs)


def read_running_worker_hashes(
    kubeconfig: str, context: str | None, namespace: str, stack: str, *, platform_crd: bool = True
) -> dict[str, str]:
    """`graph name -> running worker hash` of the stack's graphs in `namespace` (for a library program;
    `__main__` takes them from the list it reads for the neighbours)."""
    found = read_graph_records(kubeconfig, context, namespace, platform_crd=platform_crd)
    return running_worker_hashes(found, stack)
