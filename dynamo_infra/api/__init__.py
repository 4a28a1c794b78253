"""Typed Dynamo API: DynamoGraphDeployment in nvidia.com/v1alpha1 and v1beta1, loading and conversion."""

from dynamo_infra.api import v1alpha1, v1beta1
from dynamo_infra.api.errors import DynamoValidationError, Problem
from dynamo_infra.api.loader import AnyDGD, Loaded, load_yaml, to_hub

__all__ = ["AnyDGD", "DynamoValidationError", "Loaded", "Problem", "load_yaml", "to_hub", "v1alpha1", "v1beta1"]
