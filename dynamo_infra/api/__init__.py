"""Typed Dynamo API: the nvidia.com custom resources in v1alpha1 and v1beta1, YAML loading, conversion.

Importing this package is cheap: pydantic schemas are built on first use and the CRD schemas that
check Kubernetes sub-objects are loaded on first validation.
"""

from dynamo_infra.api import v1alpha1, v1beta1
from dynamo_infra.api.base import Resource
from dynamo_infra.api.conversion import to_other_version
from dynamo_infra.api.errors import DynamoValidationError, DynamoWarning, Problem
from dynamo_infra.api.loader import KINDS, AnyDGD, Loaded, load_yaml, to_hub, to_yaml

__all__ = [
    "KINDS",
    "AnyDGD",
    "DynamoValidationError",
    "DynamoWarning",
    "Loaded",
    "Problem",
    "Resource",
    "load_yaml",
    "to_hub",
    "to_other_version",
    "to_yaml",
    "v1alpha1",
    "v1beta1",
]
