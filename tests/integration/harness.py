"""The integration harness: API clients, fresh namespaces, one graph's stack on the local control
plane, and the part of Grove's controller the tests play (none runs on the local cluster)."""

from __future__ import annotations

import contextlib
import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi import automation as auto

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.render.runtime import rbac
from tests.conftest import REPO
from tools.localcluster import LocalCluster

# Grove's API group/version and the field manager its controller writes with.
GROVE = "grove.io/v1alpha1"
GROVE_MANAGER = "grove-operator"
# Output lines shown when a stack operation fails.
TAIL = 40
# Field manager of what the harness applies as the cluster's admin would (namespace, graphs' RBAC).
ADMIN_MANAGER = "kubectl"
# Lifetime asked of the graphs' account token (longer than any test).
TOKEN_LIFETIME_S = 6 * 3600


def copy_project(root: Path) -> Path:
    """`root/project`: the Pulumi project (program, examples, shipped CRD sets) using the repository's
    virtualenv, with its file backend in `root/state`."""
    dest = root / "project"
    dest.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO / name, dest / name)
    shutil.copytree(REPO / "examples", dest / "examples")
    (dest / "stacks").mkdir()
    # Every stack's platform layer installs the Dynamo CRD set from here.
    (dest / "stacks" / "crds").symlink_to(REPO / "stacks" / "crds")
    (dest / ".venv").symlink_to(REPO / ".venv")
    (root / "state").mkdir()
    return dest


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def make_stack(
    project: Path,
    local: LocalCluster,
    name: str,
    namespace: str,
    graphs: list[Path],
    *,
    backend_url: str | None = None,
    env_vars: dict[str, str] | None = None,
    restricted: bool = True,
    **options: object,
) -> auto.Stack:
    """A stack of the project copy pointed at the local control plane, its state in `backend_url`
    (default: its own file backend) with the passphrase secrets provider; `env_vars` reach every
    Pulumi command of the stack (a bucket's credentials); `options` are its cluster options.
    `restricted`: the graphs' providers use a token of the least-privilege Role (`graphs_kubeconfig`),
    the platform layer the admin's kubeconfig; the namespace is then created beforehand, as an admin
    would (the stack uses it and leaves it)."""
    backend = backend_url or f"file://{project.parent / 'state'}"
    opts = auto.LocalWorkspaceOptions(
        work_dir=str(project),
        env_vars={**(env_vars or {}), "PULUMI_BACKEND_URL": backend},
        secrets_provider="passphrase",
    )
    stack = auto.create_stack(name, work_dir=str(project), opts=opts)
    cluster_options = {"namespace": namespace, "await": {"timeoutSeconds": 180}, **options}
    stack.set_all_config(
        {
            "dynamo-infra:kubeconfigPath": auto.ConfigValue(str(local.kubeconfig)),
            "dynamo-infra:cluster": auto.ConfigValue(json.dumps(cluster_options)),
            "dynamo-infra:graphs": auto.ConfigValue(json.dumps([str(g) for g in graphs])),
        }
    )
    if restricted:
        restricted_path = graphs_kubeconfig(local, namespace, project.parent)
        stack.set_config("dynamo-infra:graphKubeconfigPath", auto.ConfigValue(str(restricted_path)))
    return stack


def grant_graphs(kube: KubeClient, namespace: str, role: Manifest | None = None) -> None:
    """As an admin: the namespace (when absent) and the graphs' account, Role (`role`, or the table's),
    RoleBinding, ClusterRole and its binding, as `dynamo-infra rbac` prints them."""
    if kube.get(namespace_object(namespace)) is None:
        kube.apply(namespace_object(namespace), manager=ADMIN_MANAGER)
    for obj in rbac.rbac_objects(namespace):
        kube.apply(role if role is not None and obj["kind"] == "Role" else obj, manager=ADMIN_MANAGER)


