"""The providers' shared base: pickled state still loads, typed inputs, diffs, the poll loop, one error root."""

from __future__ import annotations

import base64
import importlib
import inspect
import pkgutil
import subprocess
import sys

import dill
import pytest
from pulumi.dynamic.dynamic import serialize_provider

import dynamo_infra
from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.reconcile import base
from dynamo_infra.reconcile.checkpoint_provider import CheckpointProvider
from dynamo_infra.reconcile.inputs import CheckpointInputs, ClaimInputs, WorkloadInputs
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider
from dynamo_infra.reconcile.pvc_provider import PersistentVolumeClaimProvider

# `__provider` of each resource as stacks hold it (written before the providers shared a base):
# the same text means an existing stack loads its providers and sees no provider change.
STORED = {
    ComponentWorkloadProvider: "gASVRAAAAAAAAACMH2R5bmFtb19pbmZyYS5yZWNvbmNpbGUucHJvdmlkZXKUjBlDb21wb25lbnRXb3JrbG9hZFByb3ZpZGVylJOUKYGULg==",
    PersistentVolumeClaimProvider: "gASVTAAAAAAAAACMI2R5bmFtb19pbmZyYS5yZWNvbmNpbGUucHZjX3Byb3ZpZGVylIwdUGVyc2lzdGVudFZvbHVtZUNsYWltUHJvdmlkZXKUk5QpgZQu",
    CheckpointProvider: "gASVSAAAAAAAAACMKmR5bmFtb19pbmZyYS5yZWNvbmNpbGUuY2hlY2twb2ludF9wcm92aWRlcpSMEkNoZWNrcG9pbnRQcm92aWRlcpSTlCmBlC4=",
}  # fmt: skip


# What Check and Diff must not load: the kube client, the API models, the renderer, the calls modules.
HEAVY = (
    "httpx",
    "yaml",
    "pydantic",
    "dynamo_infra.kube",
    "dynamo_infra.render",
    "dynamo_infra.api.v1beta1",
    "dynamo_infra.reconcile.workload_calls",
    "dynamo_infra.reconcile.pvc_calls",
    "dynamo_infra.reconcile.checkpoint_calls",
    "dynamo_infra.reconcile.snapshot_calls",
    "dynamo_infra.reconcile.records_calls",
)
PROVIDER_MODULES = (
    "provider",
    "records_provider",
    "pvc_provider",
    "checkpoint_provider",
    "admission_provider",
)


