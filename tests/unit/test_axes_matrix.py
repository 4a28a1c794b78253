"""One case per entry of each axis table: every component type, every backend on every multinode
orchestrator. What is asserted comes from the table entry itself, so a new type or engine is covered
by adding its entry (tests/unit/test_axes.py checks the tables cover the API's Literals)."""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from dynamo_infra.render.backends.table import BACKENDS
from dynamo_infra.render.components.table import COMPONENT_DEFAULTS, defaults_for
from tests.unit.test_render_defaults import EPP_CONFIG
from tests.unit.test_render_multinode import GROVE, LWS, clique, graph, lws_main, render, worker

# The label every pod of a component carries with its type.
TYPE_LABEL = "nvidia.com/dynamo-component-type"
ORCHESTRATORS = {"lws": LWS, "grove": GROVE}


def typed(component_type: str | None) -> dict[str, Any]:
    """A one-container component of `component_type` (None: no type)."""
    main = {"name": "main", "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"}
    c: dict[str, Any] = {"name": "c", "podTemplate": {"spec": {"containers": [main]}}}
    if component_type is not None:
        c["type"] = component_type
    if component_type == "epp":
        c["eppConfig"] = EPP_CONFIG
    return c


def kinds(objects: list[dict[str, Any]]) -> list[str]:
    return sorted(o["kind"] for o in objects)


@pytest.mark.parametrize("component_type", [*COMPONENT_DEFAULTS, None], ids=str)
def test_each_component_type_labels_its_pods_and_keeps_its_service(component_type: str | None) -> None:
    rendered = render(graph(typed(component_type)))
    (deployment,) = [o for o in rendered.components["c"].objects if o["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["metadata"]["labels"].get(TYPE_LABEL) == component_type
    # With Kubernetes discovery every component has a Service (its EndpointSlices are the discovery
    # readiness source); with etcd only the types that want one anyway keep it.
    assert "Service" in kinds(rendered.components["c"].objects)
    etcd = render(graph(typed(component_type)), discovery={"backend": "etcd"})
    has_service = "Service" in kinds(etcd.components["c"].objects)
    assert has_service == defaults_for(component_type).service_without_discovery


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_each_backend_is_detected_from_its_worker_command(backend: str) -> None:
    rendered = render(graph(worker(nodes=1, command=["python3", "-m", f"dynamo.{backend}"])))
    assert rendered.backend_framework == backend


@pytest.mark.parametrize("orchestrator", sorted(ORCHESTRATORS))
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_each_backend_launches_multinode_on_each_orchestrator(backend: str, orchestrator: str) -> None:
    dgd = graph(worker(command=["python3", "-m", f"dynamo.{backend}"]))
    rendered = render(dgd, **ORCHESTRATORS[orchestrator])
    if orchestrator == "lws":
        for role in ("leader", "worker"):
            (main,) = [c for c in lws_main(rendered, role)["containers"] if c["name"] == "main"]
            line = shlex.join([*main.get("command", []), *main.get("args", [])])
            assert f"dynamo.{backend}" in line or (role == "worker" and "sshd" in line), (role, line)
    else:
        leader, workers = clique(rendered, "w-ldr"), clique(rendered, "w-wkr")
        starts_after = leader["spec"].get("startsAfter")
        assert starts_after == (["w-wkr"] if BACKENDS[backend].leader_starts_after_workers else None)
        assert workers["spec"].get("startsAfter") is None
