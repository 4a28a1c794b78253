"""preview-summary: `pulumi preview --json` steps -> model -> Markdown (pure)."""

from __future__ import annotations

import base64
import copy
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dynamo_infra.cli.main import EXIT_ERROR, EXIT_OK, main
from dynamo_infra.cli.preview_markdown import HIDDEN, comment
from dynamo_infra.cli.preview_model import (
    SECRET_SIG,
    SIG_KEY,
    UNKNOWN_SENTINEL,
    PreviewJsonError,
    load_preview,
    summarize,
)

WORKLOAD = "dynamo-infra:index:DynamoGraphDeployment$dynamo-infra:index:DynamoComponentDeployment$pulumi-python:dynamic:Resource"
SECRET_TYPE = "dynamo-infra:index:Platform$kubernetes:core/v1:Secret"


def deployment(name: str, replicas: int = 1, image: str = "img:1.4.0") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "replicas": replicas,
            "template": {
                "spec": {"containers": [{"name": "main", "image": image}, {"name": "side", "image": "s"}]}
            },
        },
    }


def key(obj: dict[str, Any]) -> str:
    return f"{obj['apiVersion']}/{obj['kind']}/ns/{obj['metadata']['name']}"


def workload_inputs(graph: str, component: str, *objs: dict[str, Any]) -> dict[str, Any]:
    return {
        "__provider": "gASV-pickled",
        "kubeconfig": "[secret]",
        "graph": graph,
        "component": component,
        "namespace": "ns",
        "objects": {key(o): o for o in objs},
        "await": {"mode": "skip"},
    }


def step(
    op: str, name: str, rtype: str, old: dict[str, Any] | None, new: dict[str, Any] | None
) -> dict[str, Any]:
    urn = f"urn:pulumi:dev::dynamo-infra::{rtype}::{name}"
    out: dict[str, Any] = {"op": op, "urn": urn}
    if old is not None:
        out["oldState"] = {"urn": urn, "custom": True, "type": rtype.rsplit("$", 1)[-1], "inputs": old}
    if new is not None:
        out["newState"] = {"urn": urn, "custom": True, "type": rtype.rsplit("$", 1)[-1], "inputs": new}
    return out


def preview(*steps: dict[str, Any]) -> dict[str, Any]:
    stack = step("same", "dynamo-infra-dev", "pulumi:pulumi:Stack", {}, {})
    return {"steps": [stack, *steps], "changeSummary": {"update": len(steps)}}


def update(graph: str, component: str, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    return step(
        "update", f"{graph}-{component.lower()}-workload", WORKLOAD,
        workload_inputs(graph, component, old), workload_inputs(graph, component, new),
    )  # fmt: skip


def test_replica_change_scales_without_restart() -> None:
    s = summarize(preview(update("g", "Worker", deployment("g-worker"), deployment("g-worker", replicas=3))))
    [obj] = list(s.graphs[0].objects())
    assert (obj.op, obj.restart, obj.scale) == ("update", "", "replicas 1 -> 3")
    text = comment(s)
    assert "`spec.replicas`: `1` → `3`" in text
    assert "**1 graph**: 1 object updated, 0 created, 0 deleted; 0 rollouts of pods" in text
    assert "scaled, no restart" in text


def test_image_change_is_a_rollout_and_named_lists_match_by_name() -> None:
    new = deployment("g-worker", image="img:1.4.1")
    new["spec"]["template"]["spec"]["containers"].reverse()  # order alone is no change
    s = summarize(preview(update("g", "Worker", deployment("g-worker"), new)))
    [obj] = list(s.graphs[0].objects())
    assert obj.restart == "pod template changed"
    assert [f.path for f in obj.fields] == ["spec.template.spec.containers[main].image"]
    assert "1 rollout of pods (`g/Worker`)" in comment(s)


def test_a_new_worker_hash_pairs_the_renamed_deployment() -> None:
    s = summarize(
        preview(update("g", "Worker", deployment("g-worker-aaaa1111"), deployment("g-worker-bbbb2222")))
    )
    [obj] = list(s.graphs[0].objects())
    assert (obj.op, obj.old_key.rsplit("/", 1)[-1]) == ("replace", "g-worker-aaaa1111")
    assert obj.restart and "(was `g-worker-aaaa1111`)" in comment(s)


def test_components_added_and_removed_and_plumbing_ignored() -> None:
    added = step("create", "g-new-workload", WORKLOAD, None, workload_inputs("g", "New", deployment("g-new")))
    removed = step(
        "delete", "g-old-workload", WORKLOAD, workload_inputs("g", "Old", deployment("g-old")), None
    )
    component = step(
        "create",
        "g-new",
        "dynamo-infra:index:DynamoGraphDeployment$dynamo-infra:index:DynamoComponentDeployment",
        None,
        {},
    )
    component["newState"]["custom"] = False
    plumbing = step(
        "update",
        "g-worker-workload",
        WORKLOAD,
        {**workload_inputs("g", "W"), "admission": {"graph": {"spec": {"replicas": 1}}, "features": {}}},
        {
            **workload_inputs("g", "W"),
            "__provider": "other",
            "kubeconfigFrom": "dynamo-infra:kubeconfigPath",
            "admission": {"graph": {"spec": {"replicas": 2}}, "features": {}},
        },
    )
    s = summarize(preview(added, removed, component, plumbing))
    assert [(c.name, c.op) for c in s.graphs[0].components] == [("New", "added"), ("Old", "removed")]
    text = comment(s)
    assert "0 objects updated, 1 created, 1 deleted" in text
    assert "`spec.replicas`: added `1`" in text and "its pods are deleted" in text
    assert "__provider" not in text and "kubeconfig" not in text and "admission" not in text


def secret(data: dict[str, str]) -> dict[str, Any]:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "mpi", "namespace": "ns"},
        "data": encoded,
    }


