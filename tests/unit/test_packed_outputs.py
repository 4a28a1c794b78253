"""Outputs keep large inputs packed (`reconcile.base.pack`): read back the same, diffed the same,
and outputs written unpacked before (existing stacks) still read and diff as they did."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest

from dynamo_infra.api.manifest import PACKED_PREFIX, pack, unpack
from dynamo_infra.reconcile.admission_provider import GraphAdmissionProvider
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider
from dynamo_infra.reconcile.records_provider import GraphRecordsProvider

KEY = "apps/v1/Deployment/n/w"
DEP: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "w", "namespace": "n", "labels": {"app": "w"}},
    "spec": {"replicas": 1.0, "template": {"spec": {"containers": [{"name": "main", "image": "i:1"}] * 4}}},
}


def props(**over: Any) -> dict[str, Any]:
    base = {"kubeconfigFrom": "p:k", "namespace": "n", "graph": "g", "component": "c", "objects": {KEY: DEP}}
    return {**base, **over}


def test_pack_round_trips_is_stable_and_smaller() -> None:
    packed = pack({KEY: DEP})
    assert packed.startswith(PACKED_PREFIX) and unpack(packed) == {KEY: DEP}
    assert pack({KEY: DEP}) == packed, "the same value packs to the same string"
    assert len(packed) < len(json.dumps({KEY: DEP}))
    assert unpack({"a": 1}) == {"a": 1} and unpack("plain") == "plain" and unpack(None) is None


def test_workload_outputs_pack_objects_and_read_back_as_inputs() -> None:
    p = ComponentWorkloadProvider()
    outs = p.outputs({**props(), "inventory": [KEY], "status": {"ready": True}})
    assert isinstance(outs["objects"], str) and outs["objects"].startswith(PACKED_PREFIX)
    assert outs["inventory"] == [KEY] and outs["status"] == {"ready": True}, "only `packed` properties"
    assert p.typed(outs).objects == {KEY: DEP}
    assert p.outputs(outs) == outs, "packing packed outputs changes nothing"


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "written-unpacked"])
def test_diff_of_stored_outputs_against_new_inputs(packed: bool) -> None:
    p = ComponentWorkloadProvider()
    olds = {**props(), "inventory": [KEY]}
    olds = p.outputs(olds) if packed else olds
    assert p.diff("id", olds, props()).changes is False
    scaled = {KEY: {**DEP, "spec": {**DEP["spec"], "replicas": 2.0}}}
    assert p.diff("id", olds, props(objects=scaled)).changes is True


def test_update_prunes_against_the_unpacked_objects_and_returns_packed_outputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}

    def reconcile(
        ins: Any, news: dict[str, Any], previous: list[str], known: dict[str, Any], taken: Any
    ) -> Any:
        seen.update(previous=previous, known=known, objects=ins.objects)
        return {**news, "inventory": list(ins.objects)}

    monkeypatch.setattr(
        ComponentWorkloadProvider, "calls", lambda self, ins: types.SimpleNamespace(reconcile=reconcile)
    )
    p = ComponentWorkloadProvider()
    olds = p.outputs({**props(), "inventory": [KEY]})
    other = {"v1/Service/n/w": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "w"}}}
    result = p.update("id", olds, props(objects=other))
    assert seen == {"previous": [KEY], "known": {KEY: DEP}, "objects": other}
    assert result.outs is not None
    assert unpack(result.outs["objects"]) == other and isinstance(result.outs["objects"], str)


def test_read_result_keeps_inputs_readable_and_outputs_packed() -> None:
    p = ComponentWorkloadProvider()
    read = p.read_result("id", {**props(), "inventory": [KEY]})
    assert read.inputs is not None and read.outs is not None
    assert read.inputs["objects"] == {KEY: DEP}, "refresh's implied inputs: what `preview --diff` compares"
    assert unpack(read.outs["objects"]) == {KEY: DEP} and isinstance(read.outs["objects"], str)


def test_records_and_admission_pack_their_graph_copies() -> None:
    assert set(GraphRecordsProvider.packed) == {"dgd", "components"}
    graph = {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment", "metadata": {"name": "g"}}
    created = GraphAdmissionProvider().create({"namespace": "n", "graph": graph, "features": {}})
    assert created.outs is not None
    assert created.id == "n/g" and unpack(created.outs["graph"]) == graph
    assert isinstance(created.outs["graph"], str)
    assert GraphAdmissionProvider().typed(created.outs).graph == graph


def test_a_secret_anywhere_in_a_workloads_objects_makes_them_secret_as_a_whole(mocks: Any) -> None:
    """Outputs keep `objects` packed in one string: a secret nested in a manifest must make the whole
    input secret, or the engine could not mark it in the packed output."""
    import asyncio

    import pulumi

    from dynamo_infra.components.workload import objects_input

    env = [{"name": "TOKEN", "value": pulumi.Output.secret("s3cr3t")}]
    with_secret = {**DEP, "spec": {"template": {"spec": {"containers": [{"name": "m", "env": env}]}}}}
    loop = asyncio.get_event_loop()
    secret, plain = objects_input([with_secret]), objects_input([DEP])
    assert loop.run_until_complete(secret.is_secret()) is True
    assert loop.run_until_complete(plain.is_secret()) is False
    assert loop.run_until_complete(plain.future()) == {KEY: DEP}
