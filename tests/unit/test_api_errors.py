"""Bad input: every case yields DynamoValidationError with the exact field path and message."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.api import DynamoValidationError, Problem, load_yaml
from dynamo_infra.api.loader import MAX_YAML_BYTES

QTY = "must be a quantity such as 500m, 2Gi or 1"
# A runtime image whose tag names its version (the operator's webhook requires one).
IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"

ALPHA: dict[str, Any] = {
    "apiVersion": "nvidia.com/v1alpha1",
    "kind": "DynamoGraphDeployment",
    "metadata": {"name": "g"},
    "spec": {
        "services": {
            "Frontend": {
                "componentType": "frontend",
                "replicas": 1,
                "extraPodSpec": {"mainContainer": {"image": IMAGE}},
            },
            "Worker": {
                "componentType": "worker",
                "replicas": 2,
                "resources": {"limits": {"gpu": "1"}},
                "extraPodSpec": {"mainContainer": {"image": IMAGE, "args": ["x"]}},
            },
        }
    },
}
BETA: dict[str, Any] = {
    "apiVersion": "nvidia.com/v1beta1",
    "kind": "DynamoGraphDeployment",
    "metadata": {"name": "g"},
    "spec": {
        "components": [
            {
                "name": "Frontend",
                "type": "frontend",
                "podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}},
            },
            {
                "name": "Worker",
                "type": "worker",
                "podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}},
            },
        ]
    },
}


def alpha(change: Callable[[dict[str, Any]], None]) -> str:
    doc = copy.deepcopy(ALPHA)
    change(doc)
    return yaml.safe_dump(doc)


def beta(change: Callable[[dict[str, Any]], None]) -> str:
    doc = copy.deepcopy(BETA)
    change(doc)
    return yaml.safe_dump(doc)


def svc(doc: dict[str, Any], name: str = "Worker") -> dict[str, Any]:
    return doc["spec"]["services"][name]  # type: ignore[no-any-return]


def comp(doc: dict[str, Any], i: int = 1) -> dict[str, Any]:
    return doc["spec"]["components"][i]  # type: ignore[no-any-return]


def main_c(doc: dict[str, Any]) -> dict[str, Any]:
    return svc(doc)["extraPodSpec"]["mainContainer"]  # type: ignore[no-any-return]


S = "spec.services.Worker"
C = "spec.components[1]"
M = f"{S}.extraPodSpec.mainContainer"

CASES: list[tuple[str, str, list[tuple[str, str]]]] = [
    # --- wrong types ---
    (
        "replicas-string",
        alpha(lambda d: svc(d).update(replicas="2")),
        [(f"{S}.replicas", "must be an integer (got string)")],
    ),
    (
        "replicas-bool",
        alpha(lambda d: svc(d).update(replicas=True)),
        [(f"{S}.replicas", "must be an integer (got boolean)")],
    ),
    (
        "services-list",
        alpha(lambda d: d["spec"].update(services=[])),
        [("spec.services", "must be a mapping (got list)")],
    ),
    (
        "labels-int-value",
        alpha(lambda d: d["spec"].update(labels={"a": 1})),
        [("spec.labels.a", "must be a string (got integer)")],
    ),
    (
        "metadata-name-int",
        alpha(lambda d: d["metadata"].update(name=5)),
        [("metadata.name", "must be a string (got integer)")],
    ),
    (
        "container-port-string",
        alpha(lambda d: main_c(d).update(ports=[{"containerPort": "80"}])),
        [(f"{M}.ports[0].containerPort", "must be an integer (got string)")],
    ),
    (
        "args-not-list",
        alpha(lambda d: main_c(d).update(args="--x")),
        [(f"{M}.args", "must be a list (got string)")],
    ),
    (
        "probe-not-mapping",
        alpha(lambda d: svc(d).update(livenessProbe="x")),
        [(f"{S}.livenessProbe", "must be a mapping (got string)")],
    ),
    (
        "probe-period-string",
        alpha(lambda d: svc(d).update(livenessProbe={"periodSeconds": "10"})),
        [(f"{S}.livenessProbe.periodSeconds", "must be an integer (got string)")],
    ),
    (
        "env-value-int",
        alpha(lambda d: svc(d).update(envs=[{"name": "A", "value": 1}])),
        [(f"{S}.envs[0].value", "must be a string (got integer)")],
    ),
    (
        "beta-replicas-float",
        beta(lambda d: comp(d).update(replicas=1.5)),
        [(f"{C}.replicas", "must be an integer (got number)")],
    ),
    (
        "beta-components-mapping",
        beta(lambda d: d["spec"].update(components={})),
        [("spec.components", "must be a list (got mapping)")],
    ),
    (
        "shm-size-float",
        alpha(lambda d: svc(d).update(sharedMemory={"size": 1.5})),
        [(f"{S}.sharedMemory.size", "must be a string or an integer (got number)")],
    ),
    # --- unknown fields ---
    (
        "unknown-spec-field",
        alpha(lambda d: d["spec"].update(service={})),
        [("spec.service", "unknown field")],
    ),
    ("unknown-service-field", alpha(lambda d: svc(d).update(replica=1)), [(f"{S}.replica", "unknown field")]),
    (
        "unknown-container-field",
        alpha(lambda d: main_c(d).update(imagePullPolicyy="Always")),
        [(f"{M}.imagePullPolicyy", "unknown field")],
    ),
    ("unknown-top-level", alpha(lambda d: d.update(extra=1)), [("extra", "unknown field")]),
    (
        "unknown-beta-component-field",
        beta(lambda d: comp(d).update(services=1)),
        [(f"{C}.services", "unknown field")],
    ),
    (
        "unknown-pod-spec-field",
        beta(lambda d: comp(d)["podTemplate"]["spec"].update(nodeSelectr={})),
        [(f"{C}.podTemplate.spec.nodeSelectr", "unknown field")],
    ),
    # --- bad enums ---
    (
        "backend-framework",
        alpha(lambda d: d["spec"].update(backendFramework="tgi")),
        [("spec.backendFramework", "must be one of 'sglang', 'vllm' or 'trtllm' (got 'tgi')")],
    ),
    (
        "beta-type",
        beta(lambda d: comp(d).update(type="router")),
        [
            (
                f"{C}.type",
                "must be one of 'frontend', 'worker', 'prefill', 'decode', 'planner' or 'epp' (got 'router')",
            )
        ],
    ),
    (
        "gms-mode-case",
        alpha(lambda d: svc(d).update(gpuMemoryService={"enabled": True, "mode": "IntraPod"})),
        [(f"{S}.gpuMemoryService.mode", "must be one of 'intraPod' or 'interPod' (got 'IntraPod')")],
    ),
    (
        "restart-strategy",
        beta(lambda d: d["spec"].update(restart={"id": "1", "strategy": {"type": "Rolling"}})),
        [("spec.restart.strategy.type", "must be one of 'Sequential' or 'Parallel' (got 'Rolling')")],
    ),
    (
        "kube-enum-image-pull-policy-like",
        alpha(lambda d: svc(d).update(envs=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": 3}}}])),
        [(f"{S}.envs[0].valueFrom.fieldRef.fieldPath", "must be a string (got integer)")],
    ),
    # --- missing required ---
    ("missing-spec", alpha(lambda d: d.pop("spec")), [("spec", "required field is missing")]),
    (
        "missing-component-name",
        beta(lambda d: comp(d).pop("name")),
        [(f"{C}.name", "required field is missing")],
    ),
    (
        "missing-env-name",
        alpha(lambda d: svc(d).update(envs=[{"value": "x"}])),
        [(f"{S}.envs[0].name", "required field is missing")],
    ),
    (
        "missing-pvc-name",
        alpha(lambda d: d["spec"].update(pvcs=[{"create": False}])),
        [("spec.pvcs[0].name", "required field is missing")],
    ),
    (
        "missing-restart-id",
        beta(lambda d: d["spec"].update(restart={})),
        [("spec.restart.id", "required field is missing")],
    ),
    (
        "missing-pod-containers",
        beta(lambda d: comp(d)["podTemplate"].update(spec={"nodeSelector": {}})),
        [(f"{C}.podTemplate.spec.containers", "required field is missing")],
    ),
    (
        "missing-volume-mount-path",
        alpha(lambda d: main_c(d).update(volumeMounts=[{"name": "v"}])),
        [(f"{M}.volumeMounts[0].mountPath", "required field is missing")],
    ),
    # --- minimums, patterns, cross-field rules ---
    (
        "node-count-1",
        alpha(lambda d: svc(d).update(multinode={"nodeCount": 1})),
        [(f"{S}.multinode.nodeCount", "must be ≥ 2 (got 1)")],
    ),
    (
        "replicas-negative",
        beta(lambda d: comp(d).update(replicas=-1)),
        [(f"{C}.replicas", "must be ≥ 0 (got -1)")],
    ),
    (
        "pvc-create-incomplete",
        alpha(lambda d: d["spec"].update(pvcs=[{"name": "p", "create": True, "size": "1Gi"}])),
        [("spec.pvcs[0]", "When create is true, size, storageClass, and volumeAccessMode are required")],
    ),
    (
        "min-available-over-replicas",
        alpha(lambda d: svc(d).update(minAvailable=3)),
        [(S, "minAvailable must be less than or equal to replicas unless replicas is 0")],
    ),
    (
        "topology-domain-pattern",
        alpha(lambda d: svc(d).update(topologyConstraint={"packDomain": "Rack_1"})),
        [(f"{S}.topologyConstraint.packDomain", "must match ^[a-z0-9]([a-z0-9-]*[a-z0-9])?$ (got 'Rack_1')")],
    ),
    (
        "component-name-pattern",
        beta(lambda d: comp(d).update(name="bad_name")),
        [(f"{C}.name", "must match ^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$ (got 'bad_name')")],
    ),
    (
        "gms-clients-need-intrapod",
        beta(
            lambda d: comp(d).update(
                experimental={"gpuMemoryService": {"mode": "InterPod", "extraClientContainers": ["a"]}}
            )
        ),
        [
            (
                f"{C}.experimental.gpuMemoryService",
                "extraClientContainers is only supported with mode=IntraPod",
            )
        ],
    ),
    (
        "failover-shadows-max",
        beta(lambda d: comp(d).update(experimental={"failover": {"numShadows": 2}})),
        [(f"{C}.experimental.failover.numShadows", "must be ≤ 1 (got 2)")],
    ),
    (
        "epp-config-needs-epp-type",
        beta(lambda d: comp(d).update(eppConfig={"configMapRef": {"key": "k", "name": "n"}})),
        [(C, "eppConfig may only be set when type is epp")],
    ),
    (
        "epp-config-exactly-one",
        beta(lambda d: comp(d).update(type="epp", eppConfig={})),
        [(f"{C}.eppConfig", "exactly one of configMapRef or config must be specified")],
    ),
    (
        "names-unique-case-insensitively",
        beta(lambda d: comp(d).update(name="frontend")),
        [("spec", "components: component names must be unique case-insensitively")],
    ),
    (
        "kv-policy-exactly-one-source",
        beta(lambda d: d["spec"].update(experimental={"kvTransferPolicy": {"domain": "rack"}})),
        [
            (
                "spec.experimental.kvTransferPolicy",
                "exactly one of labelKey or clusterTopologyName is required",
            )
        ],
    ),
    (
        "kv-policy-weight-needs-preferred",
        beta(
            lambda d: d["spec"].update(
                experimental={"kvTransferPolicy": {"domain": "rack", "labelKey": "k", "preferredWeight": 0.5}}
            )
        ),
        [
            (
                "spec.experimental.kvTransferPolicy",
                "preferredWeight may only be set when enforcement is preferred",
            )
        ],
    ),
    (
        "shared-memory-size-required",
        alpha(lambda d: svc(d).update(sharedMemory={"disabled": False})),
        [(f"{S}.sharedMemory", "size is required when disabled is false")],
    ),
    (
        "checkpoint-job-and-ref",
        beta(
            lambda d: comp(d).update(
                experimental={"checkpoint": {"enabled": True, "checkpointRef": "c", "job": {}}}
            )
        ),
        [(f"{C}.experimental.checkpoint", "checkpoint.job cannot be set when checkpointRef is specified")],
    ),
    (
        "sidecar-needs-image",
        beta(lambda d: comp(d)["podTemplate"]["spec"]["containers"].append({"name": "side"})),
        [(f"{C}.podTemplate.spec", "containers[1]: sidecar containers must specify a non-empty image")],
    ),
    (
        "vllm-backend-annotation",
        beta(
            lambda d: comp(d)["podTemplate"].update(
                metadata={"annotations": {"nvidia.com/vllm-distributed-executor-backend": "mpi"}}
            )
        ),
        [
            (
                f"{C}.podTemplate.metadata",
                "podTemplate backend annotation must be mp or ray, case-insensitively",
            )
        ],
    ),
    (
        "runtime-version-pattern",
        beta(lambda d: comp(d).update(runtimeVersionOverride="v1.0")),
        [
            (
                f"{C}.runtimeVersionOverride",
                r"must match ^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$ (got 'v1.0')",
            )
        ],
    ),
    # --- bad quantities ---
    (
        "quantity-shorthand",
        alpha(lambda d: svc(d).update(resources={"limits": {"memory": "lots"}})),
        [(f"{S}.resources.limits.memory", f"{QTY} (got 'lots')")],
    ),
    (
        "quantity-container-limit",
        alpha(lambda d: main_c(d).update(resources={"limits": {"cpu": "1.5 cores"}})),
        [(f"{M}.resources.limits.cpu", f"{QTY} (got '1.5 cores')")],
    ),
    (
        "quantity-shm-size",
        beta(lambda d: comp(d).update(sharedMemorySize="10Qi")),
        [(f"{C}.sharedMemorySize", f"{QTY} (got '10Qi')")],
    ),
    (
        "quantity-pvc-size",
        alpha(lambda d: d["spec"].update(pvcs=[{"name": "p", "size": "1 GB"}])),
        [("spec.pvcs[0].size", f"{QTY} (got '1 GB')")],
    ),
    (
        "quantity-emptydir",
        beta(
            lambda d: comp(d)["podTemplate"]["spec"].update(
                volumes=[{"name": "v", "emptyDir": {"sizeLimit": "big"}}]
            )
        ),
        [(f"{C}.podTemplate.spec.volumes[0].emptyDir.sizeLimit", f"{QTY} (got 'big')")],
    ),
    # --- versions and kinds ---
    (
        "unsupported-version",
        alpha(lambda d: d.update(apiVersion="nvidia.com/v2")),
        [
            (
                "apiVersion",
                "unsupported DynamoGraphDeployment version 'nvidia.com/v2'; known versions: nvidia.com/v1alpha1, nvidia.com/v1beta1",
            )
        ],
    ),
    ("document-not-mapping", "- a\n- b\n", [("", "must be a mapping (got list)")]),
]


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in CASES], ids=[c[0] for c in CASES])
def test_bad_input(text: str, expected: list[tuple[str, str]]) -> None:
    with pytest.raises(DynamoValidationError) as info:
        load_yaml(text)
    assert info.value.problems == sorted(Problem(p, m) for p, m in expected)


def test_suite_is_large_enough() -> None:
    assert len(CASES) >= 40


def test_every_problem_is_reported_at_once() -> None:
    def change(d: dict[str, Any]) -> None:
        svc(d).update(replicas="x", multinode={"nodeCount": 0})
        main_c(d).update(ports=[{"containerPort": "80"}])

    with pytest.raises(DynamoValidationError) as info:
        load_yaml(alpha(change))
    assert [str(p) for p in info.value.problems] == [
        f"{M}.ports[0].containerPort: must be an integer (got string)",
        f"{S}.multinode.nodeCount: must be ≥ 2 (got 0)",
        f"{S}.replicas: must be an integer (got string)",
    ]


def test_yaml_syntax_error_names_line_and_column() -> None:
    with pytest.raises(DynamoValidationError) as info:
        load_yaml("apiVersion: nvidia.com/v1alpha1\nkind: [unclosed\n")
    assert [str(p) for p in info.value.problems] == [
        "invalid YAML: line 3, column 1: did not find expected ',' or ']'"
    ]


def test_duplicate_keys_are_rejected() -> None:
    with pytest.raises(DynamoValidationError) as info:
        load_yaml("a: 1\na: 2\n")
    assert info.value.problems[0].message.startswith("invalid YAML: line 2, column 1: duplicate key 'a'")


def test_tab_indentation() -> None:
    with pytest.raises(DynamoValidationError, match="invalid YAML: line 2"):
        load_yaml("spec:\n\tservices: {}\n")


@pytest.mark.parametrize("text", ["", "\n", "---\n", "# only a comment\n", "---\n---\n"])
def test_empty_input(text: str) -> None:
    with pytest.raises(DynamoValidationError) as info:
        load_yaml(text)
    assert [str(p) for p in info.value.problems] == ["no YAML documents found"]


def test_empty_file_carries_file_name(tmp_path: Path) -> None:
    f = tmp_path / "empty.yaml"
    f.write_text("")
    with pytest.raises(DynamoValidationError) as info:
        load_yaml(f)
    assert info.value.source == str(f)
    assert str(info.value) == f"{f}: no YAML documents found"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DynamoValidationError) as info:
        load_yaml(tmp_path / "nope.yaml")
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: cannot read file: No such file or directory"


def test_huge_file_is_refused_without_parsing(tmp_path: Path) -> None:
    f = tmp_path / "huge.yaml"
    f.write_bytes(b"# padding\n" * (MAX_YAML_BYTES // 10 + 1))
    with pytest.raises(DynamoValidationError) as info:
        load_yaml(f)
    assert info.value.problems == [
        Problem("", f"file is too large ({f.stat().st_size} bytes; at most {MAX_YAML_BYTES})")
    ]


def test_large_valid_file_loads(tmp_path: Path) -> None:
    docs = []
    for i in range(200):
        d = copy.deepcopy(ALPHA)
        d["metadata"]["name"] = f"g{i}"
        docs.append(d)
    f = tmp_path / "many.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    assert len(load_yaml(f).graphs) == 200


def test_multi_document_errors_are_prefixed(tmp_path: Path) -> None:
    good = yaml.safe_dump(ALPHA)
    bad = alpha(lambda d: svc(d).update(replicas=-1))
    f = tmp_path / "two.yaml"
    f.write_text(good + "---\n" + bad)
    with pytest.raises(DynamoValidationError) as info:
        load_yaml(f)
    assert str(info.value) == f"{f}: documents[1].{S}.replicas: must be ≥ 0 (got -1)"


def test_non_utf8_file(tmp_path: Path) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(DynamoValidationError, match="not UTF-8 text"):
        load_yaml(f)


def test_deeply_nested_yaml() -> None:
    with pytest.raises(DynamoValidationError) as info:
        load_yaml("a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert [str(p) for p in info.value.problems] == ["invalid YAML: nested too deeply"]


WEIRD = """apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  components:
  - name: W
    podTemplate:
      metadata: {labels: {%s}}
      spec:
        containers: [{name: main, image: "img:1.4.0", %s}]