def test_secrets_are_never_shown() -> None:
    old, new = secret({"private.key": "OLD-PLAINTEXT"}), secret({"private.key": "NEW-PLAINTEXT"})
    marked = copy.deepcopy(new)
    marked["data"] = {SIG_KEY: SECRET_SIG, "value": {"private.key": "SIGNED-PLAINTEXT"}}
    env = deployment("g-w")
    env["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "TOKEN", "value": "[secret]"}]
    steps = [
        step("update", "platform-mpi", SECRET_TYPE, old, new),
        step("update", "platform-mpi2", SECRET_TYPE, old, marked),
        update("g", "W", deployment("g-w"), env),
    ]
    text = comment(summarize(preview(*steps)))
    for plain in ("OLD-PLAINTEXT", "NEW-PLAINTEXT", "SIGNED-PLAINTEXT", "[secret]"):
        assert plain not in text and base64.b64encode(plain.encode()).decode() not in text
    assert (
        f"`data`: {HIDDEN}" in text
        and f"`spec.template.spec.containers[main].env[TOKEN]`: added {HIDDEN}" not in text
    )
    assert "secret data hidden" in text and "are never shown" in text


def test_unknowns_are_explained() -> None:
    new = workload_inputs("g", "W")
    new["objects"] = UNKNOWN_SENTINEL
    image = deployment("g-x", image="output<string>")
    s = summarize(preview(step("update", "g-w-workload", WORKLOAD, workload_inputs("g", "W"), new),
                          update("g", "X", deployment("g-x"), image)))  # fmt: skip
    text = comment(s)
    assert "its Kubernetes objects are known only after apply" in text
    assert "`img:1.4.0` → (known only after apply)" in text and "`pulumi up` fills them in" in text


def many_graphs(n: int) -> dict[str, Any]:
    steps = []
    for i in range(n):
        g = f"graph-{i:02d}"
        old = deployment(f"{g}-w", image="img:1.4.0")
        new = deployment(f"{g}-w", image="img:1.4.1", replicas=2)
        new["metadata"]["labels"] = {f"label-{j}": "x" * 40 for j in range(10)}
        steps.append(update(g, "Worker", old, new))
        steps.append(
            step("create", f"{g}-extra", WORKLOAD, None, workload_inputs(g, "Extra", deployment(f"{g}-e")))
        )
    return preview(*steps)


@pytest.mark.parametrize("limit", [60_000, 12_000, 4_000, 1_500])
def test_the_comment_fits_the_limit_and_says_what_it_cut(limit: int) -> None:
    s = summarize(many_graphs(20))
    full = comment(s, 10**9)
    assert len(full) > 12_000
    text = comment(s, limit)
    assert len(text) <= limit
    assert text.startswith("### Pulumi preview") and "20 graphs" in text
    if limit < len(full):
        assert "Cut to fit" in text or "Cut here to fit" in text
    else:
        assert text == full


def test_cuts_go_least_important_first() -> None:
    s = summarize(many_graphs(20))
    full = comment(s, 10**9)
    first = comment(s, len(full) - 1)
    assert "field values of created and deleted objects" in first
    assert "`spec.template.spec.containers[main].image`: `img:1.4.0` → `img:1.4.1`" in first
    tight = comment(s, 6_000)
    assert "graphs shown as one line" in tight and "(details cut to fit)" in tight


def test_not_a_preview_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PreviewJsonError):
        load_preview("not json")
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert main(["preview-summary", "--json", str(bad)]) == EXIT_ERROR
    assert main(["preview-summary", "--json", str(tmp_path / "missing.json")]) == EXIT_ERROR