def heavy_modules_loaded_by(statements: str) -> str:
    """The HEAVY modules a fresh interpreter loads running `statements` after `pulumi.dynamic`."""
    code = (
        "import sys, pulumi.dynamic; before = set(sys.modules); "
        + statements
        + f"print(sorted(x for x in set(sys.modules) - before if x.startswith({HEAVY!r})))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.mark.parametrize("module", PROVIDER_MODULES)
def test_a_provider_module_and_its_check_and_diff_load_nothing_heavy(module: str) -> None:
    """Every preview starts a provider process that imports the module, then checks and diffs."""
    assert (
        heavy_modules_loaded_by(
            f"import dynamo_infra.reconcile.{module} as m; "
            "p = next(v for v in vars(m).values() if isinstance(v, type) and v.__module__ == m.__name__ "
            "and issubclass(v, pulumi.dynamic.ResourceProvider))(); "
            "olds = {'kubeconfig': 'k', 'namespace': 'n', 'name': 'c', 'phase': 'Ready', 'ready': True}; "
            "p.check(olds, olds); p.diff('id', olds, {**olds, 'namespace': 'm'}); "
        )
        == "[]"
    )


def test_a_workload_keeping_an_unchanged_admission_checks_without_loading_the_models() -> None:
    """A no-op run: the graph's shared workload compares the graph as written, unchanged."""
    assert (
        heavy_modules_loaded_by(
            "from dynamo_infra.reconcile.provider import ComponentWorkloadProvider as P; "
            "graph = {'apiVersion': 'nvidia.com/v1alpha1', 'kind': 'DynamoGraphDeployment', "
            "'metadata': {'name': 'g'}, 'spec': {'services': {'W': {'replicas': 1}}}}; "
            "olds = {'kubeconfig': 'k', 'namespace': 'n', 'objects': {}, "
            "'admission': {'graph': graph, 'features': {}}}; "
            "news = {**olds, 'admission': {'graph': {**graph, 'spec': {'services': {'W': {'replicas': 1.0}}}}, "
            "'features': {}}}; "
            "assert P().check(olds, news).failures == []; "
        )
        == "[]"
    )


@pytest.mark.parametrize("cls", list(STORED), ids=lambda c: c.__name__)
def test_stored_providers_load_and_serialize_the_same(cls: type) -> None:
    assert serialize_provider(cls()) == STORED[cls]
    loaded = dill.loads(base64.b64decode(STORED[cls]))
    assert type(loaded) is cls and loaded.serialize_as_secret_always is False


def test_diffed_inputs_are_every_input_the_reconcile_reads() -> None:
    assert WorkloadInputs.diffed() == (
        "kubeconfig", "kubeconfigFrom", "context", "namespace", "graph", "component", "stack", "objects",
        "replicasExternal", "await", "scale", "observe", "pullSecretDiscovery", "replicasFrom",
    )  # fmt: skip
    assert ClaimInputs.diffed() == (
        "kubeconfig", "kubeconfigFrom", "context", "namespace", "name", "graph", "manifest", "create",
        "deleteOnDestroy",
        "await",
    )  # fmt: skip
    assert CheckpointInputs.diffed() == (
        "kubeconfig", "kubeconfigFrom", "context", "namespace", "checkpoint", "job", "owner", "wait",
        "timeoutSeconds",
    )  # fmt: skip


def test_a_change_of_what_is_observed_or_discovered_is_an_update() -> None:
    p = ComponentWorkloadProvider()
    olds = {"kubeconfig": "k", "namespace": "n", "observe": {}, "pullSecretDiscovery": False}
    assert p.diff("id", olds, {**olds, "pullSecretDiscovery": True}).changes is True
    assert p.diff("id", olds, {**olds, "observe": {"k": {"kind": "PodClique"}}}).changes is True
    assert p.diff("id", olds, {**olds, "status": {}}).changes is False


def test_typed_inputs_round_trip_the_property_dict() -> None:
    props = {
        "kubeconfig": "k",
        "kubeconfigFrom": "",
        "context": "",
        "namespace": "n",
        "name": "c",
        "graph": "g",
        "manifest": None,
        "create": False,
        "deleteOnDestroy": True,
        "await": {"mode": "skip"},
    }
    ins = ClaimInputs.from_props({**props, "phase": "Bound"})
    assert ins.to_props() == props and ins.delete_on_destroy and base.await_skipped(ins.await_)
    assert ClaimInputs.from_props({}).await_ == {} and base.await_timeout({}) == 600.0


def test_diffs_keep_their_replacements() -> None:
    claim = {"kubeconfig": "k", "namespace": "n", "name": "c", "create": False}
    d = PersistentVolumeClaimProvider().diff("id", claim, {**claim, "name": "d", "phase": "x"})
    assert d.changes and d.replaces == ["name"]
    ckpt = {"kubeconfig": "k", "namespace": "n", "owner": "o", "checkpoint": {"metadata": {"name": "a"}}}
    ready = CheckpointProvider().diff("id", {**ckpt, "phase": "Ready", "ready": True}, ckpt)
    pending = CheckpointProvider().diff("id", {**ckpt, "phase": "Creating", "ready": False}, ckpt)
    assert (ready.changes, pending.changes, pending.replaces) == (False, True, [])


def test_await_until_polls_reports_and_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(base.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(base.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    lines: list[str] = []
    monkeypatch.setattr(base, "log", lines.append)
    seen = iter(range(1, 100))
    got = base.await_until(0, lambda: next(seen), lambda n: n >= 3, timeout=60, expired=DynamoInfraError)
    assert got == 3 and clock[0] == 3.0
    with pytest.raises(base.AwaitTimeout, match="last 28"):
        base.await_until(
            0,
            lambda: next(seen),
            lambda n: False,
            timeout=25,
            expired=lambda n: base.AwaitTimeout(f"last {n}"),
            progress=lambda n, t: f"{n} after {t:.0f}s",
        )
    assert lines == ["13 after 10s", "23 after 20s"]


def test_every_package_exception_has_one_root() -> None:
    found = []
    for mod in pkgutil.walk_packages(dynamo_infra.__path__, "dynamo_infra."):
        module = importlib.import_module(mod.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, Exception)
                and not issubclass(cls, Warning)
                and cls.__module__ == module.__name__
            ):
                found.append(cls)
    assert len(found) >= 7
    assert [c.__qualname__ for c in found if not issubclass(c, DynamoInfraError)] == []


@pytest.mark.parametrize("module", PROVIDER_MODULES)
def test_stored_providers_name_their_reconcile_module_only(module: str) -> None:
    """Stacks hold each provider pickled by reference to its class: the state names the provider's
    `dynamo_infra.reconcile` module, nothing of the Pulumi surface (`dynamo_infra.components`)."""
    import pulumi.dynamic

    importlib.import_module("dynamo_infra.components")
    m = importlib.import_module(f"dynamo_infra.reconcile.{module}")
    providers = [
        v
        for v in vars(m).values()
        if isinstance(v, type)
        and v.__module__ == m.__name__
        and issubclass(v, pulumi.dynamic.ResourceProvider)
    ]
    assert providers
    for cls in providers:
        raw = base64.b64decode(serialize_provider(cls()))
        assert raw.count(b"dynamo_infra.") == 1 and m.__name__.encode() in raw, raw
        assert b"components" not in raw, raw
