"""Conversion rules, lenient mode, the other kinds, YAML output, JSON Schema export, operator config.

The fixtures are minimal documents for the models and conversion (most have no runtime image, which
the operator's webhook requires), so they load with admission off (`load`); admission has its own
tests (`test_admission*.py`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml

from dynamo_infra.api import (
    DynamoValidationError,
    DynamoWarning,
    Loaded,
    load_yaml,
    to_hub,
    to_other_version,
    to_yaml,
    v1alpha1,
    v1beta1,
)
from dynamo_infra.api.conversion import ANN_DCD_SPEC, ANN_DGD_SPEC, ANN_DGD_STATUS
from dynamo_infra.api.schema import editor_schemas, main


def load(text: str, *, lenient: bool = False) -> Loaded:
    """`load_yaml` without the webhook's rules (see the module docstring)."""
    return load_yaml(text, lenient=lenient, admission=False)


ALPHA = """
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: g, namespace: team, annotations: {keep: me}}
spec:
  backendFramework: vllm
  envs: [{name: HF_HOME, value: /cache}]
  pvcs: [{name: model-cache, create: true, size: 10Gi, storageClass: fast, volumeAccessMode: ReadWriteMany}]
  services:
    Worker:
      componentType: worker
      subComponentType: prefill
      dynamoNamespace: legacy
      replicas: 2
      envFromSecret: hf-token
      resources: {limits: {gpu: "2"}, requests: {cpu: "4", custom: {ephemeral-storage: 10Gi}}}
      volumeMounts: [{name: model-cache, mountPoint: /cache}, {name: cc, mountPoint: /cc, useAsCompilationCache: true}]
      sharedMemory: {size: 8Gi}
      scalingAdapter: {enabled: true}
      failover: {enabled: true, mode: interPod}
      gpuMemoryService: {enabled: true, mode: interPod}
      extraPodMetadata: {labels: {team: a}}
      extraPodSpec:
        nodeSelector: {gpu: h100}
        mainContainer: {image: img, args: [--x]}
    Frontend:
      componentType: frontend
      frontendSidecar: {image: fe, args: [--http]}
status:
  state: successful
  services:
    Worker: {componentKind: Deployment, componentName: g-worker, replicas: 2, updatedReplicas: 2}
  rollingUpdate: {phase: Completed, updatedServices: [Worker]}
"""


@pytest.fixture
def alpha() -> v1alpha1.DynamoGraphDeployment:
    return load(ALPHA).graphs[0]  # type: ignore[return-value]


def test_alpha_to_hub_mapping(alpha: v1alpha1.DynamoGraphDeployment) -> None:
    hub = to_hub(alpha)
    worker = hub.component("Worker")
    assert worker.type == "prefill"
    assert worker.is_worker
    assert worker.replicas == 2
    assert worker.shared_memory_size == "8Gi"
    assert worker.scaling_adapter is not None
    assert worker.compilation_cache is not None and worker.compilation_cache.pvc_name == "cc"
    assert worker.compilation_cache.mount_path == "/cc"
    exp = worker.experimental
    assert exp is not None and exp.failover is not None and exp.failover.mode == "InterPod"
    assert exp.gpu_memory_service is not None and exp.gpu_memory_service.mode == "InterPod"
    assert worker.pod_template is not None
    main = worker.pod_template.container("main")
    assert main == {
        "name": "main",
        "image": "img",
        "args": ["--x"],
        "resources": {
            "limits": {"nvidia.com/gpu": "2"},
            "requests": {"cpu": "4", "ephemeral-storage": "10Gi"},
        },
        "envFrom": [{"secretRef": {"name": "hf-token"}}],
        # the compilation-cache mount too, in place (buildMainContainerFromDedicated at cdf9267d)
        "volumeMounts": [{"name": "model-cache", "mountPath": "/cache"}, {"name": "cc", "mountPath": "/cc"}],
    }
    assert worker.pod_template.metadata == {"labels": {"team": "a"}}
    assert (worker.pod_template.spec or {})["nodeSelector"] == {"gpu": "h100"}
    fe = hub.component("Frontend")
    assert fe.frontend_sidecar == "sidecar-frontend"
    assert fe.pod_template is not None
    assert fe.pod_template.container("sidecar-frontend") == {
        "name": "sidecar-frontend",
        "image": "fe",
        "args": ["--http"],
    }
    assert hub.spec.env == [{"name": "HF_HOME", "value": "/cache"}]
    # Fields with no v1beta1 place travel in the spec annotation, in v1alpha1 shape.
    saved = json.loads((hub.metadata.annotations or {})[ANN_DGD_SPEC])
    assert saved["pvcs"][0]["name"] == "model-cache"
    assert saved["services"]["Worker"]["dynamoNamespace"] == "legacy"
    assert (hub.metadata.annotations or {})["keep"] == "me"
    assert hub.status is not None and hub.status.components is not None
    assert hub.status.components["Worker"].component_names == ["g-worker"]
    assert hub.status.rolling_update is not None and hub.status.rolling_update.updated_components == [
        "Worker"
    ]
    # As in the operator, a status componentName without componentNames is preserved.
    assert json.loads((hub.metadata.annotations or {})[ANN_DGD_STATUS]) == {
        "services": {
            "Worker": {
                "componentKind": "Deployment",
                "componentName": "g-worker",
                "replicas": 2,
                "updatedReplicas": 2,
            }
        }
    }
    assert to_other_version(hub) == alpha


