"""dynamo-infra: NVIDIA Dynamo inference graphs on Kubernetes, rendered and reconciled by Pulumi.

The user-facing API, importable from here: graphs loaded and validated (`load_graph`, `load_yaml`,
`DynamoValidationError`, `AdmissionDenied`), cluster and platform options, `render_graph`, and the
stack configuration `__main__.py` reads (`StackConfig`). Each is imported on first use, so importing a submodule (as
the dynamic providers do) stays cheap. `__version__` is the installed distribution's version (its metadata).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dynamo_infra.api import AnyDGD, DynamoValidationError, DynamoWarning, Problem, load_yaml, to_yaml
    from dynamo_infra.api.admission import AdmissionDenied
    from dynamo_infra.api.autoscaling import Autoscaler
    from dynamo_infra.config import ClusterOptions
    from dynamo_infra.graph_source import GraphSource, load_graph
    from dynamo_infra.platform_options import PlatformOptions
    from dynamo_infra.render import RenderedComponent, RenderedGraph, render_graph
    from dynamo_infra.stack_config import StackConfig, StackConfigError

    __version__: str

# Each public name, by the module that defines it.
_EXPORTS = {
    "AdmissionDenied": "dynamo_infra.api.admission",
    "AnyDGD": "dynamo_infra.api",
    "DynamoValidationError": "dynamo_infra.api",
    "DynamoWarning": "dynamo_infra.api",
    "Problem": "dynamo_infra.api",
    "load_yaml": "dynamo_infra.api",
    "to_yaml": "dynamo_infra.api",
    "Autoscaler": "dynamo_infra.api.autoscaling",
    "ClusterOptions": "dynamo_infra.config",
    "GraphSource": "dynamo_infra.graph_source",
    "load_graph": "dynamo_infra.graph_source",
    "PlatformOptions": "dynamo_infra.platform_options",
    "RenderedComponent": "dynamo_infra.render",
    "RenderedGraph": "dynamo_infra.render",
    "render_graph": "dynamo_infra.render",
    "StackConfig": "dynamo_infra.stack_config",
    "StackConfigError": "dynamo_infra.stack_config",
}

# The distribution pyproject.toml declares; its metadata holds the package's version.
DISTRIBUTION = "dynamo-infra"
# The version of a source tree that is imported without being installed (PEP 440's local label).
UNINSTALLED_VERSION = "0+unknown"

__all__ = [
    "AdmissionDenied",
    "AnyDGD",
    "Autoscaler",
    "ClusterOptions",
    "DynamoValidationError",
    "DynamoWarning",
    "GraphSource",
    "PlatformOptions",
    "Problem",
    "RenderedComponent",
    "RenderedGraph",
    "StackConfig",
    "StackConfigError",
    "__version__",
    "load_graph",
    "load_yaml",
    "render_graph",
    "to_yaml",
]


@cache
def version() -> str:
    """The installed distribution's version, or UNINSTALLED_VERSION when its metadata is absent."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return UNINSTALLED_VERSION


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return version()
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dynamo_infra' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
