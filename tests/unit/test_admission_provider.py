"""A graph's admission, by its own resource or kept by its shared objects' workload: an update the
operator's webhook would deny fails `check` (so the preview or `up` stops before anything is written);
the first creation and unchanged graphs pass."""

from __future__ import annotations

from typing import Any

import pytest

from dynamo_infra.api.admission import OperatorFeatures
from dynamo_infra.api.manifest import unpack
from dynamo_infra.reconcile.admission_provider import GraphAdmissionProvider, features_props
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider
from tests.unit.test_admission import documents


def as_pulumi_numbers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: as_pulumi_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_pulumi_numbers(v) for v in value]
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def props(name: str, version: str = "new", **features: bool) -> dict[str, Any]:
    doc = documents(f"update-{version}.yaml")[name]
    return {
        "graph": doc.to_manifest(),
        "features": features_props(OperatorFeatures(**features)),
        "namespace": "ns",
    }


def test_a_new_graph_and_an_unchanged_one_pass() -> None:
    provider = GraphAdmissionProvider()
    new = props("u-components")
    assert provider.check({}, new).failures == []
    assert provider.check(new, new).failures == []
    # Never a change of its own (the graph's object resources show what changes).
    assert not provider.diff("id", props("u-components", "old"), new).changes


def test_an_update_the_webhook_denies_fails_the_check() -> None:
    result = GraphAdmissionProvider().check(props("u-components", "old"), props("u-components"))
    assert [(f.property, f.reason) for f in result.failures] == [
        (
            "",
            "spec.components: Forbidden: component topology is immutable and cannot be modified after "
            "creation: components added: [w2 w3], components removed: [w]",
        )
    ]


def test_update_warnings_are_logged(capsys: pytest.CaptureFixture[str]) -> None:
    result = GraphAdmissionProvider().check(props("u-backend", "old"), props("u-backend"))
    assert [f.reason for f in result.failures] == [
        'spec.backendFramework: Invalid value: "sglang": is immutable and cannot be changed after creation'
    ]
    assert (
        "admission: Changing spec.backendFramework may cause unexpected behavior" in capsys.readouterr().err
    )


def test_the_gates_of_the_new_inputs_apply() -> None:
    """Off Grove the changed graph is itself denied (inter-pod GMS needs Grove); on Grove the toggle is."""
    old, new = props("u-gms", "old"), props("u-gms")
    (off_grove,) = GraphAdmissionProvider().check(old, new).failures
    assert "requires the Grove pathway" in off_grove.reason
    (on_grove,) = (
        GraphAdmissionProvider().check(props("u-gms", "old", grove=True), props("u-gms", grove=True)).failures
    )
    assert "the inter-pod GMS layout cannot be toggled after creation" in on_grove.reason


def test_pulumi_numbers_are_read_as_the_integers_they_were() -> None:
    """Pulumi hands numbers over as floats (replicas: 1.0); the strict models want integers."""
    old, new = props("u-adapter", "old"), props("u-adapter")
    (failure,) = GraphAdmissionProvider().check(as_pulumi_numbers(old), as_pulumi_numbers(new)).failures
    assert "cannot be modified directly when scaling adapter is enabled" in failure.reason


def test_create_keeps_the_graph_and_names_it() -> None:
    created = GraphAdmissionProvider().create(props("u-components"))
    assert (
        created.id == "ns/u-components"
        and unpack(created.outs["graph"])["metadata"]["name"] == "u-components"
    )


def workload(admission: dict[str, Any] | None, **more: Any) -> dict[str, Any]:
    """A graph's shared workload's inputs, keeping the graph's admission when given."""
    props: dict[str, Any] = {
        "kubeconfig": "kc",
        "namespace": "ns",
        "graph": "g",
        "component": "",
        "objects": {
            "v1/ServiceAccount/ns/g-sa": {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "g-sa"},
            }
        },
        **more,
    }
    if admission is not None:
        props["admission"] = {"graph": admission["graph"], "features": admission["features"]}
    return props


def test_a_workload_keeping_the_admission_fails_the_check_of_a_denied_update() -> None:
    provider = ComponentWorkloadProvider()
    old, new = workload(props("u-components", "old")), workload(props("u-components"))
    (failure,) = provider.check(old, new).failures
    assert "component topology is immutable" in failure.reason
    assert provider.check(new, new).failures == []
    # Pulumi's floats read as integers, as in the graph's own admission resource.
    adapter_old, adapter_new = workload(props("u-adapter", "old")), workload(props("u-adapter"))
    (adapter,) = provider.check(as_pulumi_numbers(adapter_old), as_pulumi_numbers(adapter_new)).failures
    assert "scaling adapter is enabled" in adapter.reason


def test_a_workload_reviews_nothing_without_an_admission_on_both_sides() -> None:
    """A creation, a stack made before the workload kept the admission, a graph not admitted."""
    provider = ComponentWorkloadProvider()
    denied = workload(props("u-components"))
    assert provider.check({}, denied).failures == []
    assert provider.check(workload(None), denied).failures == []
    assert provider.check(workload(props("u-components", "old")), workload(None)).failures == []


def test_the_admission_of_a_workload_is_no_change_and_survives_a_refresh() -> None:
    provider = ComponentWorkloadProvider()
    old, new = workload(props("u-components", "old")), workload(props("u-components"))
    assert not provider.diff("id", provider.outputs(old), new).changes
    outs = provider.outputs(new)
    assert isinstance(outs["admission"], str) and unpack(outs["admission"]) == new["admission"]
    assert "admission" not in provider.outputs(workload(None))
    refreshed = provider.read_result("id", outs)
    assert refreshed.inputs is not None and refreshed.inputs["admission"] == new["admission"]
    assert provider.check(refreshed.inputs, new).failures == []
    (failure,) = provider.check(provider.read_result("id", provider.outputs(old)).inputs or {}, new).failures
    assert "component topology is immutable" in failure.reason
