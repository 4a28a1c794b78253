"""The graphs' least-privilege Role: the shipped YAML is the table's render, it covers every kind the
renderer produces for the corpus and every rule the graphs' own Roles grant, and a 403 names the
verb, resource, namespace and identity."""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

from dynamo_infra.api import DynamoValidationError
from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.config import ClusterOptions
from dynamo_infra.kube.errors import forbidden_message
from dynamo_infra.render import render_graph
from dynamo_infra.render.features.autoscaling import autoscaler_object
from dynamo_infra.render.features.checkpoint import capture_job
from dynamo_infra.render.runtime import rbac
from dynamo_infra.stack_config import StackConfig
from tests.conftest import REPO, load_corpus
from tests.unit.test_golden import VARIANTS, cases

SHIPPED = REPO / "deploy" / "rbac" / "graphs.yaml"
# Verbs an applied object needs at the least (server-side apply, ownership reads, deletion).
APPLY_VERBS = {"create", "get", "patch", "delete"}


def test_the_shipped_yaml_is_the_tables_render() -> None:
    text = SHIPPED.read_text()
    assert text == rbac.rbac_yaml(rbac.SHIPPED_NAMESPACE), "regenerate: dynamo-infra rbac --namespace default"
    assert list(yaml.safe_load_all(text)) == rbac.rbac_objects(rbac.SHIPPED_NAMESPACE)


@functools.cache
def _rendered_objects() -> list[Manifest]:
    """Every object the providers apply for the corpus graphs under each cluster kind of the goldens."""
    out: list[Manifest] = []
    for path, variant in cases():
        options = ClusterOptions.parse(VARIANTS[variant]) if variant else ClusterOptions()
        for g in load_corpus(path).graphs:
            try:
                r = render_graph(g, options, "ns")
            except DynamoValidationError:  # graphs the operator rejects (golden-filed as errors)
                continue
            out += [*r.all_objects(), *r.pvcs, *r.checkpoints, *map(capture_job, r.checkpoints)]
            out += [c.adapter for c in r.components.values() if c.adapter]
    target = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeploymentScalingAdapter", "name": "x"}
    for spec in (
        {"kind": "hpa", "maxReplicas": 2},
        {"kind": "keda", "maxReplicas": 2, "triggers": [{"type": "cpu"}]},
    ):
        out.append(autoscaler_object(target, "ns", Autoscaler.model_validate(spec), {}))
    return out


def test_every_rendered_kind_is_in_the_table() -> None:
    objects = _rendered_objects()
    kinds = {(o["apiVersion"].rpartition("/")[0], o["kind"]) for o in objects}
    assert len(kinds) >= 15, kinds
    table = {(n.group, n.kind): n for n in rbac.ROLE_NEEDS if n.kind}
    missing = sorted(kinds - set(table))
    assert not missing, f"kinds the providers apply without a Need in render/runtime/rbac.py: {missing}"
    for k in kinds:
        assert set(table[k].verbs) >= APPLY_VERBS, (k, table[k].verbs)


def test_the_role_holds_what_the_graphs_roles_grant() -> None:
    """Kubernetes lets an identity create a Role (and bind it) only with every permission it grants."""
    granted = [r for o in _rendered_objects() if o["kind"] == "Role" for r in o["rules"]]
    assert granted
    for rule in granted:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    assert rbac.covers(group, resource, verb), (group, resource, verb)


def test_the_cluster_role_is_reads_only() -> None:
    role = rbac.cluster_role()
    assert {v for r in role["rules"] for v in r["verbs"]} == {"get"}
    crds = next(r for r in role["rules"] if r["resources"] == ["customresourcedefinitions"])
    assert crds["resourceNames"] == sorted(crds["resourceNames"]) and len(crds["resourceNames"]) == 2


def test_a_denied_patch_names_verb_resource_namespace_and_identity() -> None:
    server = (
        'deployments.apps "web" is forbidden: User "system:serviceaccount:x:y" cannot patch resource '
        '"deployments" in API group "apps" in the namespace "x"'
    )
    msg = forbidden_message("PATCH", "/apis/apps/v1/namespaces/x/deployments/web", server)
    assert msg.startswith(
        "forbidden: dynamo-infra needs `patch` on `deployments.apps` in namespace `x` "
        "(as system:serviceaccount:x:y): add it to the Role"
    ), msg


def test_a_denied_subresource_and_a_cluster_read() -> None:
    server = 'User "u" cannot patch resource "podcliques/scale" in API group "grove.io" in the namespace "n"'
    msg = forbidden_message("PATCH", "/apis/grove.io/v1alpha1/namespaces/n/podcliques/a/scale", server)
    assert "`patch` on `podcliques.grove.io/scale` in namespace `n` (as u)" in msg
    server = (
        'User "u" cannot get resource "storageclasses" in API group "storage.k8s.io" at the cluster scope'
    )
    msg = forbidden_message("GET", "/apis/storage.k8s.io/v1/storageclasses/fast", server)
    assert (
        "`get` on `storageclasses.storage.k8s.io` at the cluster scope (as u): add it to the ClusterRole"
        in msg
    )


def test_a_denied_create_by_apply_is_named_from_the_request() -> None:
    """The API server denies a server-side apply that would create an object without its usual wording."""
    msg = forbidden_message("PATCH", "/api/v1/namespaces/n/services/s", 'services "s" is forbidden: ', "me")
    assert "needs `create` on `services` in namespace `n` (as me)" in msg
    msg = forbidden_message("GET", "/api/v1/namespaces/n/secrets", "forbidden")
    assert "needs `list` on `secrets` in namespace `n` (as the kubeconfig's identity)" in msg


class _Config:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    def get_bool(self, key: str) -> bool | None:
        return None

    def get_object(self, key: str) -> object:
        return None


def test_the_graphs_kubeconfig_is_their_own_when_given(tmp_path: Path) -> None:
    admin, graphs = tmp_path / "admin", tmp_path / "graphs"
    admin.write_text("admin")
    graphs.write_text("restricted")
    plain = StackConfig.from_config(_Config({"kubeconfigPath": str(admin), "context": "c"}))
    assert (plain.graph_kubeconfig, plain.graphs_context) == ("", "c")
    config = {"kubeconfigPath": str(admin), "context": "c", "graphKubeconfigPath": str(graphs)}
    split = StackConfig.from_config(_Config(config))
    assert (split.kubeconfig, split.graph_kubeconfig, split.graphs_context) == ("admin", "restricted", None)
    # The key the graphs' providers read their kubeconfig from (StackKubeconfig in `__main__.py`).
    assert plain.graphs_kubeconfig_key == "dynamo-infra:kubeconfigPath"
    assert split.graphs_kubeconfig_key == "dynamo-infra:graphKubeconfigPath"
