"""Admission through the real Pulumi CLI: a graph the operator's webhook denies fails the preview
before anything is written, and so does an update it denies, checked against the graph of the last
`up` (kept in the stack's state by the graph's admission resource)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pulumi import automation as auto

from dynamo_infra.kube.client import KubeClient
from tests.integration.harness import make_stack, preview_failure, unique
from tools.localcluster import LocalCluster

# Where examples/agg.yaml sets its worker's replicas, and the same with a scaling adapter owning them.
WORKER = "      componentType: worker\n      replicas: 1\n"
ADAPTED = WORKER + "      scalingAdapter:\n        enabled: true\n"
SCALED = "      componentType: worker\n      replicas: 3\n"
IMAGE = "vllm-runtime:1.4.0"
PLACEHOLDER_IMAGE = "vllm-runtime:my-tag"


def test_denied_graphs_and_updates_fail_the_preview(
    cluster: LocalCluster, kube: KubeClient, project: Path
) -> None:
    ns = unique("admission")
    graph = project / "examples" / "agg.yaml"
    shipped = graph.read_text()
    assert shipped.count(WORKER) == 1 and IMAGE in shipped
    stack = make_stack(project, cluster, "admission", ns, [graph], **{"await": {"mode": "skip"}})
    try:
        graph.write_text(shipped.replace(IMAGE, PLACEHOLDER_IMAGE))
        text = preview_failure(stack)
        assert (
            "spec.services.Frontend.runtimeVersionOverride: Required value: is required when the specified main "
            "container image has no parseable semantic-version tag" in text
        ), text

        # Up with the worker's replicas handed to a scaling adapter.
        graph.write_text(shipped.replace(WORKER, ADAPTED))
        assert stack.up(on_output=lambda _: None).summary.result == "succeeded"
        graph.write_text(shipped.replace(WORKER, ADAPTED.replace("replicas: 1", "replicas: 3")))
        text = preview_failure(stack)
        assert (
            "spec.services.VllmWorker.replicas: Forbidden: cannot be modified directly when scaling adapter is "
            "enabled" in text
        ), text
        graph.write_text(shipped.replace(WORKER, ADAPTED).replace("    Frontend:\n", "    Frontend2:\n"))
        text = preview_failure(stack)
        assert "components added: [Frontend2], components removed: [Frontend]" in text, text
        assert [
            d["metadata"]["name"]
            for d in kube.list("apps/v1", "Deployment", ns)
            if d["metadata"]["name"].startswith("vllm-agg-frontend2")
        ] == []

        # Without the adapter (replicas unchanged: admitted), the next check compares with this graph:
        # scaling the worker is then the user's to do.
        graph.write_text(shipped)
        assert stack.up(on_output=lambda _: None).summary.result == "succeeded"
        graph.write_text(shipped.replace(WORKER, SCALED))
        # Two updates: the worker's component and the graph's records (the DGD's spec replicas).
        scaled = stack.preview(on_output=lambda _: None)
        assert scaled.change_summary.get("update") == 2, scaled.stdout
        assert "records" in scaled.stdout, scaled.stdout
    finally:
        graph.write_text(shipped)
        destroy = stack.destroy(on_output=lambda _: None)
        kube.delete({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        assert destroy.summary.result == "succeeded"
        stack.workspace.remove_stack("admission")


MULTINODE = "      multinode:\n        nodeCount: 2\n"


@pytest.mark.parametrize(
    ("cluster_options", "component", "refusal"),
    [
        # Neither Grove nor LWS: the operator's graph controller stops at the multinode component (the
        # path is the rendering's, the hub version's, as for every render error).
        ({}, "VllmWorker", "spec.components[VllmWorker].multinode: no multinode orchestrator available"),
        # Grove: the webhook denies a graph over Grove's pod-name budget.
        (
            {"multinode": {"orchestrator": "grove"}},
            "VllmWorkerLongNameForGrove1",
            'spec.services.VllmWorkerLongNameForGrove1: Invalid value: "VllmWorkerLongNameForGrove1": '
            "combined resource name length 66 exceeds the 45-character pod-name limit",
        ),
    ],
    ids=["no-orchestrator", "grove-budget"],
)
def test_a_graph_its_cluster_cannot_run_fails_the_up_before_anything_is_written(
    cluster: LocalCluster,
    kube: KubeClient,
    project: Path,
    cluster_options: dict[str, object],
    component: str,
    refusal: str,
) -> None:
    """Refused when the stack reads its graphs, before its Platform creates the namespace and CRDs, with
    the file and the field and no traceback."""
    ns = unique("refused")
    shipped = (project / "examples" / "agg.yaml").read_text()
    graph = project / "refused.yaml"
    graph.write_text(
        shipped.replace(WORKER, WORKER + MULTINODE).replace("    VllmWorker:\n", f"    {component}:\n")
    )
    stack = make_stack(
        project,
        cluster,
        "refused",
        ns,
        [graph],
        restricted=False,
        **{"await": {"mode": "skip"}},
        **cluster_options,
    )
    try:
        lines: list[str] = []
        with pytest.raises(auto.errors.CommandError):
            stack.up(on_output=lines.append)
        text = "\n".join(lines)
        assert f"error: {graph}: {refusal}" in text, text
        assert "Traceback" not in text, text
        assert kube.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}) is None
        assert "+ 1 created" in text, text  # the stack itself: nothing the program declares
    finally:
        stack.destroy(on_output=lambda _: None)
        stack.workspace.remove_stack("refused")
