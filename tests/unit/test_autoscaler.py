"""The autoscaler a stack asks for: HPA or KEDA ScaledObject on the component's workload."""

from __future__ import annotations

import pytest

from dynamo_infra.api import DynamoValidationError
from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.render.features.autoscaling import autoscaler_object, scale_target

DEP = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "g-worker-abc"}}
SVC = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "g-worker-abc"}}


def test_hpa_targets_the_deployment_with_cpu_default() -> None:
    target = scale_target((SVC, DEP), None)
    assert target == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "g-worker-abc"}
    hpa = autoscaler_object(target, "ns", Autoscaler.parse({"maxReplicas": 4}), {"a": "b"})
    assert hpa["kind"] == "HorizontalPodAutoscaler" and hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == target
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 4)
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80


def test_keda_scaled_object_on_a_grove_clique() -> None:
    clique = {"apiVersion": "grove.io/v1alpha1", "kind": "PodClique", "name": "g-0-worker", "replicas": 2}
    spec = Autoscaler.parse(
        {"kind": "keda", "minReplicas": 0, "maxReplicas": 8, "pollingInterval": 15,
         "triggers": [{"type": "prometheus", "metadata": {"query": "q", "threshold": "5"}}]}
    )  # fmt: skip
    obj = autoscaler_object(scale_target((), clique), "ns", spec, {})
    assert obj["apiVersion"] == "keda.sh/v1alpha1" and obj["kind"] == "ScaledObject"
    assert obj["spec"]["scaleTargetRef"] == {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "name": "g-0-worker",
    }
    assert obj["spec"]["minReplicaCount"] == 0 and obj["spec"]["pollingInterval"] == 15


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"maxReplicas": 1, "minReplicas": 3}, "maxReplicas must be ≥ minReplicas (3)"),
        ({"kind": "keda", "maxReplicas": 2}, "kind keda needs at least one trigger"),
        ({"maxReplicas": 2, "triggers": [{}]}, "triggers are for kind keda; an hpa takes metrics"),
        ({"kind": "vpa", "maxReplicas": 2}, "must be one of 'hpa' or 'keda' (got 'vpa')"),
    ],
)
def test_bad_autoscaler_names_the_problem(data: dict, message: str) -> None:
    with pytest.raises(DynamoValidationError) as e:
        Autoscaler.parse(data)
    assert message in str(e.value)
