"""The Dynamo 1.6 API fields: component roles, provider overrides, `experimental.grove`, the status
fields the 1.6 planner reads; their defaults, CRD rules and lossless v1alpha1 ⇄ v1beta1 conversion.

Fixtures load with admission off (the webhook's rules have their own tests).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dynamo_infra.api import DynamoValidationError, load_yaml, to_other_version, v1alpha1, v1beta1
from dynamo_infra.api.common import (
    GPU_POWER_LIMIT_ANNOTATION,
    WORKLOAD_PROVIDER_ANNOTATION,
    WORKLOAD_PROVIDERS,
)
from dynamo_infra.api.conversion import ANN_DGD_SPEC
from dynamo_infra.cli import main as cli

HUB = """
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  providerOverride:
    apiVersion: grove.io/v1alpha1
    target: PodCliqueSet
    value: {spec: {template: {topologyConstraint: {packDomain: rack}}}}
  components:
  - name: Worker
    type: worker
    multinode: {nodeCount: 4}
    experimental: {grove: {forceScalingGroup: true}}
    providerOverride: {apiVersion: grove.io/v1alpha1, value: {topologyConstraint: {packDomain: block}}}
    roles:
    - name: leader
      providerOverride: {apiVersion: grove.io/v1alpha1, value: {topologyConstraint: {packDomain: host}}}
      podTemplate: {spec: {containers: [{name: main, image: "img:1.6.0", args: [leader]}]}}
    - name: worker
      podTemplate: {spec: {containers: [{name: main, image: "img:1.6.0", args: [worker]}]}}
status:
  state: successful
  components:
    Worker:
      componentKind: PodCliqueScalingGroup
      componentNames: [g-0-worker]
      replicas: 1
      updatedReplicas: 1
      gpusPerEngine: 32
      gpusPerReplica: 32
      servedModelName: Qwen/Qwen3-0.6B
      runtimeComponentName: backend
      gpuPowerLimitWatts: 400
"""


def _hub() -> v1beta1.DynamoGraphDeployment:
    g = load_yaml(HUB, admission=False).graphs[0]
    assert isinstance(g, v1beta1.DynamoGraphDeployment)
    return g


def test_hub_fields_load_with_role_replicas_defaulted() -> None:
    g = _hub()
    assert g.spec.provider_override is not None
    assert g.spec.provider_override.target == "PodCliqueSet"
    worker = g.component("Worker")
    assert worker.experimental and worker.experimental.grove
    assert worker.experimental.grove.force_scaling_group is True
    assert worker.provider_override and worker.provider_override.target is None
    roles = {r.name: r for r in worker.roles or []}
    # The defaulting webhook persists leader 1 and worker nodeCount - 1.
    assert roles["leader"].replicas == 1 and roles["worker"].replicas == 3
    assert roles["leader"].pod_template and roles["leader"].pod_template.container("main")
    wire = worker.to_wire()
    assert [r["replicas"] for r in wire["roles"]] == [1, 3]
    assert g.status and g.status.components
    st = g.status.components["Worker"]
    assert (st.gpus_per_engine, st.gpus_per_replica, st.gpu_power_limit_watts) == (32, 32, 400)
    assert (st.served_model_name, st.runtime_component_name) == ("Qwen/Qwen3-0.6B", "backend")


def test_explicit_role_replicas_and_roles_without_multinode_are_kept() -> None:
    text = HUB.replace("    - name: worker\n", "    - name: worker\n      replicas: 7\n")
    roles = load_yaml(text, admission=False).graphs[0].spec.components[0].roles  # type: ignore[union-attr,index]
    assert [r.replicas for r in roles or []] == [1, 7]
    single = HUB.replace("    multinode: {nodeCount: 4}\n", "")
    roles = load_yaml(single, admission=False).graphs[0].spec.components[0].roles  # type: ignore[union-attr,index]
    assert [r.replicas for r in roles or []] == [None, None]


def test_hub_round_trips_through_v1alpha1_losslessly() -> None:
    g = _hub()
    alpha = to_other_version(g)
    assert isinstance(alpha, v1alpha1.DynamoGraphDeployment)
    svc = (alpha.spec.services or {})["Worker"]
    # Roles and provider overrides are native v1alpha1 fields; grove travels in the annotation.
    assert [r.name for r in svc.roles or []] == ["leader", "worker"]
    assert svc.provider_override and alpha.spec.provider_override
    saved = json.loads((alpha.metadata.annotations or {})[ANN_DGD_SPEC])
    assert saved["components"][0]["experimental"] == {"grove": {"forceScalingGroup": True}}
    assert alpha.status and alpha.status.services
    assert alpha.status.services["Worker"].gpus_per_replica == 32
    assert alpha.status.services["Worker"].component_name == "g-0-worker"
    assert to_other_version(alpha) == g


def test_alpha_roles_round_trip() -> None:
    text = """
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  providerOverride: {apiVersion: grove.io/v1alpha1, value: {spec: {}}}
  services:
    Worker:
      componentType: worker
      multinode: {nodeCount: 3}
      roles: [{name: leader}, {name: worker}]
