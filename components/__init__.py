"""Pulumi ComponentResources for Dynamo graphs."""

from components.graph import DynamoComponentDeployment, DynamoGraphDeployment, load_graph
from components.workload import ComponentWorkload

__all__ = ["ComponentWorkload", "DynamoComponentDeployment", "DynamoGraphDeployment", "load_graph"]
