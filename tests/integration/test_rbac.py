"""Least privilege, through the real Pulumi CLI against the local control plane (RBAC on): the graphs'
providers deploy and destroy a graph with a token of the Role `dynamo-infra rbac` prints, and fail,
naming verb, resource, namespace and identity, when that Role lacks one rule."""

from __future__ import annotations

import collections
import copy
from pathlib import Path

import pytest
from pulumi import automation as auto

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import PLATFORM_USER_AGENT, USER_AGENT, KubeClient
from dynamo_infra.render.runtime import rbac
from tests.integration.harness import TAIL, destroy, graphs_kubeconfig, make_stack, unique, up
from tools.localcluster import LocalCluster

NAMESPACE_PREFIX = "rbac"


def account(namespace: str) -> str:
    return f"system:serviceaccount:{namespace}:{rbac.GRAPHS_NAME}"


def calls(events: list[Manifest]) -> collections.Counter[tuple[str, str, str]]:
    """Audited requests: (verb, group, resource[/subresource]) -> count."""
    seen: collections.Counter[tuple[str, str, str]] = collections.Counter()
    for e in events:
        ref = e.get("objectRef") or {}
        if not ref.get("resource"):
            continue
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        seen[(e["verb"], ref.get("apiGroup", ""), resource)] += 1
    return seen


def test_a_graph_deploys_and_is_destroyed_with_the_least_privilege_role(
    cluster: LocalCluster, kube: KubeClient, project: Path
) -> None:
    ns = unique(NAMESPACE_PREFIX)
    stack = make_stack(project, cluster, "least", ns, [project / "examples" / "agg.yaml"])
    # From here to the end of the destroy only the providers use our client's user agent.
    before = len(cluster.audit_events(USER_AGENT))
    platform_before = len(cluster.audit_events(PLATFORM_USER_AGENT))
    result = up(stack)
    assert result.outputs["graphs"].value["vllm-agg"]["state"] == "successful"
    destroy(stack)
    providers = cluster.audit_events(USER_AGENT)[before:]
    # The platform's CRDs (cluster-wide) are applied with the stack's own kubeconfig, under their own
    # user agent, and touch nothing else (API discovery aside).
    platform = cluster.audit_events(PLATFORM_USER_AGENT)[platform_before:]
    touched = {e["objectRef"]["resource"] for e in platform if "objectRef" in e}
    assert touched == {"customresourcedefinitions"}, touched
    assert {e["verb"] for e in platform if "objectRef" not in e} <= {"get"}
    assert account(ns) not in {e["user"]["username"] for e in platform}
    assert kube.list("apps/v1", "Deployment", ns) == []
    # The providers wrote (server-side apply is audited as `patch`) and deleted with the restricted
    # token only, each call in the table, none denied.
    assert providers and {e["user"]["username"] for e in providers} == {account(ns)}
    assert all(e["responseStatus"]["code"] != 403 for e in providers)
    used = calls(providers)
    assert {"patch", "delete", "get", "list"} <= {verb for verb, _, _ in used}, used
    for verb, group, resource in used:
        assert rbac.covers(group, resource, verb), (verb, group, resource)
    print(
        f"least privilege: {sum(used.values())} requests, {len(used)} verb x resource pairs: {sorted(used)}"
    )


def without(role: Manifest, resource: str, verb: str | None = None) -> Manifest:
    """The Role without `resource`'s rule (or only without `verb` in it)."""
    out = copy.deepcopy(role)
    rules = []
    for rule in out["rules"]:
        if rule["resources"] == [resource]:
            if verb is None:
                continue
            rule["verbs"] = [v for v in rule["verbs"] if v != verb]
        rules.append(rule)
    assert len(rules) < len(out["rules"]) or verb is not None
    out["rules"] = rules
    return out


@pytest.mark.parametrize(
    ("resource", "verb", "needed"),
    [
        # The pull-secret discovery's one rule removed: its list of the namespace's secrets is denied.
        ("secrets", None, "`list` on `secrets`"),
        # A server-side apply that would create a Deployment is denied `create` (it may `patch`).
        ("deployments", "create", "`create` on `deployments.apps`"),
    ],
)
def test_a_missing_permission_fails_naming_verb_resource_namespace_and_identity(
    cluster: LocalCluster, project: Path, resource: str, verb: str | None, needed: str
) -> None:
    ns = unique(NAMESPACE_PREFIX)
    stack = make_stack(project, cluster, "lacking", ns, [project / "examples" / "agg.yaml"], restricted=False)
    role = without(rbac.role(ns), resource, verb)
    path = graphs_kubeconfig(cluster, ns, project.parent, role)
    stack.set_config("dynamo-infra:graphKubeconfigPath", auto.ConfigValue(str(path)))
    lines: list[str] = []
    with pytest.raises(auto.errors.CommandError):
        stack.up(on_output=lines.append)
    text = "\n".join(lines)
    expected = (
        f"forbidden: dynamo-infra needs {needed} in namespace `{ns}` (as {account(ns)}): add it to the Role"
    )
    assert expected in text, "\n".join(lines[-TAIL:])
    stack.destroy(on_output=lambda _: None)
