"""Pulumi ComponentResources for Dynamo graphs and the cluster layer they run on."""

from dynamo_infra.components.args import StackKubeconfig
from dynamo_infra.components.checkpoint import Checkpoint, CheckpointArgs
from dynamo_infra.components.graph import (
    DynamoComponentDeployment,
    DynamoComponentDeploymentArgs,
    DynamoGraphDeployment,
    DynamoGraphDeploymentArgs,
)
from dynamo_infra.components.graph_plan import GraphPlan, plan_graph
from dynamo_infra.components.neighbours import read_neighbours, read_running_worker_hashes
from dynamo_infra.components.output_wait import linear_output_wait
from dynamo_infra.components.platform import Platform, read_mpi_ssh_secret, read_ownership
from dynamo_infra.components.platform_plan import Ownership, PlatformArgs, PlatformPlan, plan_platform
from dynamo_infra.components.pvc import PersistentVolumeClaim, PersistentVolumeClaimArgs
from dynamo_infra.components.scaling import ScalingAdapter, ScalingAdapterArgs
from dynamo_infra.components.stack_traces import trim_stack_traces
from dynamo_infra.components.workload import ComponentWorkload
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
    "StackKubeconfig",
    "linear_output_wait",
    "load_graph",
    "plan_graph",
    "plan_platform",
    "read_mpi_ssh_secret",
    "read_neighbours",
    "read_ownership",
    "read_running_worker_hashes",
    "trim_stack_traces",
]
