"""The CRD schema defaults the API server adds to a stored Dynamo object (structural defaulting)."""

from __future__ import annotations

from dynamo_infra.api import kube, v1beta1
from dynamo_infra.api.loader import served_hub
from tests.conftest import load_corpus

GRAPH = """
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  services:
    VllmWorker:
      componentType: worker
      gpuMemoryService: {enabled: true}
      failover: {enabled: true}
      extraPodSpec:
        mainContainer:
          image: vllm
          ports: [{containerPort: 9090, name: metrics}]
"""


def test_absent_properties_get_their_schema_default_at_every_depth() -> None:
    wire = {
        "spec": {
            "components": [
                {
                    "name": "w",
                    "experimental": {"failover": {}, "gpuMemoryService": {}},
                    "podTemplate": {
                        "spec": {"containers": [{"name": "main", "ports": [{"containerPort": 80}]}]}
                    },
                }
            ]
        }
    }
    out = kube.with_schema_defaults(wire, "DynamoGraphDeployment", "v1beta1")
    component = out["spec"]["components"][0]
    assert component["experimental"] == {
        "failover": {"mode": "IntraPod", "numShadows": 1},
        "gpuMemoryService": {"mode": "IntraPod", "deviceClassName": "gpu.nvidia.com"},
    }
    assert component["podTemplate"]["spec"]["containers"][0]["ports"] == [
        {"containerPort": 80, "protocol": "TCP"}
    ]
    assert "mode" not in wire["spec"]["components"][0]["experimental"]["failover"], "the input is not changed"


def test_a_null_is_defaulted_or_dropped_unless_nullable() -> None:
    wire = {
        "spec": {
            "components": [{"name": "w", "experimental": {"failover": {"mode": None}}, "replicas": None}]
        }
    }
    component = kube.with_schema_defaults(wire, "DynamoGraphDeployment", "v1beta1")["spec"]["components"][0]
    assert component["experimental"]["failover"]["mode"] == "IntraPod"
    assert "replicas" not in component


def test_the_operator_reads_a_v1alpha1_graph_with_both_versions_defaults() -> None:
    (dgd,) = load_corpus(GRAPH).graphs
    hub = served_hub(dgd)
    assert isinstance(hub, v1beta1.DynamoGraphDeployment)
    (worker,) = hub.spec.components or []
    experimental = worker.to_wire()["experimental"]
    assert experimental["failover"] == {"mode": "IntraPod", "numShadows": 1}
    assert experimental["gpuMemoryService"] == {"mode": "IntraPod", "deviceClassName": "gpu.nvidia.com"}
    (main,) = worker.to_wire()["podTemplate"]["spec"]["containers"]
    assert main["ports"] == [{"containerPort": 9090, "name": "metrics", "protocol": "TCP"}]