def test_cli_reads_a_file_or_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.dumps(preview(update("g", "W", deployment("g-w"), deployment("g-w", replicas=2))))
    src, out = tmp_path / "p.json", tmp_path / "c.md"
    src.write_text(data)
    assert main(["preview-summary", "--json", str(src), "--out", str(out), "--title", "dev"]) == EXIT_OK
    assert out.read_text().startswith("### Pulumi preview of stack `dev`")
    monkeypatch.setattr(sys, "stdin", io.StringIO(data))
    assert main(["preview-summary", "--json", "-"]) == EXIT_OK
    assert "`spec.replicas`: `1` → `2`" in capsys.readouterr().out


def test_a_replacement_is_shown_once_and_a_config_map_restarts_nothing() -> None:
    cm_type = "dynamo-infra:index:Platform$kubernetes:core/v1:ConfigMap"
    old = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "ns"},
        "data": {"a": "1"},
    }
    new = {**old, "data": {"a": "2"}}
    steps = [
        step(op, "platform-cfg", cm_type, old, new)
        for op in ("create-replacement", "replace", "delete-replaced")
    ]
    s = summarize(preview(*steps))
    [obj] = list(s.graphs[0].objects())
    assert (obj.op, obj.restart, obj.scale) == ("update", "", "")
    text = comment(s)
    assert "`data.a`: `1` → `2`" in text and "0 rollouts of pods" in text and "the platform:" in text


CRD_TYPE = "dynamo-infra:index:Platform$kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
CRDS_TYPE = "dynamo-infra:index:Platform$pulumi-python:dynamic:Resource"


def crd(name: str, served: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": "nvidia.com", "versions": [{"name": "v1beta1", "served": served}]},
    }


def released(name: str) -> dict[str, Any]:
    """A pulumi-kubernetes CRD leaving the stack with `retainOnDelete`."""
    out = step("delete", f"platform-{name}", CRD_TYPE, crd(name), None)
    out["oldState"]["retainOnDelete"] = True
    return out


def test_crds_moving_into_one_resource_show_only_what_changes_and_what_stays_behind() -> None:
    from dynamo_infra.api.manifest import pack

    written = {c["metadata"]["name"]: c for c in (crd("a.nvidia.com", served=False), crd("b.nvidia.com"))}
    inputs = {
        "kubeconfigFrom": "k",
        "definitions": {n: "digest" for n in written},
        "manifests": pack(written),
    }
    s = summarize(
        preview(
            released("a.nvidia.com"),
            released("b.nvidia.com"),
            released("c.nvidia.com"),
            step("create", "platform-crds", CRDS_TYPE, None, inputs),
        )
    )
    [platform] = s.graphs
    ops = {(c.name, c.op): [(o.op, o.key.rsplit("/", 1)[-1]) for o in c.objects] for c in platform.components}
    # b is written as it was (no change shown), a changes one field, c stays in the cluster as it is.
    assert ops == {
        ("c.nvidia.com", "released"): [("keep", "c.nvidia.com")],
        ("crds", "added"): [("update", "a.nvidia.com")],
    }
    [changed] = [o for c in platform.components for o in c.objects if o.op == "update"]
    assert [(f.path, f.old, f.new) for f in changed.fields] == [
        ("spec.versions[v1beta1].served", True, False)
    ]
    text = comment(s)
    assert (
        "kept in the cluster, no longer in the stack `apiextensions.k8s.io/v1/CustomResourceDefinition/c.nvidia.com`"
        in text
    )
    assert "digest" not in text and "kubeconfigFrom" not in text


def test_a_deleted_resource_without_retain_still_deletes_its_objects() -> None:
    s = summarize(preview(step("delete", "platform-c.nvidia.com", CRD_TYPE, crd("c.nvidia.com"), None)))
    assert [(o.op, o.key.rsplit("/", 1)[-1]) for o in s.graphs[0].objects()] == [("delete", "c.nvidia.com")]
