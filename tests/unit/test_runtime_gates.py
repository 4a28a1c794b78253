"""The operator's runtime-version gates as rendering applies them: each gate on both sides of 1.5.0,
an unresolvable tag renders as at our pin, `runtimeVersionOverride` wins over the tag, the 1.6.1
wheel's own graphs render with the >= 1.5 defaults, and an image upgrade 1.4.0 -> 1.6.1 starts a new
worker generation whose changed fields a preview shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dynamo_infra.api import DynamoValidationError, admission, releases, v1beta1
from dynamo_infra.api.admission import OperatorFeatures
from dynamo_infra.cli.preview_model import diff_objects, object_key
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import RenderedGraph, render_graph
from tests.conftest import CORPUS, load_corpus
from tests.dcd import render_dcd

NS = "team"
RUNTIME = "nvcr.io/nvidia/ai-dynamo/vllm-runtime"
WORKER_CMD = {"command": ["python3", "-m", "dynamo.vllm"], "args": ["--model", "m"]}
WHEEL = CORPUS / "graphs-1.6" / "wheel"
WORKER_TYPES = ("worker", "prefill", "decode")


def dgd(image: str, override: str | None = None, *extra: dict[str, Any]) -> v1beta1.DynamoGraphDeployment:
    worker: dict[str, Any] = {
        "name": "worker",
        "type": "worker",
        "podTemplate": {"spec": {"containers": [{"name": "main", "image": image, **WORKER_CMD}]}},
    }
    if override:
        worker["runtimeVersionOverride"] = override
    return v1beta1.DynamoGraphDeployment.parse(
        {
            "apiVersion": v1beta1.API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": "g"},
            "spec": {"components": [worker, *extra]},
        }
    )


def render(graph: Any, **options: Any) -> RenderedGraph:
    return render_graph(graph, ClusterOptions.parse(options), NS)


def main_container(r: RenderedGraph, name: str) -> dict[str, Any]:
    deployment = next(o for o in r.components[name].objects if o["kind"] == "Deployment")
    return dict(deployment["spec"]["template"]["spec"]["containers"][0])


def env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


# --- resolution -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "override", "want"),
    [
        ("nvcr.io/nvidia/ai-dynamo/runtime:v1.5.0-cuda13", None, "1.5.0"),
        ("nvcr.io/nvidia/ai-dynamo/runtime:1.5.0", "1.4.0", "1.4.0"),  # the override is authoritative
        ("nvcr.io/nvidia/ai-dynamo/runtime:1.5.0", "invalid", None),  # no fall back to the tag
        ("registry.example/runtime:sha-123", None, None),
        ("registry.example/runtime@sha256:" + "0" * 64, None, None),
        ("registry.example/runtime:custom", "1.5.0", "1.5.0"),
    ],
)
def test_resolve_is_runtimeversion_resolve(image: str, override: str | None, want: str | None) -> None:
    version = releases.resolve(image, override)
    assert (None if version is None else str(version)) == want


def test_no_gate_precedes_the_version_in_the_worker_hash() -> None:
    """A gate below 1.5.0 would change a worker generation whose hash does not move (hash_test.go)."""
    for gate in releases.GATES:
        assert gate.since >= releases.RUNTIME_VERSION_IN_WORKER_HASH.since, gate.name


# --- worker defaults ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "override", "gated"),
    [
        (f"{RUNTIME}:1.4.9", None, False),
        (f"{RUNTIME}:1.5.0", None, True),
        (f"{RUNTIME}:v1.6.1-cuda13", None, True),
        (f"{RUNTIME}:latest", None, False),  # unresolvable: as at our pin
        (f"{RUNTIME}:latest", "1.5.0", True),  # the override decides
        (f"{RUNTIME}:1.6.1", "1.4.0", False),  # the override wins over the tag
    ],
)
def test_worker_canary_health_checks_and_liveness_follow_the_runtime_version(
    image: str, override: str | None, gated: bool
) -> None:
    main = main_container(render(dgd(image, override)), "worker")
    assert env(main)["DYN_HEALTH_CHECK_ENABLED"] == ("true" if gated else "false")
    assert main["livenessProbe"]["failureThreshold"] == (3 if gated else 1)
    assert main["readinessProbe"]["failureThreshold"] == 3
    assert main["startupProbe"]["failureThreshold"] == 720


@pytest.mark.parametrize("subtype", ["prefill", "decode"])
def test_no_backend_opts_out_of_canary_health_checks(subtype: str) -> None:
    """The 1.6.0 operator's backends leave DYN_HEALTH_CHECK_ENABLED alone (decode workers included)."""
    graph = dgd(f"{RUNTIME}:1.6.1").to_wire()
    graph["spec"]["components"][0]["type"] = subtype
    graph["spec"]["components"][0]["podTemplate"]["spec"]["containers"][0]["args"] += [
        "--disaggregation-mode",
        subtype,
    ]
    main = main_container(render(v1beta1.DynamoGraphDeployment.parse(graph)), "worker")
    assert env(main)["DYN_HEALTH_CHECK_ENABLED"] == "true"


