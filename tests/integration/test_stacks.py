"""Each example stack (`stacks/Pulumi.{grove,lws,dra,istio}.yaml`, as shipped) through the real Pulumi
CLI onto the local control plane, with the Dynamo and third-party CRDs installed by its platform layer:

- `pulumi up` is accepted by the API server for every object (each rendered object, CRD, DeviceClass
  and platform object is read back);
- the `lws` stack awaits its graphs for real: the LWS controller of the local cluster runs the
  LeaderWorkerSets (StatefulSets, kwok pods) and reports them Available, so `up` ends `successful`;
- the `dra` stack's GPU claims are allocated by the scheduler from the DRA devices the local cluster
  publishes for its fake nodes, so its Deployments become available;
- where Grove graphs run (`grove`, `dra`), the test plays the missing Grove controller: it creates
  ready PodCliques / PodCliqueScalingGroups, and a refresh then a second `up` turn the graphs
  `successful` (the readiness rules of render/runtime/status.py at work);
- a preview and a second `up` change nothing;
- `destroy` leaves nothing behind in the namespace and deletes the DeviceClass; the CRDs stay
  installed (retained on purpose: deleting a CRD deletes every object of its kind in the cluster).

The stacks run one after the other on the session's cluster, so later stacks find the CRDs earlier
ones kept (grove, then dra) and adopt them under the shared field manager.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi import automation as auto

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components import load_graph
from dynamo_infra.components.crd_files import crd_documents
from dynamo_infra.components.platform_plan import CLUSTER_FIELD_MANAGER, DEFAULT_CRD_DIR
from dynamo_infra.config import ClusterOptions
from dynamo_infra.kube.client import KubeClient, object_key
from dynamo_infra.platform_options import DYNAMO_CRD_SET, PlatformOptions
from dynamo_infra.render import render_graph
from dynamo_infra.render.components.epp import SERVICE_ACCOUNT as EPP_SERVICE_ACCOUNT
from dynamo_infra.render.components.planner import PLANNER_SERVICE_ACCOUNT
from dynamo_infra.render.runtime.status import deployment_readiness
from tests.conftest import REPO
from tests.integration.harness import copy_project, play_grove
from tests.wait import wait_until
from tools.localcluster import LocalCluster

# The example stacks, in the order they run.
STACKS = ("grove", "lws", "dra", "istio")
# The passphrase the shipped stack files' encryption salts were made with.
STACK_PASSPHRASE = "dynamo-infra-local"
# Stacks with Grove graphs, whose missing Grove controller the test plays.
PLAYED = {"grove", "dra"}
# How long the Deployments of a stack that skips awaiting may take to become available (kwok pods).
DEPLOYMENTS_READY_S = 60
# DRA driver the local cluster publishes its fake GPUs for (the DeviceClass selects it).
GPU_DRA_DRIVER = "gpu.nvidia.com"
# Kinds of the platform layer in the namespace.
PLATFORM_KINDS = (("v1", "ServiceAccount"), ("rbac.authorization.k8s.io/v1", "RoleBinding"))


class StackRun:
    """One shipped stack file in a project copy, pointed at the session's cluster."""

    def __init__(self, name: str, project: Path, cluster: LocalCluster) -> None:
        self.name = name
        config = yaml.safe_load((REPO / "stacks" / f"Pulumi.{name}.yaml").read_text())["config"]
        self.options = ClusterOptions.from_config(config.get("dynamo-infra:cluster") or {})
        self.platform = PlatformOptions.from_config(config.get("dynamo-infra:platform"), self.options)
        self.graphs = [
            render_graph(load_graph(REPO / g), self.options, self.options.namespace)
            for g in config["dynamo-infra:graphs"]
        ]
        opts = auto.LocalWorkspaceOptions(
            work_dir=str(project),
            env_vars={
                "PULUMI_BACKEND_URL": f"file://{project.parent / 'state'}",
                "PULUMI_CONFIG_PASSPHRASE": STACK_PASSPHRASE,
            },
        )
        self.stack = auto.create_stack(name, work_dir=str(project), opts=opts)
        self.stack.set_config("dynamo-infra:kubeconfigPath", auto.ConfigValue(str(cluster.kubeconfig)))
        self.times: dict[str, float] = {}

    @property
    def namespace(self) -> str:
        return self.options.namespace

    def timed(self, what: str, op: Any, **kw: Any) -> Any:
        start = time.monotonic()
        result = op(on_output=lambda _: None, **kw)
        self.times[what] = time.monotonic() - start
        return result

    def objects(self) -> list[Manifest]:
        """Every object the stack's graphs render (the Grove pathway's PodCliqueSet included)."""
        return [o for g in self.graphs for o in g.all_objects()]

    def crd_names(self) -> list[str]:
        return [
            str(d["metadata"]["name"])
            for s in (DYNAMO_CRD_SET, *self.platform.install_crds)
            for d in crd_documents(REPO / DEFAULT_CRD_DIR, s)
        ]

    def device_class(self) -> Manifest | None:
        if not self.platform.creates_device_class(self.options):
            return None
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": self.options.dra.device_class},
        }


