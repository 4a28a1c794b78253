"""Read a cluster's GPUs (Nodes, and ResourceSlices when the cluster serves DRA)."""

from __future__ import annotations

from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.policy.gpus import ClusterGpus, cluster_gpus

# The DRA API whose ResourceSlices publish devices (GA in Kubernetes 1.34).
RESOURCE_API = "resource.k8s.io/v1"


class ClusterReadError(DynamoInfraError):
    """The cluster's GPUs could not be read."""


def read_cluster_gpus(kubeconfig: str, context: str | None = None) -> ClusterGpus:
    """GPUs per node of the cluster a kubeconfig (content or path) points at."""
    try:
        with KubeClient(connection.load(kubeconfig, context or None)) as client:
            nodes = client.list("v1", "Node")
            slices = (
                client.list(RESOURCE_API, "ResourceSlice")
                if client.serves(RESOURCE_API, "ResourceSlice")
                else []
            )
    except DynamoInfraError as e:
        raise ClusterReadError(f"cannot read the cluster's nodes: {e}") from e
    return cluster_gpus(nodes, slices)
