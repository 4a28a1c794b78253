"""End to end on real parts: Pulumi CLI + Automation API against the local control plane."""

from __future__ import annotations

import re
from pathlib import Path

from dynamo_infra.kube.client import FIELD_MANAGER, KubeClient
from tests.integration.harness import make_stack, unique
from tools.localcluster import LocalCluster


def managers(obj: dict) -> set[tuple[str, str]]:
    return {(m["manager"], m["operation"]) for m in obj["metadata"].get("managedFields") or []}


def test_up_preview_edit_destroy(cluster: LocalCluster, kube: KubeClient, project: Path) -> None:
    ns = unique("skeleton")
    graph = project / "examples" / "agg.yaml"
    stack = make_stack(project, cluster, "it", ns, [graph])

    up = stack.up(on_output=lambda _: None)
    assert up.summary.result == "succeeded"
    outputs = up.outputs["graphs"].value["vllm-agg"]
    assert outputs["state"] == "successful"
    assert outputs["components"]["VllmWorker"]["readyReplicas"] == 1

    # The graph's resources keep the stack configuration key of their kubeconfig (the harness gives the
    # graphs a restricted one), not the credential; the destroy below reads it from the configuration.
    resources = stack.export_stack().deployment["resources"]
    dynamic = [r for r in resources if r["type"] == "pulumi-python:dynamic:Resource"]
    assert not [r["urn"] for r in dynamic if "kubeconfig" in r["inputs"] or "kubeconfig" in r["outputs"]]
    keys = {r["urn"].rsplit("::", 1)[1]: r["inputs"].get("kubeconfigFrom") for r in dynamic}
    readers = {k for k, v in keys.items() if v == "dynamo-infra:graphKubeconfigPath"}
    # The platform's CRDs (cluster-wide) are applied with the stack's own kubeconfig; the graph's
    # admission is kept by its shared objects' workload (no resource of its own).
    assert {k: v for k, v in keys.items() if k not in readers} == {
        "platform-crds": "dynamo-infra:kubeconfigPath",
    }, keys
    shared = next(r for r in dynamic if r["urn"].endswith("::vllm-agg-shared"))
    assert shared["inputs"]["admission"]["graph"]["metadata"]["name"] == "vllm-agg"
    # The first writer (the shared objects) waits for the platform; the components wait through it and
    # list it, not every resource of the platform.
    by_name = {r["urn"].rsplit("::", 1)[1]: r for r in resources}
    platform = {r["urn"] for r in resources if "dynamo-infra:index:Platform$" in r["urn"]}
    assert platform and platform <= set(by_name["vllm-agg-shared"]["dependencies"])
    for component in ("vllm-agg-frontend-workload", "vllm-agg-vllmworker-workload"):
        listed = set(by_name[component]["dependencies"])
        assert by_name["vllm-agg-shared"]["urn"] in listed and not platform & listed, listed

    deployments = {d["metadata"]["name"]: d for d in kube.list("apps/v1", "Deployment", ns)}
    worker = next(d for n, d in deployments.items() if n.startswith("vllm-agg-vllmworker-"))
    assert "vllm-agg-frontend" in deployments
    labels = worker["spec"]["template"]["metadata"]["labels"]
    assert labels["nvidia.com/dynamo-component-type"] == "worker"
    assert labels["nvidia.com/dynamo-namespace"] == f"{ns}-vllm-agg"
    assert (FIELD_MANAGER, "Apply") in managers(worker)
    assert worker["status"]["availableReplicas"] == 1
    services = {s["metadata"]["name"] for s in kube.list("v1", "Service", ns)}
    assert "vllm-agg-frontend" in services
    endpoints = kube.list(
        "discovery.k8s.io/v1", "EndpointSlice", ns, "kubernetes.io/service-name=vllm-agg-frontend"
    )
    assert any(ep.get("endpoints") for ep in endpoints), "the frontend Service selects no pod"

    again = stack.preview(on_output=lambda _: None)
    assert set(again.change_summary) == {"same"}, again.change_summary

    graph.write_text(
        graph.read_text().replace("replicas: 1\n      resources", "replicas: 2\n      resources")
    )
    lines: list[str] = []
    diff = stack.preview(diff=True, on_output=lines.append)
    # Two updates: the worker's workload and the graph's records (the DGD's spec replicas).
    assert diff.change_summary.get("update") == 2, diff.change_summary
    text = "\n".join(lines)
    assert re.search(r"replicas\s*:\s*1 => 2", text), text
    assert "vllm-agg-vllmworker-workload" in text and "vllm-agg-records" in text

    destroy = stack.destroy(on_output=lambda _: None)
    assert destroy.summary.result == "succeeded"
    assert kube.list("apps/v1", "Deployment", ns) == []
    assert [s for s in kube.list("v1", "Service", ns) if s["metadata"]["name"].startswith("vllm-agg")] == []
