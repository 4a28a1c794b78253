"""`dynamo-infra render` and `diff-live` against one `pulumi up` of a small mocker stack.

One `up` (namespace A), one `kubectl apply --server-side` of `render --namespace B` (namespace B):
the two namespaces hold the same objects with the same specs. `diff-live` finds no drift after the
`up`, then exactly the edits made by hand.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.cli import main as cli
from dynamo_infra.kube.client import KubeClient, object_key, stub
from dynamo_infra.reconcile.ownership import INVENTORY_ANNOTATION, INVENTORY_LABEL
from dynamo_infra.render.names import ANNOTATION_CURRENT_WORKER_HASH
from dynamo_infra.render.runtime.records import DGD_KIND, RECORD_API_VERSION
from tests.conftest import REPO
from tests.integration.harness import GraphStack, graph_stack, namespace_object, unique
from tools import toolchain
from tools.localcluster import LocalCluster

GRAPH = (REPO / "examples" / "mocker-agg.yaml").read_text()
# Metadata the API server writes.
SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "namespace")
# Annotations controllers write (Deployment revisions, claim binding).
SERVER_ANNOTATION_PREFIXES = ("deployment.kubernetes.io/", "pv.kubernetes.io/", "volume.")
# Service fields the API server allocates.
SERVICE_ALLOCATED = ("clusterIP", "clusterIPs")


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Iterator[GraphStack]:
    # Unrestricted: the namespace holds only what the stack creates (compared object for object with a
    # `dynamo-infra render` applied by kubectl), not the graphs' RBAC an admin would add.
    options = {"await": {"mode": "skip"}, "restricted": False}
    with graph_stack(tmp_path_factory, cluster, "cli-mocker", GRAPH, **options) as g:
        g.up()
        yield g


def stack_file(g: GraphStack) -> str:
    return str(g.project / "stacks" / f"Pulumi.{g.stack.name}.yaml")


def diff_live(g: GraphStack, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    capsys.readouterr()
    code = cli.main(["diff-live", stack_file(g), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def normalised(obj: Manifest, namespace: str, worker_hash: str = "") -> Manifest:
    """An object without server-set metadata, status, our inventory stamps, its namespace's name and
    the worker hash (which hashes the namespace too)."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in SERVER_METADATA}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != INVENTORY_LABEL}
    annotations = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k != INVENTORY_ANNOTATION and not k.startswith(SERVER_ANNOTATION_PREFIXES)
    }
    meta = {**meta, "labels": labels, "annotations": annotations}
    out = {k: v for k, v in obj.items() if k not in ("metadata", "status")} | {"metadata": meta}
    if obj["kind"] == "Service":
        out["spec"] = {k: v for k, v in out["spec"].items() if k not in SERVICE_ALLOCATED}
    if obj["kind"] == "PersistentVolumeClaim":
        out["spec"] = {k: v for k, v in out["spec"].items() if k != "volumeName"}
    text = json.dumps(out).replace(namespace, "<ns>")
    return cast(Manifest, json.loads(text.replace(worker_hash, "<hash>") if worker_hash else text))


def objects_in(kube: KubeClient, namespace: str, kinds: set[tuple[str, str]]) -> dict[str, Manifest]:
    record = kube.get(stub(RECORD_API_VERSION, DGD_KIND, namespace, "mocker-agg")) or {}
    worker_hash = record["metadata"]["annotations"][ANNOTATION_CURRENT_WORKER_HASH]
    return {
        object_key(o).replace(namespace, "<ns>").replace(worker_hash, "<hash>"): normalised(
            o, namespace, worker_hash
        )
        for api_version, kind in sorted(kinds)
        for o in kube.list(api_version, kind, namespace)
    }


def kubectl() -> str:
    return next(str(d / "kubectl") for d in toolchain.bin_dirs() if (d / "kubectl").exists())


def test_after_up_diff_live_finds_no_drift(deployed: GraphStack, capsys: pytest.CaptureFixture[str]) -> None:
    code, drift = diff_live(deployed, capsys)
    assert drift == []
    assert code == cli.EXIT_OK


def test_rendered_objects_applied_with_kubectl_equal_what_up_created(
    deployed: GraphStack, cluster: LocalCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = unique("cli-render")
    out = tmp_path / "rendered"
    assert cli.main(["render", stack_file(deployed), "--namespace", other, "--out", str(out)]) == cli.EXIT_OK
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml"))
    assert files == [
        "_platform.yaml",
        "mocker-agg/Frontend.yaml",
        "mocker-agg/MockerWorker.yaml",
        "mocker-agg/_claims.yaml",
        "mocker-agg/_records.yaml",
        "mocker-agg/_shared.yaml",
    ]
    rendered = [d for p in sorted(out.rglob("*.yaml")) for d in yaml.safe_load_all(p.read_text())]
    namespaced = {(d["apiVersion"], d["kind"]) for d in rendered if d["metadata"].get("namespace")}
    kube = deployed.kube
    try:
        # The platform first (the namespace), then the graph; one server-side apply.
        applied = subprocess.run(
            [
                kubectl(),
                "--kubeconfig",
                str(cluster.kubeconfig),
                "apply",
                "--server-side",
                "-R",
                "-f",
                str(out),
            ],
            capture_output=True,
            text=True,
        )
        assert applied.returncode == 0, applied.stderr
        ours, theirs = objects_in(kube, other, namespaced), objects_in(kube, deployed.ns, namespaced)
        assert sorted(ours) == sorted(theirs)
        for key in ours:
            assert ours[key] == theirs[key], key
        assert (
            normalised(kube.get(namespace_object(other)) or {}, other)["metadata"]
            == normalised(kube.get(namespace_object(deployed.ns)) or {}, deployed.ns)["metadata"]
        )
    finally:
        kube.delete(namespace_object(other), propagation="Background")


def test_diff_live_reports_exactly_the_edits_made_by_hand(
    deployed: GraphStack, capsys: pytest.CaptureFixture[str]
) -> None:
    kube, ns = deployed.kube, deployed.ns
    frontend = deployed.deployment("mocker-agg-frontend")
    worker = deployed.deployment("mocker-agg-mockerworker")
    env = worker["spec"]["template"]["spec"]["containers"][0]["env"]
    i = next(i for i, e in enumerate(env) if "value" in e)
    kube.patch(frontend, [{"op": "replace", "path": "/spec/replicas", "value": 3}], manager="kubectl")
    kube.patch(
        worker,
        [{"op": "replace", "path": f"/spec/template/spec/containers/0/env/{i}/value", "value": "edited"}],
        manager="kubectl",
    )
    service = next(
        s for s in kube.list("v1", "Service", ns) if s["metadata"]["name"] == "mocker-agg-frontend"
    )
    kube.delete(service)
    kube.wait_deleted(service, 30)
    code, drift = diff_live(deployed, capsys)
    assert code == cli.EXIT_FINDINGS
    assert sorted((d["object"], d["change"], d["field"], d["live"]) for d in drift) == sorted(
        [
            (object_key(frontend), "changed", "spec.replicas", 3),
            (object_key(worker), "changed", f"spec.template.spec.containers[0].env[{i}].value", "edited"),
            (object_key(service), "missing", "", None),
        ]
    )
