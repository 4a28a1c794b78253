"""The rendering axes: each table covers its API Literal, and names outside it are errors."""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin

import pydantic
import pytest

from dynamo_infra import config
from dynamo_infra.api import DynamoValidationError, v1alpha1, v1beta1
from dynamo_infra.render import render_graph
from dynamo_infra.render.backends.table import BACKENDS
from dynamo_infra.render.components.table import COMPONENT_DEFAULTS
from dynamo_infra.render.components.worker import Worker
from dynamo_infra.render.runtime import status
from dynamo_infra.render.workloads import grove
from dynamo_infra.render.workloads.schedulers import DEFAULT_SCHEDULER, SCHEDULERS
from dynamo_infra.render.workloads.table import WORKLOADS
from tests.dcd import render_dcd


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


# A v1alpha1 graph with a component of a type v1beta1 does not have.
DEFAULT_TYPE_GRAPH = {
    "apiVersion": "nvidia.com/v1alpha1",
    "kind": "DynamoGraphDeployment",
    "metadata": {"name": "g"},
    "spec": {
        "services": {
            "Router": {
                "componentType": "default",
                "extraPodSpec": {"mainContainer": {"image": "r:1", "command": ["python3", "-m", "r"]}},
            }
        }
    },
}


def test_a_type_outside_v1beta1_is_refused_on_the_component_path() -> None:
    """The operator's v1beta1 DCD of type `default` is refused by the API server (the CRD's enum)."""
    dgd = v1alpha1.DynamoGraphDeployment.parse(DEFAULT_TYPE_GRAPH)
    with pytest.raises(DynamoValidationError) as err:
        render_graph(dgd, config.ClusterOptions(), "ns")
    (problem,) = err.value.problems
    assert problem.path == "spec.components[Router].type"
    assert problem.message.startswith(
        'DynamoComponentDeployment.nvidia.com "g-router" is invalid: spec.type: Unsupported value: "default"'
    )


def test_a_type_outside_v1beta1_is_carried_as_written_on_grove() -> None:
    """Grove has no DCD: `default` names the pods' type label, DYN_COMPONENT and the Service selector."""
    dgd = v1alpha1.DynamoGraphDeployment.parse(DEFAULT_TYPE_GRAPH)
    r = render_graph(dgd, config.ClusterOptions.parse({"multinode": {"orchestrator": "grove"}}), "ns")
    (pcs,) = r.workloads
    (clique,) = pcs["spec"]["template"]["cliques"]
    assert clique["labels"]["nvidia.com/dynamo-component-type"] == "default"
    env = {e["name"]: e.get("value") for e in clique["spec"]["podSpec"]["containers"][0]["env"]}
    assert env["DYN_COMPONENT"] == "default"
    (service,) = r.components["Router"].objects
    assert service["spec"]["selector"]["nvidia.com/dynamo-component-type"] == "default"
