"""A graph's dynamic resources keep the stack configuration key of their kubeconfig, not the credential:
the engine gives every dynamic provider the stack's configuration (`Provider.configure`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pulumi
import pytest
from pulumi.dynamic import ConfigureRequest
from pulumi.dynamic.config import Config

from dynamo_infra.components.args import StackKubeconfig, kubeconfig_props
from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.kube import kubeconfig
from dynamo_infra.kube.errors import KubeconfigError
from dynamo_infra.reconcile import base
from dynamo_infra.reconcile.inputs import WorkloadInputs
from dynamo_infra.reconcile.provider import ComponentWorkloadProvider

pytestmark = pytest.mark.unit

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: 'https://127.0.0.1:6443', certificate-authority: pki/ca.crt}
users:
- name: admin
  user: {token: t}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
"""


@pytest.fixture
def configured() -> Iterator[ComponentWorkloadProvider]:
    """A provider given a stack configuration, as the engine's Configure gives it; forgotten after."""
    provider = ComponentWorkloadProvider()
    yield provider
    base._stack_config = None


def configure(provider: base.Provider[WorkloadInputs], values: dict[str, str]) -> None:
    provider.configure(ConfigureRequest(Config(values, "dynamo-infra")))


def test_a_stack_kubeconfig_is_a_key_in_the_properties_and_content_stays_a_secret() -> None:
    assert kubeconfig_props(StackKubeconfig("dynamo-infra:kubeconfigPath")) == {
        "kubeconfigFrom": "dynamo-infra:kubeconfigPath"
    }
    inline = kubeconfig_props("apiVersion: v1")
    assert list(inline) == ["kubeconfig"] and isinstance(inline["kubeconfig"], pulumi.Output)


def test_the_credential_is_read_from_the_configured_stack_value(
    tmp_path: Path, configured: ComponentWorkloadProvider
) -> None:
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    configure(
        configured,
        {"dynamo-infra:kubeconfigPath": str(tmp_path / "kubeconfig"), "dynamo-infra:kubeconfig": "x"},
    )
    by_path = WorkloadInputs(kubeconfig_from="dynamo-infra:kubeconfigPath").credential()
    # The file's content, its relative paths made absolute against its folder (as the program reads it).
    assert f"certificate-authority: {tmp_path / 'pki/ca.crt'}" in by_path
    assert by_path == kubeconfig.with_absolute_paths(KUBECONFIG, tmp_path)
    assert WorkloadInputs(kubeconfig_from="dynamo-infra:kubeconfig").credential() == "x"
    # Inline content is used as it is, whatever the configuration says.
    assert WorkloadInputs(kubeconfig="inline").credential() == "inline"


def test_a_key_missing_from_the_configuration_names_itself(configured: ComponentWorkloadProvider) -> None:
    configure(configured, {"dynamo-infra:graphs": "[]"})
    with pytest.raises(
        DynamoInfraError, match="dynamo-infra:graphKubeconfigPath: not in the stack's configuration"
    ):
        WorkloadInputs(kubeconfig_from="dynamo-infra:graphKubeconfigPath").credential()
    base._stack_config = None
    with pytest.raises(DynamoInfraError, match="dynamo-infra:kubeconfig: not in"):
        WorkloadInputs(kubeconfig_from="dynamo-infra:kubeconfig").credential()


def test_a_path_value_naming_no_file_fails_with_its_key(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match=r"dynamo-infra:kubeconfigPath: .* does not exist"):
        kubeconfig.from_stack_value("dynamo-infra:kubeconfigPath", str(tmp_path / "none"))


def test_moving_the_credential_to_the_configuration_is_no_change() -> None:
    p = ComponentWorkloadProvider()
    stored = {"kubeconfig": "k", "namespace": "n", "graph": "g", "objects": {"a": {"kind": "Service"}}}
    moved = {
        "kubeconfigFrom": "dynamo-infra:kubeconfigPath",
        "namespace": "n",
        "graph": "g",
        "objects": stored["objects"],
    }
    # An existing stack's resources (credential inline) preview `same` after the upgrade, and back.
    assert p.diff("id", stored, moved).changes is False
    assert p.diff("id", moved, stored).changes is False
    # Anything else still changes; so do another key, or another inline credential.
    assert p.diff("id", stored, {**moved, "namespace": "m"}).changes is True
    other_key = {**moved, "kubeconfigFrom": "dynamo-infra:graphKubeconfigPath"}
    assert p.changes(moved, other_key) == ["kubeconfigFrom"]
    assert p.changes(stored, {**stored, "kubeconfig": "k2"}) == ["kubeconfig"]


def test_check_takes_a_key_in_place_of_a_kubeconfig() -> None:
    p = ComponentWorkloadProvider()
    news = {"namespace": "n", "graph": "g", "objects": {}, "observe": {}}
    assert p.check({}, {**news, "kubeconfigFrom": "dynamo-infra:kubeconfigPath"}).failures == []
    assert [f.property for f in p.check({}, news).failures] == ["kubeconfig"]