def account_token(kube: KubeClient, namespace: str, account: str = rbac.GRAPHS_NAME) -> str:
    """A bound token of the account (TokenRequest)."""
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_LIFETIME_S},
    }
    return str(kube.request("POST", path, body=body)["status"]["token"])


def graphs_kubeconfig(
    local: LocalCluster, namespace: str, folder: Path, role: Manifest | None = None
) -> Path:
    """`folder/graphs-<namespace>.kubeconfig`: the local control plane as the graphs' account of
    `namespace` (granted by `grant_graphs`). Stacks of one folder and namespace share it: a new token
    would change the inputs of the stacks made before (their next preview would update)."""
    path = folder / f"graphs-{namespace}.kubeconfig"
    if role is None and path.exists():
        return path
    with kube_client(local) as kube:
        grant_graphs(kube, namespace, role)
        token = account_token(kube, namespace)
    config = yaml.safe_load(local.kubeconfig.read_text())
    user = f"{rbac.GRAPHS_NAME}@{namespace}"
    config["users"] = [{"name": user, "user": {"token": token}}]
    for ctx in config.get("contexts") or []:
        ctx["context"]["user"] = user
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@contextlib.contextmanager
def kube_client(cluster: LocalCluster) -> Iterator[KubeClient]:
    """An API client of the local control plane, closed at exit."""
    with KubeClient(connection.load(str(cluster.kubeconfig))) as client:
        yield client


def namespace_object(name: str) -> Manifest:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


@contextlib.contextmanager
def fresh_namespace(kube: KubeClient, prefix: str) -> Iterator[str]:
    """A new namespace `prefix-<random>`, deleted at exit with whatever is left in it."""
    name = unique(prefix)
    kube.apply(namespace_object(name))
    try:
        yield name
    finally:
        kube.delete(namespace_object(name), propagation="Background")


def up(stack: auto.Stack, lines: list[str] | None = None, **kw: Any) -> auto.UpResult:
    """`pulumi up`, which must succeed; its output goes to `lines`."""
    out: list[str] = [] if lines is None else lines
    result = stack.up(on_output=out.append, **kw)
    assert result.summary.result == "succeeded", "\n".join(out[-TAIL:])
    return result


def preview_failure(stack: auto.Stack) -> str:
    """The output of a `pulumi preview` that must fail (a graph the operator's webhook denies)."""
    lines: list[str] = []
    with pytest.raises(auto.errors.CommandError) as failed:
        stack.preview(on_output=lines.append)
    return "\n".join(lines) + str(failed.value)


@contextlib.contextmanager
def admission_off(stack: auto.Stack) -> Iterator[None]:
    """The stack's cluster without the operator's validating webhook (`admission.enabled: false`)
    for a while, as a cluster whose operator chart has it off."""
    key = "dynamo-infra:cluster"
    cluster = json.loads(stack.get_config(key).value)
    stack.set_config(key, auto.ConfigValue(json.dumps({**cluster, "admission": {"enabled": False}})))
    try:
        yield
    finally:
        stack.set_config(key, auto.ConfigValue(json.dumps(cluster)))


def destroy(stack: auto.Stack) -> auto.DestroyResult:
    """`pulumi destroy`, which must succeed."""
    out: list[str] = []
    result = stack.destroy(on_output=out.append)
    assert result.summary.result == "succeeded", "\n".join(out[-TAIL:])
    return result


