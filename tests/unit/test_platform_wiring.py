"""The platform layer under Pulumi mocks: CRD sets (the Dynamo one always) and the DRA DeviceClass
become pulumi-kubernetes resources, a Dynamo CRD another tool installed is left alone; status of a
component whose objects do not all exist yet is not ready."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from dynamo_infra.reconcile.observe import REASON_NOT_CREATED, observed_status
from tests.conftest import REPO
from tests.unit.conftest import Mocks

CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
# The Dynamo runtime's discovery store, installed by every stack.
WORKER_METADATA_CRD = "dynamoworkermetadatas.nvidia.com"
# Every Dynamo CRD the platform installs (file order): the graph's records and the discovery store.
DYNAMO_CRDS = ["dynamographdeployments.nvidia.com", "dynamographdeploymentscalingadapters.nvidia.com",
               "dynamomodels.nvidia.com", WORKER_METADATA_CRD]  # fmt: skip
# All of them as a Helm-installed operator's.
HELM_CRDS = {name: "managed by Helm" for name in DYNAMO_CRDS}


@pulumi.runtime.test
def test_platform_installs_crd_sets_and_device_class(mocks: Mocks) -> Any:
    import pulumi_kubernetes as k8s

    from dynamo_infra.components import Ownership, Platform

    provider = k8s.Provider("p", kubeconfig="kc")
    platform = Platform(
        "platform",
        namespace="ns",
        provider=provider,
        ownership=Ownership("dynamo-infra/local"),
        crds=["keda"],
        crd_dir=REPO / "stacks" / "crds",
        device_class="gpu.example.com",
    )

    def check(_: object) -> None:
        by_type = {(r.typ, r.name): r.inputs for r in mocks.resources}
        crd = by_type[(CRD_TYPE, "platform-scaledobjects.keda.sh")]
        assert crd["spec"]["group"] == "keda.sh"
        dwm = by_type[(CRD_TYPE, f"platform-{WORKER_METADATA_CRD}")]
        assert dwm["metadata"]["annotations"]["pulumi.com/patchFieldManager"] == "dynamo-infra-platform"
        dc = by_type[("kubernetes:resource.k8s.io/v1:DeviceClass", "platform-device-class")]
        assert dc["metadata"]["name"] == "gpu.example.com"
        assert dc["spec"]["selectors"] == [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]
        assert platform.crd_names == [*DYNAMO_CRDS, "scaledobjects.keda.sh"]
        ns = by_type[("kubernetes:core/v1:Namespace", "platform-namespace")]
        assert ns["metadata"]["annotations"] == {"dynamo-infra.io/owner-stack": "dynamo-infra/local"}

    assert platform.device_class is not None and platform.namespace is not None
    created = [platform.namespace, platform.device_class, *platform.crds, *platform.service_accounts]
    return pulumi.Output.all(*[r.urn for r in created]).apply(check)


def test_missing_objects_make_a_component_not_ready() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    status = observed_status({"v1/Service/ns/s": service, "grove.io/v1alpha1/PodClique/ns/c": None})
    assert not status.ready and status.reason == REASON_NOT_CREATED
    assert "grove.io/v1alpha1/PodClique/ns/c does not exist yet" in status.message
    assert observed_status({"v1/Service/ns/s": service}).ready


@pulumi.runtime.test
def test_platform_uses_what_it_does_not_own(mocks: Mocks) -> Any:
    import pulumi_kubernetes as k8s

    from dynamo_infra.components import Ownership, Platform
    from dynamo_infra.render.components.planner import PLANNER_SERVICE_ACCOUNT

    theirs = Ownership("p/b", namespace=False, accounts=frozenset({PLANNER_SERVICE_ACCOUNT}))
    platform = Platform(
        "platform",
        namespace="team",
        provider=k8s.Provider("p", kubeconfig="kc"),
        ownership=theirs,
        crd_dir=REPO / "stacks" / "crds",
    )
    assert platform.namespace is None
    # The Dynamo CRDs come with every stack, listed or not.
    assert platform.crd_names == DYNAMO_CRDS

    def check(_: object) -> None:
        kinds = [r.typ for r in mocks.resources]
        assert "kubernetes:core/v1:Namespace" not in kinds
        accounts = [
            r.inputs["metadata"] for r in mocks.resources if r.typ == "kubernetes:core/v1:ServiceAccount"
        ]
        assert [a["name"] for a in accounts] == [PLANNER_SERVICE_ACCOUNT]
        assert accounts[0]["annotations"] == {"dynamo-infra.io/owner-stack": "p/b"}

    return pulumi.Output.all(*[r.urn for r in platform.service_accounts]).apply(check)


def test_ownership_of_existing_objects() -> None:
    from dynamo_infra.components.platform_plan import owned_by

    def obj(
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
    ) -> dict[str, Any]:
        return {"metadata": {"name": "team", "labels": labels or {}, "annotations": annotations or {}}}

    mine = {"dynamo-infra.io/owner-stack": "p/a"}
    ours = {"app.kubernetes.io/managed-by": "dynamo-infra"}
    assert owned_by(None, "p/a")  # absent: the stack creates it
    assert owned_by(obj(ours, mine), "p/a")
    assert not owned_by(obj(ours, mine), "p/b")  # another stack's
    assert not owned_by(obj({"team": "x"}), "p/a")  # a user's
    assert owned_by(obj(ours), "p/a")  # created by dynamo-infra before owners were recorded


@pulumi.runtime.test
@pytest.mark.parametrize("crds", [(), ("dynamo", "keda")])
def test_the_dynamo_crd_set_is_always_installed_once(mocks: Mocks, crds: tuple[str, ...]) -> Any:
    import pulumi_kubernetes as k8s

    from dynamo_infra.components import Ownership, Platform

    platform = Platform(
        "platform",
        namespace="ns",
        provider=k8s.Provider("p", kubeconfig="kc"),
        ownership=Ownership("p/a"),
        crds=crds,
        crd_dir=REPO / "stacks" / "crds",
    )
    assert platform.crd_names.count(WORKER_METADATA_CRD) == 1

    def check(_: object) -> None:
        names = [r.name for r in mocks.resources if r.typ == CRD_TYPE]
        assert names.count(f"platform-{WORKER_METADATA_CRD}") == 1

    return pulumi.Output.all(*[r.urn for r in platform.crds]).apply(check)


@pulumi.runtime.test
def test_a_dynamo_crd_another_tool_installed_is_used_as_it_is(
    mocks: Mocks, monkeypatch: pytest.MonkeyPatch
) -> Any:
    import pulumi_kubernetes as k8s

    from dynamo_infra.components import Ownership, Platform

    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "info", lambda message, *a, **kw: said.append(message))
    helm = Ownership("p/a", foreign_crds=HELM_CRDS)
    platform = Platform(
        "platform",
        namespace="ns",
        provider=k8s.Provider("p", kubeconfig="kc"),
        ownership=helm,
        crd_dir=REPO / "stacks" / "crds",
    )
    assert platform.crd_names == [] and platform.crds == []
    assert said == [
        f"CRD {name} exists, managed by Helm: used as it is (never applied nor deleted by this stack)"
        for name in DYNAMO_CRDS
    ]

    def check(_: object) -> None:
        assert [r.name for r in mocks.resources if r.typ == CRD_TYPE] == []

    return pulumi.Output.all(*[r.urn for r in platform.service_accounts]).apply(check)


def test_ownership_of_existing_dynamo_crds() -> None:
    from dynamo_infra.components.platform_plan import crd_owner

    def crd(labels: dict[str, str] | None = None, *managers: str) -> dict[str, Any]:
        fields = [{"manager": m, "operation": "Apply"} for m in managers]
        status = {"manager": "kube-apiserver", "operation": "Update", "subresource": "status"}
        return {"metadata": {"name": WORKER_METADATA_CRD, "labels": labels or {},
                             "managedFields": [*fields, status]}}  # fmt: skip

    helm = {"app.kubernetes.io/managed-by": "Helm"}
    assert crd_owner(None) is None  # absent: the platform installs it
    assert crd_owner(crd(None, "dynamo-infra-platform")) is None  # ours: stays managed by us
    assert crd_owner(crd(None, "helm", "dynamo-infra-platform")) is None  # ours, co-applied
    assert crd_owner(crd(helm, "helm")) == "managed by Helm"
    assert crd_owner(crd(helm, "dynamo-infra-platform")) == "managed by Helm"  # Helm took it over
    assert crd_owner(crd(None, "kubectl", "helm")) == "applied by helm, kubectl"
    assert crd_owner({"metadata": {"name": WORKER_METADATA_CRD}}) == "installed by another tool"


def test_installable_strips_the_operators_conversion_webhook(corpus: Path) -> None:
    from dynamo_infra.components.platform_plan import installable

    text = (corpus / "crds" / "dynamo" / "nvidia.com_dynamographdeployments.yaml").read_text()
    (dgd,) = [d for d in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if d]
    assert dgd["spec"]["conversion"]["strategy"] == "Webhook"
    crd = installable(dgd)
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert [v["name"] for v in crd["spec"]["versions"]] == [v["name"] for v in dgd["spec"]["versions"]]
    # Relabelling would truncate a v1beta1 DGD read as v1alpha1: only the hub is served, and stored.
    served = {v["name"]: (v["served"], v["storage"]) for v in crd["spec"]["versions"]}
    assert served == {"v1alpha1": (False, False), "v1beta1": (True, True)}
    assert [(v["served"], v["storage"]) for v in dgd["spec"]["versions"]] == [(True, True), (True, False)]
    # Other groups' webhooks are served by their own controllers: kept.
    other = {**dgd, "spec": {**dgd["spec"], "group": "example.com"}}
    assert installable(other)["spec"]["conversion"] == dgd["spec"]["conversion"]


@pulumi.runtime.test
def test_platform_binds_accounts_to_cluster_roles_and_copies_the_mpi_key(mocks: Mocks) -> Any:
    import pulumi_kubernetes as k8s

    from dynamo_infra.components import Ownership, Platform

    source = {"type": "Opaque", "data": {"private.key": "cHJpdg==", "private.key.pub": "cHVi"}}
    platform = Platform(
        "platform",
        namespace="ns",
        provider=k8s.Provider("p", kubeconfig="kc"),
        ownership=Ownership("dynamo-infra/local"),
        crd_dir=REPO / "stacks" / "crds",
        epp=True,
        mpi_ssh_secret=source,
    )

    def check(_: object) -> None:
        by_type = {(r.typ, r.name): r.inputs for r in mocks.resources}
        role = by_type[
            ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "platform-dynamo-operator-epp")
        ]
        assert role["metadata"]["name"] == "dynamo-operator-epp" and role["rules"]
        binding = by_type[
            ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "platform-epp-serviceaccount")
        ]
        assert binding["metadata"]["name"] == "epp-serviceaccount-binding"
        assert (
            binding["roleRef"]["kind"] == "ClusterRole"
            and binding["roleRef"]["name"] == "dynamo-operator-epp"
        )
        secret = by_type[("kubernetes:core/v1:Secret", "platform-mpi-run-ssh-secret")]
        # The key pair is a Pulumi secret (its value wrapped in the secret signature).
        assert secret["type"] == "Opaque" and secret["data"]["value"] == source["data"]
        assert not any(t == "kubernetes:rbac.authorization.k8s.io/v1:Role" for t, _ in by_type)

    assert platform.mpi_ssh_secret is not None
    created = [
        *platform.cluster_roles,
        *platform.service_accounts,
        *platform.role_bindings,
        platform.mpi_ssh_secret,
    ]
    return pulumi.Output.all(*[r.urn for r in created]).apply(check)
