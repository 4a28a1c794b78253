"""Three corpus graphs through the real Pulumi CLI onto the local control plane.

Aggregated (`vllm__agg`), disaggregated prefill/decode behind the frontend's router
(`sglang__disagg`: neither it nor `vllm__disagg` sets a KV router mode, so the one with a second
backend was chosen) and disaggregated with the SLA planner (`vllm__disagg_planner`, its planner
switched to the virtual environment), in one stack as a platform engineer would list them: every
rendered object is accepted and stored, Deployments become Available (kwok), each Service's
EndpointSlices hold exactly its component's pods, and each graph's status output says `successful`.
The planner graph as shipped (environment kubernetes: it needs what the operator served) previews
with a warning naming its planner and how to run the dynamo-infra agent, which serves it. Every single-node corpus graph's render is also checked against the
real API server (dry-run apply with strict field validation).
"""

from __future__ import annotations

from pathlib import Path

from dynamo_infra.api import DynamoValidationError
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components import load_graph
from dynamo_infra.config import ClusterOptions
from dynamo_infra.kube.client import FIELD_MANAGER, KubeClient
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.render import RenderedGraph, render_graph
from dynamo_infra.render.components.planner import PLANNER_SERVICE_ACCOUNT
from tests.conftest import load_corpus
from tests.integration.harness import make_stack, unique
from tools.localcluster import LocalCluster

# Corpus files (under graphs/v1alpha1) and the graph each holds.
GRAPHS = {
    "vllm__agg.yaml": "vllm-agg",
    "sglang__disagg.yaml": "sglang-disagg",
    "vllm__disagg_planner.yaml": "vllm-disagg-planner",
}
# The corpus graph with a planner, and how its planner is switched to the virtual environment (the
# kubernetes one needs the operator's DGD object).
PLANNER_GRAPH = "vllm__disagg_planner.yaml"
KUBERNETES_PLANNER = "--environment=kubernetes"
VIRTUAL_PLANNER = "--environment=virtual"
# Placeholder image tags of the corpus files, and the runtime version a user fills in.
PLACEHOLDER_TAGS = (":${VERSION}", ":my-tag")
RUNTIME_VERSION = "1.4.0"
# What the graphs reference but do not create: users create these first.
HF_TOKEN_SECRET = "hf-token-secret"
PLANNER_PROFILE_CONFIG_MAP = "planner-profile-data"
# Namespaces of the acceptance check.
NAMESPACE_PREFIX = "accept"


def as_deployed(source: Path, dest: Path) -> Path:
    """A corpus file with its placeholder image tags (`${VERSION}`, `my-tag`) filled in as a user does
    before deploying: the operator's webhook, which we apply, denies images without a version."""
    text = source.read_text()
    for placeholder in PLACEHOLDER_TAGS:
        text = text.replace(placeholder, f":{RUNTIME_VERSION}")
    dest.write_text(text)
    return dest


def copy_graphs(corpus: Path, project: Path) -> list[Path]:
    """The corpus files as deployed, the planner switched to its virtual environment (kwok pulls nothing)."""
    dest = project / "graphs"
    dest.mkdir()
    paths = [as_deployed(corpus / "graphs" / "v1alpha1" / name, dest / name) for name in GRAPHS]
    planner = dest / PLANNER_GRAPH
    text = planner.read_text()
    assert text.count(KUBERNETES_PLANNER) == 1
    planner.write_text(text.replace(KUBERNETES_PLANNER, VIRTUAL_PLANNER))
    return paths


def user_prerequisites(kube: KubeClient, namespace: str) -> None:
    """The namespace, the HF token secret and the profiler's ConfigMap, as a user creates them."""
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    meta = {"namespace": namespace}
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": HF_TOKEN_SECRET, **meta},
            "stringData": {"HF_TOKEN": "not-a-real-token"},
        }
    )
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": PLANNER_PROFILE_CONFIG_MAP, **meta},
            "data": {"README": "profiling results would be here"},
        }
    )


def condition(obj: Manifest, kind: str) -> str | None:
    return next(
        (c["status"] for c in obj.get("status", {}).get("conditions") or [] if c["type"] == kind), None
    )


def check_stored(kube: KubeClient, rendered: RenderedGraph) -> None:
    """Every object we rendered exists on the server."""
    missing = [f"{o['kind']}/{o['metadata']['name']}" for o in rendered.all_objects() if kube.get(o) is None]
    assert not missing, f"{rendered.name}: not stored: {missing}"