status:
  state: pending
  services:
    Worker: {componentKind: LeaderWorkerSet, componentName: w, replicas: 0, updatedReplicas: 0, gpusPerEngine: 0}
"""
    alpha = load_yaml(text, admission=False).graphs[0]
    assert isinstance(alpha, v1alpha1.DynamoGraphDeployment)
    roles = (alpha.spec.services or {})["Worker"].roles or []
    assert [r.replicas for r in roles] == [1, 2]
    hub = to_other_version(alpha)
    assert isinstance(hub, v1beta1.DynamoGraphDeployment)
    assert [r.replicas for r in hub.component("Worker").roles or []] == [1, 2]
    assert hub.status and hub.status.components and hub.status.components["Worker"].gpus_per_engine == 0
    assert to_other_version(hub) == alpha


@pytest.mark.parametrize(
    ("edit", "path", "message"),
    [
        (
            lambda t: t.replace("    roles:\n", "    roles:\n    - {name: extra}\n"),
            "spec.components[0].roles",
            "at most 2",
        ),
        (
            lambda t: t.replace("name: worker\n      podTemplate", "name: leader\n      podTemplate"),
            "",
            "unique",
        ),
        (
            lambda t: t.replace(
                "    multinode: {nodeCount: 4}\n", "    multinode: {nodeCount: 4}\n    podTemplate: {}\n"
            ),
            "spec.components[0]",
            "use either component podTemplate or complete role podTemplates",
        ),
        (
            lambda t: t.replace("- name: leader", "- name: Leader"),
            "spec.components[0].roles[0].name",
            "must match",
        ),
        (
            lambda t: t.replace("gpuPowerLimitWatts: 400", "gpuPowerLimitWatts: 0"),
            "status.components.Worker.gpuPowerLimitWatts",
            "≥ 1",
        ),
        (
            lambda t: t.replace("gpusPerEngine: 32", "gpusPerEngine: -1"),
            "status.components.Worker.gpusPerEngine",
            "≥ 0",
        ),
        (lambda t: t.replace("target: PodCliqueSet", "target: 3"), "spec.providerOverride.target", "string"),
        (
            lambda t: t.replace("forceScalingGroup: true", "forceScalingGroup: yes please"),
            "forceScalingGroup",
            "",
        ),
    ],
)
def test_crd_rules_of_the_new_fields(edit, path: str, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DynamoValidationError) as e:
        load_yaml(edit(HUB), admission=False)
    text = str(e.value)
    assert path in text and message in text, text


def test_annotation_constants() -> None:
    assert WORKLOAD_PROVIDER_ANNOTATION == "nvidia.com/workload-provider"
    assert {"component", "grove"} == WORKLOAD_PROVIDERS
    assert GPU_POWER_LIMIT_ANNOTATION == "dynamo.nvidia.com/gpu-power-limit"


LPX_DGD = """
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  components:
  - name: Frontend
    type: frontend
  - name: Agent
    type: lpx
    lpx: {buildId: b}