def test_a_user_value_wins_over_the_gated_default() -> None:
    graph = dgd(f"{RUNTIME}:1.6.1").to_wire()
    graph["spec"]["components"][0]["podTemplate"]["spec"]["containers"][0]["env"] = [
        {"name": "DYN_HEALTH_CHECK_ENABLED", "value": "false"}
    ]
    main = main_container(render(v1beta1.DynamoGraphDeployment.parse(graph)), "worker")
    assert env(main)["DYN_HEALTH_CHECK_ENABLED"] == "false"


def test_without_runtime_version_gates_every_image_renders_as_at_the_pin() -> None:
    gated = render(dgd(f"{RUNTIME}:1.6.1"))
    pin = render(dgd(f"{RUNTIME}:1.6.1"), runtimeVersionGates=False)
    assert env(main_container(pin, "worker"))["DYN_HEALTH_CHECK_ENABLED"] == "false"
    assert main_container(pin, "worker")["livenessProbe"]["failureThreshold"] == 1
    assert pin.worker_hash != gated.worker_hash


def test_a_planner_keeps_its_probes() -> None:
    """IncreasedWorkerFailureThreshold is the worker's; the planner's system probes do not move."""
    planner = {
        "name": "planner",
        "type": "planner",
        "podTemplate": {"spec": {"containers": [{"name": "main", "image": f"{RUNTIME}:1.6.1"}]}},
    }
    r = render(dgd(f"{RUNTIME}:1.6.1", None, planner))
    assert main_container(r, "planner")["livenessProbe"]["failureThreshold"] == 1


def test_an_invalid_override_fails_the_render() -> None:
    """generateComponentContext: `resolve runtime version override: …` (the CRD pattern refuses it first)."""
    dcd = {
        "apiVersion": v1beta1.API_VERSION,
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": "w", "namespace": NS},
        "spec": {
            "name": "w",
            "type": "worker",
            "runtimeVersionOverride": "1.5",
            "podTemplate": {"spec": {"containers": [{"name": "main", "image": f"{RUNTIME}:1.6.1"}]}},
        },
    }
    with pytest.raises(DynamoValidationError, match="resolve runtime version override"):
        render_dcd(dcd)


# --- EPP ----------------------------------------------------------------------------------------