"""
P = "spec.components[0].podTemplate"


@pytest.mark.parametrize(
    ("labels", "container", "expected"),
    [
        ("a: !!binary aGVsbG8=", "args: [x]", f"{P}.metadata.labels.a: unsupported value of type bytes"),
        (
            "a: b",
            "env: [{name: x, value: !!set {a}}]",
            f"{P}.spec.containers[0].env[0].value: unsupported value of type set",
        ),
        ("a: b", "args: [.nan]", f"{P}.spec.containers[0].args[0]: must be a finite number (got nan)"),
        (
            "a: b",
            "ports: [{containerPort: 99999999999999999999999}]",
            f"{P}.spec.containers[0].ports[0].containerPort: must be ≤ 2147483647 (got 99999999999999999999999)",
        ),
        (
            "? [a]\n        : b",
            "args: [x]",
            "invalid YAML: line 8, column 29: a mapping key must be a scalar (line 8, column 29)",
        ),
    ],
)
def test_values_without_a_json_form(labels: str, container: str, expected: str) -> None:
    with pytest.raises(DynamoValidationError) as info:
        load_yaml(WEIRD % (labels, container))
    assert [str(p) for p in info.value.problems] == [expected]


def test_timestamps_and_scalar_keys_stay_strings_as_in_kubernetes() -> None:
    g = load_yaml(WEIRD % ("1: a, on: 2024-01-01", "args: [2024-01-01T00:00:00Z]")).graphs[0]
    template = g.to_manifest()["spec"]["components"][0]["podTemplate"]
    assert template["metadata"]["labels"] == {"1": "a", "true": "2024-01-01"}
    assert template["spec"]["containers"][0]["args"] == ["2024-01-01T00:00:00Z"]


def test_python_input_with_non_string_keys() -> None:
    from dynamo_infra.api import v1alpha1

    with pytest.raises(DynamoValidationError) as info:
        v1alpha1.DynamoGraphDeployment.parse({"metadata": {"name": "g"}, "spec": {"labels": {1: "a"}}})
    assert [str(p) for p in info.value.problems] == [
        "spec.labels.1: mapping keys must be strings (got integer)"
    ]