def check_workloads(kube: KubeClient, namespace: str, rendered: RenderedGraph) -> None:
    """Each component's Deployment is Available, and its Service's endpoints are exactly its pods."""
    for c in rendered.components.values():
        (dep,) = [o for o in c.objects if o["kind"] == "Deployment"]
        live = kube.get(dep)
        assert live is not None and condition(live, "Available") == "True", (c.name, live and live["status"])
        assert live["status"].get("availableReplicas") == c.replicas, (c.name, live["status"])
        selector = ",".join(f"{k}={v}" for k, v in dep["spec"]["selector"]["matchLabels"].items())
        pods = {p["metadata"]["name"] for p in kube.list("v1", "Pod", namespace, selector)}
        assert len(pods) == c.replicas, (c.name, pods)
        for svc in (o for o in c.objects if o["kind"] == "Service"):
            name = svc["metadata"]["name"]
            slices = kube.list(
                "discovery.k8s.io/v1", "EndpointSlice", namespace, f"kubernetes.io/service-name={name}"
            )
            targets = {
                e["targetRef"]["name"] for s in slices for e in s.get("endpoints") or [] if e.get("targetRef")
            }
            assert targets == pods, (
                f"Service {name} selects {sorted(targets)}, its component runs {sorted(pods)}"
            )
            ports = {p.get("name") for s in slices if s.get("endpoints") for p in s.get("ports") or []}
            wanted = {p.get("name") for p in svc["spec"]["ports"]}
            assert ports == wanted, f"Service {name}: endpoint ports {ports}, Service ports {wanted}"


def test_corpus_graphs_up(corpus: Path, cluster: LocalCluster, kube: KubeClient, project: Path) -> None:
    ns = unique("corpus")
    graphs = copy_graphs(corpus, project)
    user_prerequisites(kube, ns)
    stack = make_stack(project, cluster, "corpus", ns, graphs)
    try:
        up = stack.up(on_output=lambda _: None)
        assert up.summary.result == "succeeded"
        outputs = up.outputs["graphs"].value
        assert {n: o["state"] for n, o in outputs.items()} == dict.fromkeys(GRAPHS.values(), "successful")

        options = ClusterOptions.from_config({"namespace": ns})
        for path in graphs:
            rendered = render_graph(load_graph(path), options, ns)
            check_stored(kube, rendered)
            check_workloads(kube, ns, rendered)

        # The planner runs as the platform layer's planner service account.
        (planner,) = kube.list("v1", "Pod", ns, "nvidia.com/dynamo-component-type=planner")
        assert planner["spec"]["serviceAccountName"] == PLANNER_SERVICE_ACCOUNT
        assert kube.get(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": PLANNER_SERVICE_ACCOUNT, "namespace": ns},
            }
        )
    finally:
        destroy = stack.destroy(on_output=lambda _: None)
        kube.delete({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        assert destroy.summary.result == "succeeded"


def test_a_kubernetes_planner_previews_with_a_warning(
    corpus: Path, cluster: LocalCluster, project: Path
) -> None:
    graph = as_deployed(corpus / "graphs" / "v1alpha1" / PLANNER_GRAPH, project / PLANNER_GRAPH)
    stack = make_stack(project, cluster, "planner", unique("planner"), [graph])
    lines: list[str] = []
    stack.preview(on_output=lines.append)
    text = "\n".join(lines)
    assert (
        "graph vllm-disagg-planner: spec.services.Planner: the Dynamo Planner (environment kubernetes) "
        "reads DynamoGraphDeployment 'vllm-disagg-planner' and its Ready status" in text
    ), text
    assert "Set `dynamo-infra:agent`" in text, text
    stack.workspace.remove_stack("planner")


def dry_run_apply(kube: KubeClient, obj: Manifest) -> str | None:
    """Server-side apply in dry-run with strict field validation; the server's error, if any."""
    info = kube.resource(obj["apiVersion"], obj["kind"])
    meta = obj["metadata"]
    params = {"fieldManager": FIELD_MANAGER, "force": "true", "dryRun": "All", "fieldValidation": "Strict"}
    try:
        kube.request(
            "PATCH",
            info.path(meta.get("namespace") if info.namespaced else None, meta["name"]),
            body=obj,
            params=params,
            content_type="application/apply-patch+yaml",
        )
    except KubeError as e:
        return str(e)
    return None


def test_every_corpus_graph_render_is_accepted(corpus: Path, kube: KubeClient, namespace: str) -> None:
    """Each graph the operator renders with its default configuration (single node: multinode and
    DRA graphs are rejected there). Kinds whose CRDs are not installed (InferencePool) are skipped."""
    problems: list[str] = []
    checked = 0
    for path in sorted((corpus / "graphs").glob("v1*/*.yaml")):
        for dgd in load_corpus(path).graphs:
            try:
                rendered = render_graph(dgd, ClusterOptions(), namespace)
            except DynamoValidationError:
                continue
            for obj in (*rendered.all_objects(), *rendered.pvcs):
                if not kube.serves(obj["apiVersion"], obj["kind"]):
                    continue
                checked += 1
                if error := dry_run_apply(kube, obj):
                    problems.append(f"{path.name}: {obj['kind']}/{obj['metadata']['name']}: {error}")
    assert not problems, "\n".join(problems)
    assert checked > 100, checked
