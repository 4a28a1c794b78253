"""A stack from before the platform's children were named `<platform>-<object>` keeps them: the
program's platform aliases the earlier names (`namespace`, `<account>`, `<crd>`, `device-class`), so
preview and `up` neither replace, delete nor create any of them, and the state then holds the new
names. The earlier state is the stack's own with the platform children renamed back, as the earlier
program wrote it (the same inputs under unprefixed names); the platform's CRDs resource came after
that program (its CRDs were pulumi-kubernetes resources then: test_package_upgrade moves them) and
keeps its name."""

from __future__ import annotations

import json
from pathlib import Path

from pulumi import automation as auto

from dynamo_infra.components.platform import PLATFORM_TYPE
from dynamo_infra.components.platform_plan import LEGACY_PLATFORM_NAME
from dynamo_infra.kube.client import KubeClient
from tests.integration.conftest import make_stack, unique
from tools.localcluster import LocalCluster

# Every kind of platform child: a third-party CRD set besides the Dynamo one, and (DRA) the DeviceClass.
PLATFORM_CONFIG = {"installCrds": ["keda"]}
# The type of the platform's CustomResourceDefinitions resource (a dynamic one).
DYNAMIC_TYPE = "pulumi-python:dynamic:Resource"
CLUSTER_OPTIONS = {"await": {"mode": "skip"}, "dra": {"enabled": True, "deviceClass": "legacy.example.com"}}


def earlier_urn(urn: str) -> str:
    """The URN the program gave a platform child before names were prefixed."""
    head, _, name = urn.rpartition("::")
    if f"{PLATFORM_TYPE}$" not in head or head.endswith(DYNAMIC_TYPE):
        return urn
    return f"{head}::{name.removeprefix(f'{LEGACY_PLATFORM_NAME}-')}"


def as_earlier(deployment: auto.Deployment) -> auto.Deployment:
    urns = [r["urn"] for r in deployment.deployment["resources"]]
    text = json.dumps(deployment.deployment)
    for urn in urns:
        text = text.replace(json.dumps(urn), json.dumps(earlier_urn(urn)))
    return auto.Deployment(version=deployment.version, deployment=json.loads(text))


def platform_children(stack: auto.Stack) -> list[str]:
    return sorted(
        r["urn"].rpartition("::")[2]
        for r in stack.export_stack().deployment["resources"]
        if f"{PLATFORM_TYPE}$" in r["urn"]
    )


def test_a_stack_with_unprefixed_platform_children_keeps_them(
    project: Path, cluster: LocalCluster, kube: KubeClient
) -> None:
    ns = unique("aliases")
    # Unrestricted: the stack creates the namespace (a restricted identity's is made by an admin first).
    stack = make_stack(
        project, cluster, ns, ns, [project / "examples" / "agg.yaml"], restricted=False, **CLUSTER_OPTIONS
    )
    stack.set_config("dynamo-infra:platform", auto.ConfigValue(json.dumps(PLATFORM_CONFIG)))
    assert stack.up(on_output=lambda _: None).summary.result == "succeeded"
    created = platform_children(stack)
    assert created and all(n.startswith(f"{LEGACY_PLATFORM_NAME}-") for n in created), created
    uid = kube.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})["metadata"]["uid"]

    stack.import_stack(as_earlier(stack.export_stack()))
    earlier = platform_children(stack)
    assert {"namespace", "device-class", f"{LEGACY_PLATFORM_NAME}-crds"} <= set(earlier), earlier

    preview = stack.preview(on_output=lambda _: None)
    assert set(preview.change_summary) == {"same"}, preview.change_summary
    again = stack.up(on_output=lambda _: None)
    assert set(again.summary.resource_changes or {}) == {"same"}, again.summary.resource_changes
    assert platform_children(stack) == created
    live = kube.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    assert live is not None and live["metadata"]["uid"] == uid
    assert stack.destroy(on_output=lambda _: None).summary.result == "succeeded"