def epp(image: str, config: bool, **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {
        "name": "epp",
        "type": "epp",
        "podTemplate": {"spec": {"containers": [{"name": "main", "image": image}]}},
        **extra,
    }
    if config:
        c["eppConfig"] = {"configMapRef": {"name": "mine", "key": "cfg.yaml"}}
    return c


def test_native_rust_epp_from_1_5_0() -> None:
    r = render(dgd(f"{RUNTIME}:1.6.1", None, epp("nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.6.1", False)))
    deployment = next(o for o in r.components["epp"].objects if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    main = pod["containers"][0]
    assert "args" not in main
    assert env(main)["HOME"] == "/home/dynamo"
    mounts = {m["name"]: m["mountPath"] for m in main["volumeMounts"]}
    assert mounts["hf-cache"] == "/home/dynamo/.cache" and "epp-config" not in mounts
    volumes = {v["name"] for v in pod["volumes"]}
    assert "hf-cache" in volumes and "epp-config" not in volumes
    kinds = [o["kind"] for o in r.shared]
    assert "ConfigMap" not in kinds and "InferencePool" in kinds


def test_legacy_go_epp_below_1_5_0() -> None:
    r = render(dgd(f"{RUNTIME}:1.4.0", None, epp("nvcr.io/nvidia/ai-dynamo/epp:1.4.0", True)))
    deployment = next(o for o in r.components["epp"].objects if o["kind"] == "Deployment")
    main = deployment["spec"]["template"]["spec"]["containers"][0]
    assert main["args"][-2:] == ["--config-file", "/etc/epp/epp-config-dynamo.yaml"]
    assert "HOME" not in env(main)
    mounts = {m["name"]: m["mountPath"] for m in main["volumeMounts"]}
    assert (mounts["epp-config"], mounts["hf-cache"]) == ("/etc/epp", "/home/nonroot/.cache")


@pytest.mark.parametrize(
    ("image", "config", "replicas", "want"),
    [
        (
            "epp:1.6.1",
            True,
            None,
            [
                "spec.components[epp].eppConfig: Forbidden: must be omitted for native Rust EPP images with runtime version 1.5.0 or later"
            ],
        ),
        ("epp:1.6.1", False, 2, []),  # the native EPP replicates
        (
            "epp:1.4.0",
            False,
            None,
            ["spec.components[epp].eppConfig: Required value: is required for EPP components"],
        ),
        (
            "epp:1.4.0",
            True,
            2,
            ["spec.components[epp].replicas: Invalid value: 2: EPP component must have exactly 1 replica"],
        ),
    ],
)
def test_the_webhook_ties_eppconfig_to_the_runtime_version(
    image: str, config: bool, replicas: int | None, want: list[str]
) -> None:
    extra = {} if replicas is None else {"replicas": replicas}
    doc = dgd(f"{RUNTIME}:1.6.1", None, epp(image, config, **extra))
    problems = [str(p) for p in admission.review(doc, OperatorFeatures()).problems if "[epp]" in p.path]
    assert problems == want


# --- the 1.6.1 wheel's graphs -------------------------------------------------------------------


def wheel_files() -> list[Path]:
    return sorted(WHEEL.glob("*.yaml"))


def test_the_wheel_holds_its_seven_templates() -> None:
    assert len(wheel_files()) == 7


@pytest.mark.parametrize("path", wheel_files(), ids=lambda p: p.name)
def test_wheel_graphs_render_with_the_1_5_defaults(path: Path) -> None:
    (graph,) = load_corpus(path).graphs
    r = render(graph)
    pin = render(graph, runtimeVersionGates=False)
    assert r.worker_hash and r.worker_hash != pin.worker_hash
    workers = [c for c in r.components.values() if c.type in WORKER_TYPES]
    assert workers
    for c in workers:
        assert c.dcd_name.endswith(f"-{r.worker_hash}")
        assert (c.dcd or {})["metadata"]["labels"]["nvidia.com/dynamo-worker-hash"] == r.worker_hash
        main = main_container(r, c.name)
        e = env(main)
        assert e["DYN_HEALTH_CHECK_ENABLED"] == "true"
        assert e["DYN_NAMESPACE_WORKER_SUFFIX"] == r.worker_hash
        assert main["livenessProbe"]["failureThreshold"] == 3
    assert r.annotations["nvidia.com/current-worker-hash-v2"] == r.worker_hash


# --- an image upgrade ---------------------------------------------------------------------------


def objects_by_key(r: RenderedGraph, component: str) -> dict[str, Any]:
    return {object_key(o): o for o in r.components[component].objects}


def test_an_image_upgrade_to_1_6_1_starts_a_new_worker_generation() -> None:
    before = render(dgd(f"{RUNTIME}:1.4.0"))
    after = render(dgd(f"{RUNTIME}:1.6.1"))
    assert before.worker_hash != after.worker_hash
    assert after.components["worker"].dcd_name == f"g-worker-{after.worker_hash}"
    changes = diff_objects(objects_by_key(before, "worker"), objects_by_key(after, "worker"))
    deployment = next(c for c in changes if c.kind == "Deployment")
    assert deployment.op == "replace"
    assert deployment.old_key.endswith(f"g-worker-{before.worker_hash}")
    assert deployment.key.endswith(f"g-worker-{after.worker_hash}")
    changed = {(f.path, str(f.old), str(f.new)) for f in deployment.fields}
    container = "spec.template.spec.containers[main]"
    assert (f"{container}.image", f"{RUNTIME}:1.4.0", f"{RUNTIME}:1.6.1") in changed
    assert (f"{container}.env[DYN_HEALTH_CHECK_ENABLED].value", "false", "true") in changed
    assert (f"{container}.livenessProbe.failureThreshold", "1", "3") in changed
    assert deployment.restart


# --- Grove worker cliques (PR #12769) -----------------------------------------------------------


@pytest.mark.parametrize(("tag", "suffixed"), [("1.4.0", False), ("1.6.1", True)])
def test_grove_worker_cliques_carry_the_worker_hash_from_1_5_0(tag: str, suffixed: bool) -> None:
    r = render(dgd(f"{RUNTIME}:{tag}"), multinode={"orchestrator": "grove"})
    (clique,) = r.workloads[0]["spec"]["template"]["cliques"]
    main = clique["spec"]["podSpec"]["containers"][0]
    want = r.worker_hash if suffixed else None
    assert clique["labels"].get("nvidia.com/dynamo-worker-hash") == want
    assert env(main).get("DYN_NAMESPACE_WORKER_SUFFIX") == want
