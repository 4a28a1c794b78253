"""The worker hash of a v1alpha1 graph with EFA `resources.custom`, a compilation-cache mount,
`envFromSecret` and `spec.pvcs` with `create: false`, against the operator at the parity pin.

`efa_compilation_cache.hash-input.json` is what the pin's own code (ai-dynamo/dynamo cdf9267d:
v1alpha1 `ConvertTo`, then `ComputeDGDWorkersSpecHash` in internal/dynamo/hash.go) marshals for
`efa_compilation_cache.yaml` in namespace `default`, printed by tools/workerhashref.
"""

from __future__ import annotations

import hashlib

import pytest

from dynamo_infra.api import v1alpha1, v1beta1
from dynamo_infra.api.conversion import convert_to
from dynamo_infra.api.loader import load_yaml
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import worker_hash
from dynamo_infra.render.graph import graph_context, graph_worker_hash
from dynamo_infra.render.workloads.dcd import generate_dcd
from tests.conftest import DATA

GRAPH = DATA / "graphs" / "efa_compilation_cache.yaml"
EXPECTED_INPUT = DATA / "graphs" / "efa_compilation_cache.hash-input.json"
# ComputeDGDWorkersSpecHash of the graph at the pin (tools/workerhashref).
EXPECTED_HASH = "eb367475"
NAMESPACE = "default"


def _alpha(text: str) -> v1alpha1.DynamoGraphDeployment:
    dgd = load_yaml(text, admission=False).graphs[0]
    assert isinstance(dgd, v1alpha1.DynamoGraphDeployment)
    return dgd


def _hash_input(dgd: v1alpha1.DynamoGraphDeployment) -> str:
    g = graph_context(dgd, ClusterOptions.parse({"namespace": NAMESPACE}), NAMESPACE)
    return worker_hash.hash_input(
        {
            c.name: (generate_dcd(g, c, worker_hash.PLACEHOLDER), g.legacy.component(c.name))
            for c in g.dgd.spec.components or []
            if c.is_worker
        }
    )


def test_hash_input_is_the_pin_operators_byte_for_byte() -> None:
    dgd = _alpha(GRAPH.read_text(encoding="utf-8"))
    expected = EXPECTED_INPUT.read_text(encoding="utf-8").rstrip("\n")
    assert _hash_input(dgd) == expected
    assert hashlib.sha256(expected.encode()).hexdigest()[:8] == EXPECTED_HASH
    g = graph_context(dgd, ClusterOptions.parse({"namespace": NAMESPACE}), NAMESPACE)
    assert graph_worker_hash(g) == EXPECTED_HASH


def test_compilation_cache_mount_stays_in_the_main_container_in_place() -> None:
    """buildMainContainerFromDedicated mounts every flat volumeMount, the cache one included."""
    hub = convert_to(_alpha(GRAPH.read_text(encoding="utf-8")), v1beta1.DynamoGraphDeployment)
    decode, prefill = hub.component("Decode"), hub.component("Prefill")
    assert decode.pod_template is not None and prefill.pod_template is not None
    decode_main, prefill_main = decode.pod_template.container("main"), prefill.pod_template.container("main")
    assert decode_main is not None and prefill_main is not None
    assert decode_main["volumeMounts"] == [
        {"name": "model-cache", "mountPath": "/cache/hf"},
        {"name": "compilation-cache", "mountPath": "/cache/vllm"},
        {"name": "datasets", "mountPath": "/data"},
    ]
    assert prefill_main["volumeMounts"] == [
        {"name": "compilation-cache", "mountPath": ""},
        {"name": "model-cache", "mountPath": "/cache/hf"},
    ]
    assert decode.to_wire()["compilationCache"] == {
        "pvcName": "compilation-cache",
        "mountPath": "/cache/vllm",
    }
    assert prefill.to_wire()["compilationCache"] == {"pvcName": "compilation-cache"}


def test_round_trip_keeps_the_alpha_graph() -> None:
    alpha = _alpha(GRAPH.read_text(encoding="utf-8"))
    hub = convert_to(alpha, v1beta1.DynamoGraphDeployment)
    back = convert_to(hub, v1alpha1.DynamoGraphDeployment)
    assert back.to_wire()["spec"] == alpha.to_wire()["spec"]


WORKER = """
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  services:
    W: {componentType: worker, replicas: 1, %s}
"""


@pytest.mark.parametrize(
    ("fields", "template"),
    [
        # hasPodTemplateContent: present counts, even empty (the pin's conversion output).
        ("resources: {}", {"spec": {"containers": [{"name": "main"}]}}),
        ('envFromSecret: ""', {"spec": {"containers": [{"name": "main"}]}}),
        # a compilation-cache mount alone is carried by `compilationCache` only
        ("volumeMounts: [{name: cc, mountPoint: /cc, useAsCompilationCache: true}]", None),
    ],
)
def test_pod_template_is_built_when_the_pin_builds_it(fields: str, template: object) -> None:
    hub = convert_to(_alpha(WORKER % fields), v1beta1.DynamoGraphDeployment)
    assert hub.component("W").to_wire().get("podTemplate") == template
