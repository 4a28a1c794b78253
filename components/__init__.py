"""Pulumi ComponentResources for Dynamo graphs and the cluster layer they run on."""

from components.checkpoint import Checkpoint, CheckpointArgs
from components.graph import (
    DynamoComponentDeployment,
    DynamoComponentDeploymentArgs,
    DynamoGraphDeployment,
    DynamoGraphDeploymentArgs,
)
from components.graph_plan import GraphPlan, plan_graph
from components.neighbours import read_neighbours, read_running_worker_hashes
from components.platform import Platform, read_mpi_ssh_secret, read_ownership
from components.platform_plan import Ownership, PlatformArgs, PlatformPlan, plan_platform
from components.pvc import PersistentVolumeClaim, PersistentVolumeClaimArgs
from components.scaling import ScalingAdapter, ScalingAdapterArgs
from components.workload import ComponentWorkload
from dynamo_infra.graph_source import load_graph

__all__ = [
    "Checkpoint",
    "CheckpointArgs",
    "ComponentWorkload",
    "DynamoComponentDeployment",
    "DynamoComponentDeploymentArgs",
    "DynamoGraphDeployment",
    "DynamoGraphDeploymentArgs",
    "GraphPlan",
    "Ownership",
    "PersistentVolumeClaim",
    "PersistentVolumeClaimArgs",
    "Platform",
    "PlatformArgs",
    "PlatformPlan",
    "ScalingAdapter",
    "ScalingAdapterArgs",
    "load_graph",
    "plan_graph",
    "plan_platform",
    "read_mpi_ssh_secret",
    "read_neighbours",
    "read_ownership",
    "read_running_worker_hashes",
]