@pytest.fixture(scope="module")
def stacks_project(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Iterator[Path]:
    """A project copy holding the shipped stack files and CRD sets."""
    project = copy_project(tmp_path_factory.mktemp("stacks"))
    for name in STACKS:
        shutil.copy(REPO / "stacks" / f"Pulumi.{name}.yaml", project / "stacks")
    yield project


def wait_deployments(kube: KubeClient, run: StackRun) -> None:
    wait_until(
        lambda: all(deployment_readiness(d).ready for d in kube.list("apps/v1", "Deployment", run.namespace)),
        DEPLOYMENTS_READY_S,
        1,
        what="the Deployments (kwok pods) to become available",
    )


def allocated_claims(kube: KubeClient, namespace: str) -> list[Manifest]:
    """ResourceClaims the scheduler allocated from the fake nodes' DRA devices."""
    return [
        c
        for c in kube.list("resource.k8s.io/v1", "ResourceClaim", namespace)
        if any(
            r["driver"] == GPU_DRA_DRIVER and r["pool"].startswith("kwok-")
            for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
        )
    ]


def grove_targets(run: StackRun) -> list[str]:
    """The PodCliques and scaling groups that carry the stack's Grove components' replicas."""
    return sorted(
        str(c.scale_target["name"]) for g in run.graphs for c in g.components.values() if c.scale_target
    )


def graph_states(up: auto.UpResult) -> dict[str, str]:
    return {name: g["state"] for name, g in up.outputs["graphs"].value.items()}


@pytest.mark.parametrize("name", STACKS)
def test_example_stack_up_converges_and_destroys(
    name: str, stacks_project: Path, cluster: LocalCluster, kube: KubeClient
) -> None:
    run = StackRun(name, stacks_project, cluster)
    ns = run.namespace

    up = run.timed("up", run.stack.up)
    assert up.summary.result == "succeeded"
    # Every object of every graph was accepted and is stored as we rendered it.
    missing = [object_key(o) for o in run.objects() if kube.get(o) is None]
    assert missing == []
    # As the operator: the planner account always, the EPP account with an EPP component, each with
    # its RoleBinding `<account>-binding`.
    has_epp = any(c.type == "epp" for g in run.graphs for c in g.components.values())
    for account in (PLANNER_SERVICE_ACCOUNT, *([EPP_SERVICE_ACCOUNT] if has_epp else [])):
        for (api_version, kind), object_name in zip(
            PLATFORM_KINDS, (account, f"{account}-binding"), strict=True
        ):
            stub = {
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"name": object_name, "namespace": ns},
            }
            assert kube.get(stub) is not None, f"{kind} {object_name}"
    crd_names = run.crd_names()
    for crd in crd_names:
        live = kube.get({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                         "metadata": {"name": crd}})  # fmt: skip
        assert live is not None, crd
        established = {c["type"]: c["status"] for c in live["status"]["conditions"]}
        assert established.get("Established") == "True", crd
        managers = {m["manager"] for m in live["metadata"]["managedFields"]}
        assert CLUSTER_FIELD_MANAGER in managers
    device_class = run.device_class()
    if device_class is not None:
        live = kube.get(device_class)
        assert live is not None
        assert live["spec"]["selectors"] == [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]
    states = graph_states(up)
    if run.options.await_policy.mode == "wait":
        assert set(states.values()) == {"successful"}, up.outputs["graphs"].value
    else:
        # No Grove controller runs here: Grove graphs say so instead of lying (the others were not
        # awaited, so they may be either).
        on_grove = {g.name: states[g.name] for g in run.graphs if g.workloads}
        assert set(on_grove.values()) == {"pending"}, up.outputs["graphs"].value

    if run.options.dra.enabled:
        wait_deployments(kube, run)
        claims = allocated_claims(kube, ns)
        assert claims, kube.list("resource.k8s.io/v1", "ResourceClaim", ns)
    if name in PLAYED:
        wait_deployments(kube, run)
        made = play_grove(kube, ns, ready=True)
        assert sorted(o["metadata"]["name"] for o in made) == grove_targets(run)
        run.timed("refresh", run.stack.refresh)

    preview = run.timed("preview", run.stack.preview)
    assert set(preview.change_summary) == {"same"}, preview.change_summary
    again = run.timed("second up", run.stack.up)
    assert set(again.summary.resource_changes or {}) == {"same"}, again.summary.resource_changes
    if name in PLAYED:
        # Ready as Grove judges it: the refreshed statuses reach the graphs' outputs.
        assert set(graph_states(again).values()) == {"successful"}, again.outputs["graphs"].value

    destroy = run.timed("destroy", run.stack.destroy)
    assert destroy.summary.result == "succeeded"
    kinds = {(o["apiVersion"], o["kind"]) for o in run.objects()} | set(PLATFORM_KINDS)
    left = {
        f"{api_version}/{kind}": [i["metadata"]["name"] for i in kube.list(api_version, kind, ns)]
        for api_version, kind in sorted(kinds)
    }
    assert {k: v for k, v in left.items() if v and not (k == "v1/ServiceAccount" and v == ["default"])} == {}
    assert kube.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}) is None
    if device_class is not None:
        assert kube.get(device_class) is None, "the DeviceClass is deleted with the stack"
    for crd in crd_names:
        stub = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": crd}}  # fmt: skip
        assert kube.get(stub) is not None, f"CRD {crd} is retained"
    run.stack.workspace.remove_stack(name)
    print(f"\n{name}: " + ", ".join(f"{k} {v:.1f}s" for k, v in run.times.items()))


def test_bad_platform_config_fails_preview_with_its_key(stacks_project: Path, cluster: LocalCluster) -> None:
    opts = auto.LocalWorkspaceOptions(
        work_dir=str(stacks_project),
        env_vars={"PULUMI_BACKEND_URL": f"file://{stacks_project.parent / 'state'}"},
    )
    stack = auto.create_stack("bad-platform", work_dir=str(stacks_project), opts=opts)
    stack.set_all_config(
        {
            "dynamo-infra:kubeconfigPath": auto.ConfigValue(str(cluster.kubeconfig)),
            "dynamo-infra:platform": auto.ConfigValue('{"installCrds": ["grove", "gateway"]}'),
            "dynamo-infra:graphs": auto.ConfigValue('["examples/agg.yaml"]'),
        }
    )
    lines: list[str] = []
    with pytest.raises(auto.errors.CommandError) as failed:
        stack.preview(on_output=lines.append)
    text = "\n".join(lines) + str(failed.value)
    assert "dynamo-infra:platform.installCrds[1]: must be one of" in text, text
    stack.workspace.remove_stack("bad-platform")
