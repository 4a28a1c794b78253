"""Typed Dynamo API: the nvidia.com custom resources in v1alpha1 and v1beta1, YAML loading, conversion.

Importing this package is cheap: each name below is imported on first use (a submodule such as
`api.manifest` loads no model), pydantic schemas are built on first use and the CRD schemas that
check Kubernetes sub-objects are loaded on first validation.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dynamo_infra.api import v1alpha1, v1beta1
    from dynamo_infra.api.base import Resource
    from dynamo_infra.api.conversion import to_other_version
    from dynamo_infra.api.errors import DynamoValidationError, DynamoWarning, Problem
    from dynamo_infra.api.loader import KINDS, AnyDGD, Loaded, load_yaml, to_hub, to_yaml

# Each public name, by the module that defines it (modules by their own name).
_EXPORTS = {
    "KINDS": "dynamo_infra.api.loader",
    "AnyDGD": "dynamo_infra.api.loader",
    "DynamoValidationError": "dynamo_infra.api.errors",
    "DynamoWarning": "dynamo_infra.api.errors",
    "Loaded": "dynamo_infra.api.loader",
    "Problem": "dynamo_infra.api.errors",
    "Resource": "dynamo_infra.api.base",
    "load_yaml": "dynamo_infra.api.loader",
    "to_hub": "dynamo_infra.api.loader",
    "to_other_version": "dynamo_infra.api.conversion",
    "to_yaml": "dynamo_infra.api.loader",
    "v1alpha1": "dynamo_infra.api.v1alpha1",
    "v1beta1": "dynamo_infra.api.v1beta1",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dynamo_infra.api' has no attribute {name!r}")
    value = importlib.import_module(module)
    if module != f"{__name__}.{name}":
        value = getattr(value, name)
    globals()[name] = value  # looked up once
    return value
