"""Decision 3: objects that exist and belong to someone else are refused, naming the owner, before any write."""

from __future__ import annotations

from typing import Any

import pytest

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import object_key
from dynamo_infra.reconcile import base
from dynamo_infra.reconcile.ownership import INVENTORY_ANNOTATION, ForeignObject, foreign_owner
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider

SVC = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "w", "namespace": "n"}}
OURS = "n/g/c"


def live(**meta: Any) -> Manifest:
    return {**SVC, "metadata": {**SVC["metadata"], **meta}}


def test_foreign_owner_names_who_owns_an_object() -> None:
    dgd = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment", "name": "g", "uid": "u"}
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u", "controller": True}
    assert foreign_owner(None, OURS) is None
    assert foreign_owner(live(annotations={INVENTORY_ANNOTATION: OURS}), OURS) is None
    assert foreign_owner(live(ownerReferences=[dgd]), OURS) == "the Dynamo operator (DynamoGraphDeployment g)"
    assert foreign_owner(live(ownerReferences=[rs]), OURS) == "ReplicaSet r (its controller)"
    other = live(annotations={INVENTORY_ANNOTATION: "n/h/c"})
    assert foreign_owner(other, OURS) == "dynamo-infra resource n/h/c"
    by_hand = live(
        managedFields=[{"manager": "kubectl-client-side-apply"}, {"manager": "x", "subresource": "status"}]
    )
    assert foreign_owner(by_hand, OURS) == "field manager kubectl-client-side-apply"
    assert foreign_owner(live(managedFields=[{"manager": "dynamo-infra"}]), OURS) is None


class FakeClient:
    """Serves metadata of existing objects; records every write."""

    def __init__(self, existing: dict[str, Manifest]) -> None:
        self.existing = existing
        self.writes: list[str] = []

    def __enter__(self) -> FakeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def get_metadata(self, obj: Manifest) -> Manifest | None:
        return self.existing.get(object_key(obj))

    def apply(self, obj: Manifest, **_: Any) -> Manifest:
        self.writes.append(object_key(obj))
        return obj

    def get(self, obj: Manifest) -> Manifest | None:
        return None

    def serves(self, api_version: str, kind: str) -> bool:
        return False


def props(objects: list[Manifest]) -> dict[str, Any]:
    return {
        "kubeconfig": "k",
        "namespace": "n",
        "graph": "g",
        "component": "c",
        "objects": {object_key(o): o for o in objects},
        "await": {"mode": "skip"},
    }


def test_create_refuses_an_object_of_the_dynamo_operator_before_writing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "n"}}
    dgd = {"kind": "DynamoGraphDeployment", "name": "g", "controller": True}
    fake = FakeClient({object_key(SVC): live(ownerReferences=[dgd])})
    monkeypatch.setattr(base.Inputs, "client", lambda self: fake)
    with pytest.raises(
        ForeignObject, match=r"v1/Service/n/w belongs to the Dynamo operator \(DynamoGraphDeployment g\)"
    ):
        ComponentWorkloadProvider().create(props([SVC, dep]))
    assert fake.writes == []


def test_update_does_not_recheck_objects_already_in_the_inventory(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeClient({})
    monkeypatch.setattr(base.Inputs, "client", lambda self: fake)
    monkeypatch.setattr(fake, "get_metadata", lambda o: pytest.fail("no ownership read for known objects"))
    p = ComponentWorkloadProvider()
    news = props([SVC])
    olds = {**news, "inventory": [object_key(SVC)]}
    assert p.update("id", olds, news).outs["inventory"] == [object_key(SVC)]
    assert fake.writes == [object_key(SVC)]
