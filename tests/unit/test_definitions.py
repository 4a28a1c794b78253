"""The platform's CRDs as one dynamic resource: a digest per CRD diffed, the manifests packed and not
diffed; apply in order under the cluster field manager and wait until established; refresh finds a
CRD gone or changed by another writer; never deleted."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from dynamo_infra.api.manifest import PACKED_PREFIX, Manifest, pack, unpack
from dynamo_infra.kube.client import PLATFORM_USER_AGENT
from dynamo_infra.reconcile import definitions_calls
from dynamo_infra.reconcile.definitions_provider import CustomResourceDefinitionsProvider
from dynamo_infra.reconcile.inputs import DefinitionsInputs, definition_digest
from tests.conftest import REPO
from tests.unit.conftest import Mocks
from tests.unit.test_platform_wiring import CRD_TYPE, DYNAMO_CRDS

DYNAMIC_TYPE = "pulumi-python:dynamic:Resource"
MANAGER = "dynamo-infra-platform"


def crd(name: str, version: str = "v1") -> Manifest:
    group = name.split(".", 1)[1]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "dynamo-infra"}},
        "spec": {"group": group, "versions": [{"name": version, "served": True, "storage": True}]},
    }


def props(*manifests: Manifest, **more: Any) -> dict[str, Any]:
    by_name = {m["metadata"]["name"]: m for m in manifests}
    return {
        "kubeconfigFrom": "dynamo-infra:kubeconfigPath",
        "context": "",
        "definitions": {n: definition_digest(m) for n, m in by_name.items()},
        "manifests": pack(by_name),
        "fieldManager": MANAGER,
        **more,
    }


def test_check_needs_a_manifest_per_definition_and_a_kubeconfig() -> None:
    p = CustomResourceDefinitionsProvider()
    good = props(crd("a.example.com"), crd("b.example.com"))
    assert p.check({}, good).failures == []
    missing = {**good, "definitions": {**good["definitions"], "c.example.com": "x"}}
    assert [(f.property, f.reason) for f in p.check({}, missing).failures] == [
        ("manifests", "no manifest for c.example.com")
    ]
    assert [f.property for f in p.check({}, {**good, "kubeconfigFrom": ""}).failures] == ["kubeconfig"]


def test_diff_follows_the_digests_not_the_packed_text() -> None:
    p = CustomResourceDefinitionsProvider()
    old = props(crd("a.example.com"))
    assert not p.diff("id", p.outputs(old), old).changes
    # The packed manifests are not compared: the digests stand for them.
    assert not p.diff("id", p.outputs(old), {**old, "manifests": pack({})}).changes
    assert p.diff("id", p.outputs(old), props(crd("a.example.com", "v2"))).changes
    assert p.diff("id", p.outputs(old), props(crd("a.example.com"), crd("b.example.com"))).changes


class FakeClient:
    """Applies (and dry-runs) into a dict of live CRDs; new ones are established after one wait."""

    def __init__(self, live: dict[str, Manifest] | None = None) -> None:
        self.live = live or {}
        self.calls: list[tuple[str, str, str]] = []

    def __enter__(self) -> FakeClient:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def apply(self, obj: Manifest, *, manager: str, dry_run: bool = False) -> Manifest:
        name = obj["metadata"]["name"]
        self.calls.append(("dry-run" if dry_run else "apply", name, manager))
        after = copy.deepcopy(self.live.get(name) or {"status": {"conditions": []}})
        after["metadata"] = {**after.get("metadata", {}), **copy.deepcopy(obj["metadata"])}
        after["spec"] = copy.deepcopy(obj["spec"])
        if not dry_run:
            self.live[name] = after
        return after

    def get(self, obj: Manifest) -> Manifest | None:
        return self.live.get(obj["metadata"]["name"])

    def wait_for(
        self, obj: Manifest, until: Callable[[Manifest | None], bool], timeout: float
    ) -> tuple[bool, Manifest | None]:
        name = obj["metadata"]["name"]
        self.calls.append(("wait", name, ""))
        self.live[name]["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
        return until(self.live[name]), self.live[name]


@pytest.fixture()
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    client = FakeClient()

    def client_for(_ins: DefinitionsInputs, user_agent: str = "") -> FakeClient:
        assert user_agent == PLATFORM_USER_AGENT  # the platform's writes are told apart in audit logs
        return client

    monkeypatch.setattr(DefinitionsInputs, "client", client_for)
    return client


def test_create_applies_each_under_the_field_manager_then_waits(fake: FakeClient) -> None:
    p = CustomResourceDefinitionsProvider()
    given = props(crd("b.example.com"), crd("a.example.com"))
    result = p.create(given)
    assert fake.calls == [
        ("apply", "b.example.com", MANAGER),
        ("apply", "a.example.com", MANAGER),
        ("wait", "b.example.com", ""),
        ("wait", "a.example.com", ""),
    ]
    assert result.outs["definitions"] == given["definitions"]
    assert str(result.outs["manifests"]).startswith(PACKED_PREFIX)
    assert set(unpack(result.outs["manifests"])) == {"a.example.com", "b.example.com"}


def test_an_established_crd_is_not_waited_for(fake: FakeClient) -> None:
    established = {
        **crd("a.example.com"),
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }
    fake.live["a.example.com"] = established
    CustomResourceDefinitionsProvider().update("id", props(), props(crd("a.example.com", "v2")))
    assert fake.calls == [("apply", "a.example.com", MANAGER)]
    assert fake.live["a.example.com"]["spec"]["versions"][0]["name"] == "v2"


def test_a_crd_that_is_never_established_times_out(fake: FakeClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fake, "wait_for", lambda obj, until, timeout: (False, fake.live["a.example.com"]))
    with pytest.raises(definitions_calls.AwaitTimeout, match=r"a\.example\.com not established"):
        CustomResourceDefinitionsProvider().create(props(crd("a.example.com")))


def test_delete_keeps_every_crd(fake: FakeClient) -> None:
    CustomResourceDefinitionsProvider().delete("id", props(crd("a.example.com")))
    assert fake.calls == []


def test_refresh_finds_a_crd_gone_or_changed_and_the_next_diff_applies_it(fake: FakeClient) -> None:
    p = CustomResourceDefinitionsProvider()
    given = props(crd("a.example.com"), crd("b.example.com"), crd("c.example.com"))
    outs = p.create(given).outs
    assert p.read("id", outs).outs["definitions"] == given["definitions"]
    del fake.live["a.example.com"]
    fake.live["b.example.com"]["spec"]["versions"][0]["served"] = False  # another writer's change
    read = p.read("id", outs)
    assert read.outs["definitions"] == {
        "b.example.com": definitions_calls.DRIFTED,
        "c.example.com": given["definitions"]["c.example.com"],
    }
    assert read.inputs is not None and read.inputs["definitions"] == read.outs["definitions"]
    assert unpack(read.inputs["manifests"]) == unpack(given["manifests"])
    assert p.diff("id", read.outs, given).changes


@pulumi.runtime.test
def test_a_platform_given_a_kubeconfig_holds_its_crds_as_one_retained_resource(mocks: Mocks) -> Any:
    import pulumi_kubernetes as k8s

    from dynamo_infra.components import Ownership, Platform
    from dynamo_infra.components.args import StackKubeconfig

    platform = Platform(
        "platform",
        namespace="ns",
        provider=k8s.Provider("p", kubeconfig="kc"),
        ownership=Ownership("dynamo-infra/local"),
        crds=["keda"],
        crd_dir=REPO / "stacks" / "crds",
        kubeconfig=StackKubeconfig("dynamo-infra:kubeconfigPath"),
        context="admin",
    )
    assert platform.crd_names == [*DYNAMO_CRDS, "scaledobjects.keda.sh"] and len(platform.crds) == 1

    def check(_: object) -> None:
        assert not [r for r in mocks.resources if r.typ == CRD_TYPE]
        (res,) = [r for r in mocks.resources if r.typ == DYNAMIC_TYPE and r.name == "platform-crds"]
        ins = res.inputs
        assert sorted(ins["definitions"]) == sorted(platform.crd_names)
        manifests = unpack(ins["manifests"])
        assert {n: definition_digest(m) for n, m in manifests.items()} == ins["definitions"]
        assert manifests["scaledobjects.keda.sh"]["spec"]["group"] == "keda.sh"
        assert ins["fieldManager"] == MANAGER and ins["context"] == "admin"
        assert ins["kubeconfigFrom"] == "dynamo-infra:kubeconfigPath" and "kubeconfig" not in ins

    return pulumi.Output.all(*[r.urn for r in platform.crds]).apply(check)