class GraphStack:
    """One graph file in its own project copy, deployed by a stack into a fresh namespace
    `name-<random>` of the local control plane."""

    def __init__(
        self, root: Path, cluster: LocalCluster, kube: KubeClient, name: str, graph: str, **options: object
    ) -> None:
        self.project = copy_project(root)
        self.cluster, self.kube = cluster, kube
        self.ns = unique(name)
        self.graph = self.project / "examples" / f"{name}.yaml"
        self.graph.write_text(graph)
        self.stack = make_stack(self.project, cluster, name, self.ns, [self.graph], **options)
        # Output of every `up` so far, and the outputs of the last.
        self.lines: list[str] = []
        self.outputs: dict[str, auto.OutputValue] = {}

    def up(self, **kw: Any) -> auto.UpResult:
        result = up(self.stack, self.lines, **kw)
        self.outputs = dict(result.outputs)
        return result

    def deployment(self, prefix: str) -> Manifest:
        """The namespace's Deployment whose name starts with `prefix`."""
        return next(
            d
            for d in self.kube.list("apps/v1", "Deployment", self.ns)
            if d["metadata"]["name"].startswith(prefix)
        )


@contextlib.contextmanager
def graph_stack(
    tmp: pytest.TempPathFactory, cluster: LocalCluster, name: str, graph: str, **options: object
) -> Iterator[GraphStack]:
    """A GraphStack with an API client of its own (it serves a whole module), destroyed at exit."""
    with kube_client(cluster) as kube:
        deployed = GraphStack(tmp.mktemp(name), cluster, kube, name, graph, **options)
        try:
            yield deployed
        finally:
            deployed.stack.destroy(on_output=lambda _: None)


def grove_child(kind: str, name: str, namespace: str, spec: Manifest) -> Manifest:
    return {
        "apiVersion": GROVE,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def play_grove(kube: KubeClient, namespace: str, *, ready: bool = False) -> list[Manifest]:
    """What Grove's controller creates from each PodCliqueSet in `namespace`: a PodClique per clique
    outside a scaling group and a PodCliqueScalingGroup per group, from the set's template (replica
    index 0) under Grove's field manager; with `ready`, each also reports all its replicas ready,
    as Grove does once the pods are. The objects created, as applied."""
    made: list[Manifest] = []
    for pcs in kube.list(GROVE, "PodCliqueSet", namespace):
        prefix = f"{pcs['metadata']['name']}-0"
        template = pcs["spec"]["template"]
        groups = template.get("podCliqueScalingGroups") or []
        grouped = {n for g in groups for n in g["cliqueNames"]}
        for clique in template["cliques"]:
            if clique["name"] not in grouped:
                spec = {k: clique["spec"][k] for k in ("roleName", "replicas", "podSpec")}
                made.append(grove_child("PodClique", f"{prefix}-{clique['name']}", namespace, spec))
        for group in groups:
            spec = {"cliqueNames": group["cliqueNames"], "replicas": group["replicas"]}
            made.append(grove_child("PodCliqueScalingGroup", f"{prefix}-{group['name']}", namespace, spec))
    for obj in made:
        kube.apply(obj, manager=GROVE_MANAGER)
        if ready:
            n = int(obj["spec"]["replicas"])
            status = {"replicas": n, "updatedReplicas": n, "scheduledReplicas": n}
            if obj["kind"] == "PodClique":
                status |= {"readyReplicas": n, "scheduleGatedReplicas": 0}
            else:
                status["availableReplicas"] = n
            patch_status(kube, obj, status)
    return made


def patch_status(kube: KubeClient, obj: Manifest, status: Manifest) -> None:
    """Merge `status` into the live object's status, at its current generation."""
    live = kube.get(obj)
    assert live is not None, obj["metadata"]
    meta = obj["metadata"]
    path = kube.resource(obj["apiVersion"], obj["kind"]).path(meta["namespace"], meta["name"]) + "/status"
    body = {"status": {"observedGeneration": live["metadata"].get("generation", 1), **status}}
    kube.request("PATCH", path, body=body, content_type="application/merge-patch+json")


# Seconds the API server may take to serve the kinds of a CRD just applied.
SERVED_S = 30


def serves(cluster: LocalCluster, api_version: str, kind: str) -> bool:
    """Whether API discovery lists the kind, asked by a fresh client (a client caches discovery)."""
    with kube_client(cluster) as fresh:
        return fresh.serves(api_version, kind)