def test_stale_annotation_never_overrides_live_fields(alpha: v1alpha1.DynamoGraphDeployment) -> None:
    hub = to_hub(alpha)
    wire = hub.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    worker = next(c for c in wire["spec"]["components"] if c["name"] == "Worker")
    worker["podTemplate"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "4"
    edited = v1beta1.DynamoGraphDeployment.parse(wire)
    back = to_other_version(edited)
    assert isinstance(back, v1alpha1.DynamoGraphDeployment)
    svc = (back.spec.services or {})["Worker"]
    assert svc.resources is not None and svc.resources.limits is not None and svc.resources.limits.gpu == "4"
    assert svc.dynamo_namespace == "legacy"  # unrelated preserved fields still come back
    assert back.spec.pvcs is not None


def test_hub_origin_keeps_component_order_and_hub_only_shapes() -> None:
    text = """
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  components:
  - name: Worker
    type: worker
    podTemplate:
      spec:
        containers:
        - name: main
          image: img
          volumeMounts: [{name: data, mountPath: /data, readOnly: true}]
        - {name: engine, image: eng}
  - {name: Frontend, type: frontend, replicas: 1}
"""
    hub = load(text).graphs[0]
    alpha = to_other_version(hub)
    assert isinstance(alpha, v1alpha1.DynamoGraphDeployment)
    assert sorted(alpha.spec.services or {}) == ["Frontend", "Worker"]
    saved = json.loads((alpha.metadata.annotations or {})[ANN_DGD_SPEC])
    assert [c["name"] for c in saved["components"]] == ["Worker", "Frontend"]
    assert to_other_version(alpha) == hub


def test_dcd_conversion_round_trip() -> None:
    text = """
apiVersion: nvidia.com/v1alpha1
kind: DynamoComponentDeployment
metadata: {name: g-worker}
spec:
  backendFramework: sglang
  serviceName: Worker
  componentType: worker
  subComponentType: decode
  dynamoNamespace: ns
  replicas: 1
  envs: [{name: A, value: b}]
status:
  conditions: []
  podSelector: {app: x}
  service: {componentKind: LeaderWorkerSet, componentName: g-worker-0, replicas: 1, updatedReplicas: 1}
"""
    dcd = load(text).documents[0]
    hub = to_other_version(dcd)
    assert isinstance(hub, v1beta1.DynamoComponentDeployment)
    assert hub.spec.name == "Worker" and hub.spec.type == "decode" and hub.spec.backend_framework == "sglang"
    assert hub.status is not None and hub.status.component is not None
    assert hub.status.component.component_names == ["g-worker-0"]
    assert "dynamoNamespace" in (hub.metadata.annotations or {})[ANN_DCD_SPEC]
    assert to_other_version(hub) == dcd


def test_scaling_adapter_conversion() -> None:
    text = """
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeploymentScalingAdapter
metadata: {name: g-worker}
spec: {replicas: 3, dgdRef: {name: g, serviceName: Worker}}
"""
    a = load(text).documents[0]
    hub = to_other_version(a)
    assert isinstance(hub, v1beta1.DynamoGraphDeploymentScalingAdapter)
    assert hub.spec.dgd_ref.component_name == "Worker"
    assert not hub.metadata.annotations
    assert to_other_version(hub) == a


def test_dgdr_conversion_round_trips_both_ways() -> None:
    old = """
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeploymentRequest
metadata: {name: r}
spec:
  model: Qwen/Qwen3-0.6B
  backend: vllm
  useMocker: true
  profilingConfig: {profilerImage: prof:1, config: {sla: {ttft: 200}}}
  deploymentOverrides: {workersImage: w:1}
"""
    r = load(old).documents[0]
    hub = to_other_version(r)
    assert isinstance(hub, v1beta1.DynamoGraphDeploymentRequest)
    assert hub.spec.image == "w:1" and hub.spec.features is not None and hub.spec.features.mocker is not None
    assert to_other_version(hub) == r
    new = """
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeploymentRequest
metadata: {name: r}
spec: {model: m, sla: {ttft: 100, itl: 10}, workload: {isl: 2000}}
"""
    r2 = load(new).documents[0]
    assert to_other_version(to_other_version(r2)) == r2


def test_kinds_without_a_second_version() -> None:
    text = """
apiVersion: nvidia.com/v1alpha1
kind: DynamoCheckpoint
metadata: {name: c}
spec:
  identity: {model: m, backendFramework: vllm}
  job:
    podTemplateSpec: {spec: {containers: [{name: main, image: img}]}}
"""
    ckpt = load(text).documents[0]
    assert isinstance(ckpt, v1alpha1.DynamoCheckpoint)
    assert ckpt.spec.job.active_deadline_seconds == 3600
    with pytest.raises(TypeError):
        to_other_version(ckpt)
    bad = text.replace("image: img", "image: 3")
    with pytest.raises(DynamoValidationError) as info:
        load(bad)
    assert (
        str(info.value.problems[0])
        == "spec.job.podTemplateSpec.spec.containers[0].image: must be a string (got integer)"
    )


def test_lenient_mode_warns_instead_of_failing() -> None:
    text = ALPHA.replace("      replicas: 2\n", "      replicas: 2\n      futureField: 1\n").replace(
        "mainContainer: {image: img, args: [--x]}", "mainContainer: {image: img, args: [--x], newK8sField: 1}"
    )
    with pytest.raises(DynamoValidationError) as info:
        load(text)
    assert {p.path for p in info.value.problems} == {
        "spec.services.Worker.futureField",
        "spec.services.Worker.extraPodSpec.mainContainer.newK8sField",
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = load(text, lenient=True).graphs[0]
    messages = sorted(str(w.message) for w in caught if issubclass(w.category, DynamoWarning))
    assert messages == [
        "spec.services.Worker.extraPodSpec.mainContainer.newK8sField: unknown field ignored",
        "spec.services.Worker.futureField: unknown field ignored",
    ]
    assert isinstance(g, v1alpha1.DynamoGraphDeployment)
    # Other problems are still errors in lenient mode.
    with pytest.raises(DynamoValidationError), pytest.warns(DynamoWarning):
        load(text.replace("replicas: 2", "replicas: -2"), lenient=True)


def test_to_yaml_is_kubectl_ready(alpha: v1alpha1.DynamoGraphDeployment) -> None:
    doc = yaml.safe_load(alpha.to_yaml())
    assert list(doc)[:3] == ["apiVersion", "kind", "metadata"]
    assert "status" not in doc
    assert doc["metadata"] == {"name": "g", "namespace": "team", "annotations": {"keep": "me"}}
    stream = to_yaml([alpha, to_hub(alpha)])
    assert [d["apiVersion"] for d in yaml.safe_load_all(stream)] == [
        "nvidia.com/v1alpha1",
        "nvidia.com/v1beta1",
    ]


def test_server_fields_are_accepted_and_not_emitted() -> None:
    text = ALPHA.replace(
        "metadata: {name: g, namespace: team, annotations: {keep: me}}",
        "metadata: {name: g, uid: u, resourceVersion: '5', generation: 2, creationTimestamp: '2026-01-01T00:00:00Z', managedFields: []}",
    )
    g = load(text).graphs[0]
    assert g.to_manifest()["metadata"] == {"name": "g"}


def test_editor_schema_export(tmp_path: Path) -> None:
    schemas = editor_schemas()
    assert "DynamoGraphDeployment.v1beta1" in schemas and "DynamoModel.v1alpha1" in schemas
    dgd = schemas["DynamoGraphDeployment.v1alpha1"]
    assert "spec" in dgd["properties"]
    assert main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "DynamoGraphDeployment.v1beta1.schema.json").is_file()


def test_shipped_crd_schemas_are_small_and_current(tmp_path: Path) -> None:
    from dynamo_infra.api.schema import MAX_SCHEMA_BYTES, SCHEMA_DIR, update_from, write_schemas
    from tests.conftest import CORPUS
    from tools.dynamo_crds_16 import SRC, derived_crds

    # The 1.6 CRDs (derived from the upstream ones of 2026-08-21), then the kinds 1.6 no longer has
    # (DynamoCheckpoint, still served to images < 1.5) and the snapshot kinds, from the pin's set.
    current = write_schemas(list(derived_crds(SRC).values()), tmp_path / "16")
    older = [
        p
        for p in update_from(CORPUS / "crds" / "dynamo", tmp_path / "pin")
        if not (tmp_path / "16" / p.name).exists()
    ]
    assert {p.name for p in older} == {
        "DynamoCheckpoint.v1alpha1.json",
        "PodSnapshot.v1alpha1.json",
        "PodSnapshotContent.v1alpha1.json",
    }
    shipped = {p.name for p in SCHEMA_DIR.glob("*.json")}
    assert shipped == {p.name for p in current + older}
    for p in current + older:
        assert p.stat().st_size < MAX_SCHEMA_BYTES
        assert p.read_text() == (SCHEMA_DIR / p.name).read_text(), (
            f"{p.name}: run python -m tools.dynamo_crds_16"
        )


def test_import_is_light_and_layered() -> None:
    code = (
        "import sys, time; t = time.perf_counter(); import dynamo_infra.api; "
        "dt = time.perf_counter() - t; "
        "bad = [m for m in ('pulumi', 'httpx', 'jsonschema_rs', 'dynamo_infra.render', 'dynamo_infra.reconcile') if m in sys.modules]; "
        "print(dt, bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split(maxsplit=1)
    assert out[1].strip() == "[]", out
    assert float(out[0]) < 2.0


def test_shared_memory_zero_is_disabled_and_round_trips() -> None:
    text = """
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  components:
  - {name: A, sharedMemorySize: 0Gi}
  - {name: B, sharedMemorySize: 16Gi}
"""
    hub = load(text).graphs[0]
    alpha = to_other_version(hub)
    assert isinstance(alpha, v1alpha1.DynamoGraphDeployment)
    services = alpha.spec.services or {}
    assert services["A"].shared_memory is not None and services["A"].shared_memory.disabled
    assert services["B"].shared_memory is not None and services["B"].shared_memory.size == "16Gi"
    assert to_other_version(alpha) == hub


def test_legacy_component_type_is_preserved() -> None:
    text = """
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  services:
    Router: {componentType: default, replicas: 1}
"""
    alpha = load(text).graphs[0]
    hub = to_hub(alpha)
    assert hub.component("Router").type is None  # not a v1beta1 type: rendered as a plain component
    assert json.loads((hub.metadata.annotations or {})[ANN_DGD_SPEC]) == {
        "services": {"Router": {"componentType": "default"}}
    }
    assert to_other_version(hub) == alpha


def test_schema_cli_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    schemas = json.loads(capsys.readouterr().out)
    assert schemas["DynamoGraphDeployment.v1beta1"]["title"] == "DynamoGraphDeployment (nvidia.com/v1beta1)"


def test_stale_entry_is_dropped_per_component() -> None:
    text = """
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  pvcs: [{name: p}]
  services:
    A:
      envs: [{name: X, value: "1"}]
      extraPodSpec: {mainContainer: {image: img, env: [{name: Y, value: "2"}]}}
    B:
      dynamoNamespace: legacy
"""
    alpha = load(text).graphs[0]
    hub = to_hub(alpha)
    saved = json.loads((hub.metadata.annotations or {})[ANN_DGD_SPEC])
    assert set(saved["services"]) == {"A", "B"}  # A: the envs/mainContainer split; B: dynamoNamespace
    wire = hub.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    a = next(c for c in wire["spec"]["components"] if c["name"] == "A")
    a["podTemplate"]["spec"]["containers"][0]["env"] = [{"name": "Z", "value": "3"}]
    back = to_other_version(v1beta1.DynamoGraphDeployment.parse(wire))
    assert isinstance(back, v1alpha1.DynamoGraphDeployment)
    services = back.spec.services or {}
    assert services["A"].envs == [{"name": "Z", "value": "3"}]  # the live edit wins
    assert services["B"].dynamo_namespace == "legacy"  # B's preserved field still applies
    assert back.spec.pvcs is not None and back.spec.pvcs[0].name == "p"
