"""The rendering axes: each table covers its API Literal, and names outside it are errors."""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin

import pydantic
import pytest

from dynamo_infra import config
from dynamo_infra.api import DynamoValidationError, v1beta1
from dynamo_infra.render import grove, status
from dynamo_infra.render.backend import BACKENDS
from dynamo_infra.render.component_type import COMPONENT_DEFAULTS
from dynamo_infra.render.graph import WORKLOADS, render_dcd
from dynamo_infra.render.schedulers import DEFAULT_SCHEDULER, SCHEDULERS
from dynamo_infra.render.worker import Worker


def literal_values(model: type[pydantic.BaseModel], field: str) -> set[str]:
    """Every value the Literal of `model.field` allows (through Optional and unions)."""
    pending: list[Any] = [model.model_fields[field].annotation]
    out: set[str] = set()
    while pending:
        t = pending.pop()
        if get_origin(t) is Literal:
            out.update(get_args(t))
        elif get_origin(t) in (Union, types.UnionType):
            pending.extend(get_args(t))
    return out


def test_component_defaults_cover_the_component_types() -> None:
    assert set(COMPONENT_DEFAULTS) == literal_values(v1beta1.Component, "type")


def test_worker_defaults_are_the_worker_types() -> None:
    workers = {t for t, d in COMPONENT_DEFAULTS.items() if isinstance(d, Worker)}
    assert workers == v1beta1.WORKER_TYPES


def test_backends_cover_the_backend_frameworks() -> None:
    graph = literal_values(v1beta1.DynamoGraphDeploymentSpec, "backend_framework")
    component = literal_values(v1beta1.DynamoComponentDeploymentSpec, "backend_framework")
    assert set(BACKENDS) == graph == component
    assert all(name == backend.name for name, backend in BACKENDS.items())


def test_unknown_backend_is_an_error_naming_the_field() -> None:
    dcd = {
        "apiVersion": v1beta1.API_VERSION,
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": "d", "namespace": "team"},
        "spec": {"name": "w", "type": "worker", "backendFramework": "tensorflow"},
    }
    with pytest.raises(DynamoValidationError) as err:
        render_dcd(dcd)
    (problem,) = err.value.problems
    assert problem.path == "components[w].backendFramework"
    assert "unsupported backend framework: tensorflow" in problem.message


def test_gang_schedulers_cover_the_grove_schedulers() -> None:
    assert {*SCHEDULERS, DEFAULT_SCHEDULER} == literal_values(config.Grove, "scheduler")


def test_workload_kinds_cover_the_component_kinds() -> None:
    (replica_status,) = (
        t
        for t in get_args(v1beta1.DynamoComponentDeploymentStatus.model_fields["component"].annotation)
        if isinstance(t, type) and issubclass(t, pydantic.BaseModel)
    )
    kinds = literal_values(replica_status, "component_kind")
    assert {*WORKLOADS, grove.PODCLIQUE, grove.SCALING_GROUP} == kinds
    assert {kind for _, kind in status.READINESS} == kinds