"""


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (LPX_DGD, "spec.components[1].type"),
        (LPX_DGD.replace("    type: lpx\n", ""), "spec.components[1].lpx"),
        (
            "apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {name: g}\n"
            "spec: {services: {Agent: {componentType: lpx, lpx: {buildId: b}}}}\n",
            "spec.services.Agent.componentType",
        ),
        (
            "apiVersion: nvidia.com/v1beta1\nkind: DynamoComponentDeployment\nmetadata: {name: g}\n"
            "spec: {name: a, lpx: {buildId: b}}\n",
            "spec.lpx",
        ),
    ],
)
def test_lpx_is_refused_with_what_it_needs(text: str, path: str) -> None:
    with pytest.raises(DynamoValidationError) as e:
        load_yaml(text)
    [problem] = e.value.problems
    assert problem.path == path
    assert "LPX controller" in problem.message and "LPXGraphDeployment" in problem.message
    assert "dynamo-infra does not render LPX graphs" in problem.message
    assert "unknown field" not in problem.message


def test_non_nullable_nulls_are_pruned_before_validation() -> None:
    text = """
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  annotations: null
  components:
  - name: Worker
    type: worker
    replicas: null
    roles: null
    podTemplate:
      metadata: null
      spec:
        initContainers: null
        containers:
        - {name: main, image: "img:1.6.0", env: null, command: null}
"""
    g = load_yaml(text, admission=False).graphs[0]
    assert isinstance(g, v1beta1.DynamoGraphDeployment)
    worker = g.component("Worker")
    assert worker.replicas is None and worker.roles is None
    assert worker.pod_template and worker.pod_template.spec == {
        "containers": [{"name": "main", "image": "img:1.6.0"}]
    }
    assert "annotations" not in g.to_manifest()["spec"]


def test_containers_null_is_the_missing_required_list() -> None:
    text = """
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  components:
  - name: Frontend
    type: frontend
    podTemplate: {spec: {containers: null}}
"""
    with pytest.raises(DynamoValidationError) as e:
        load_yaml(text, admission=False)
    [problem] = e.value.problems
    assert (problem.path, problem.message) == (
        "spec.components[0].podTemplate.spec.containers",
        "required field is missing",
    )


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
@pytest.mark.parametrize("kind", ["DynamoGraphDeployment", "DynamoComponentDeployment"])
def test_string_spec_is_a_field_error(kind: str, version: str) -> None:
    text = f"apiVersion: nvidia.com/{version}\nkind: {kind}\nmetadata: {{name: g}}\nspec: x\n"
    with pytest.raises(DynamoValidationError) as e:
        load_yaml(text)
    assert [(p.path, p.message) for p in e.value.problems] == [("spec", "must be a mapping (got string)")]


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (
            HUB.replace("args: [worker]}]}}", "args: [worker]}], bogus: 1}}"),
            "spec.components[0].roles[1].podTemplate.spec.bogus",
        ),
        (
            "apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {name: g}\n"
            "spec: {services: {W: {roles: [{name: leader, podTemplate: {spec: {containers: [{name: main, "
            "image: i, bogus: 1}]}}}]}}}\n",
            "spec.services.W.roles[0].podTemplate.spec.containers[0].bogus",
        ),
    ],
)
def test_role_pod_templates_are_checked_against_the_crd(text: str, path: str) -> None:
    with pytest.raises(DynamoValidationError) as e:
        load_yaml(text, admission=False)
    assert [(p.path, p.message) for p in e.value.problems] == [(path, "unknown field")]


@pytest.mark.parametrize(
    ("text", "line", "column", "path"),
    [
        (LPX_DGD, 9, 5, "spec.components[1].type"),
        (
            "apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {name: g}\nspec: x\n",
            4,
            1,
            "spec",
        ),
    ],
)
def test_validate_names_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, column: int, path: str
) -> None:
    f = tmp_path / "g.yaml"
    f.write_text(text.lstrip("\n"))
    assert cli.main(["validate", "--format", "json", str(f)]) != 0
    [finding] = json.loads(capsys.readouterr().out)
    assert (finding["line"], finding["column"], finding["path"]) == (line, column, path), finding
