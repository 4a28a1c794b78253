"""DRA, GPU memory service, failover, Istio and checkpoints: focused rendering rules."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from dynamo_infra.api import DynamoValidationError
from dynamo_infra.render.features import checkpoint
from tests.unit.test_render_multinode import GROVE, IMAGE, LWS, clique, env, graph, render, worker

DRA = {"dra": {"enabled": True}}
CONTAINER_MODE = {"nvidia.com/dynamo-kube-discovery-mode": "container"}


def gms_worker(mode: str = "IntraPod", failover: str | None = None, **extra: Any) -> dict[str, Any]:
    experimental: dict[str, Any] = {"gpuMemoryService": {"mode": mode}}
    if failover:
        experimental["failover"] = {"mode": failover}
    return worker(nodes=extra.pop("nodes", 1), gpus=extra.pop("gpus", 2), experimental=experimental, **extra)


def pod(r: Any, name: str = "w") -> dict[str, Any]:
    dep = next(o for o in r.components[name].objects if o["kind"] == "Deployment")
    spec: dict[str, Any] = dep["spec"]["template"]["spec"]
    return spec


def test_gms_needs_dra() -> None:
    with pytest.raises(DynamoValidationError, match="requires DRA"):
        render(graph(gms_worker()))


def test_gms_claim_template_and_shared_claim() -> None:
    r = render(graph(gms_worker()), **DRA)
    (rct,) = [o for o in r.shared if o["kind"] == "ResourceClaimTemplate"]
    assert rct["apiVersion"] == "resource.k8s.io/v1" and rct["metadata"]["name"] == "g-w-gpu"
    assert rct["spec"]["spec"]["devices"]["requests"] == [
        {
            "name": "gpus",
            "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2},
        }
    ]
    spec = pod(r)
    main = spec["containers"][0]
    assert main["resources"] == {"claims": [{"name": "intrapod-shared-gpu"}]}
    assert spec["resourceClaims"] == [{"name": "intrapod-shared-gpu", "resourceClaimTemplateName": "g-w-gpu"}]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert env(main)["GMS_SOCKET_DIR"] == "/gms-intrapod-control"
    (sidecar,) = spec["initContainers"]
    assert (
        sidecar["name"] == "gms-server"
        and sidecar["restartPolicy"] == "Always"
        and "startupProbe" not in sidecar
    )
    assert sidecar["command"] == ["python3", "-m", "gpu_memory_service.cli.server"]
    assert {"name": "gms-intrapod-control", "emptyDir": {}} in spec["volumes"]


def test_gms_device_class_from_the_component() -> None:
    w = gms_worker()
    w["experimental"]["gpuMemoryService"]["deviceClassName"] = "gpu.example.com"
    r = render(graph(w), **DRA)
    (rct,) = [o for o in r.shared if o["kind"] == "ResourceClaimTemplate"]
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.example.com"


def test_intra_pod_failover_engines() -> None:
    r = render(graph(gms_worker(failover="IntraPod"), annotations=CONTAINER_MODE), **DRA)
    e0, e1 = pod(r)["containers"][:2]
    assert (e0["name"], e1["name"]) == ("engine-0", "engine-1")
    assert e1["ports"] == [{"name": "system-1", "containerPort": 9091, "protocol": "TCP"}]
    assert e1["readinessProbe"]["httpGet"]["port"] == "system-1"
    v = env(e1)
    assert v["ENGINE_ID"] == "1" and v["CONTAINER_NAME"] == "engine-1" and v["DYN_SYSTEM_PORT"] == "9091"
    assert (
        v["DYN_FORWARDPASS_METRIC_PORT"] == "20381"
        and v["FAILOVER_LOCK_PATH"] == "/gms-intrapod-control/failover.lock"
    )
    assert v["DYN_SYSTEM_STARTING_HEALTH_STATUS"] == "notready" and v["DYN_VLLM_GMS_SHADOW_MODE"] == "true"
    assert v["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5601" and v["DYN_VLLM_KV_EVENT_PORT"] == "20081"
    assert "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS" not in v and "DYN_HEALTH_CHECK_ENABLED" not in v
    assert e1["args"][-2:] == ["--master-port", "29600"] and "--master-port" not in e0["args"]


def test_failover_engines_need_vllm() -> None:
    """The controller's error (its admission webhook's rules are tests/unit/test_admission.py's)."""
    sglang = gms_worker(failover="IntraPod", command=["python3", "-m", "dynamo.sglang"])
    with pytest.raises(DynamoValidationError, match=r"supported only for vLLM \(detected: sglang\)"):
        render(graph(sglang, annotations=CONTAINER_MODE), **DRA)


def test_inter_pod_gms_on_grove() -> None:
    r = render(graph(gms_worker("InterPod", failover="InterPod", gpus=1)), **GROVE, **DRA)
    template = r.workloads[0]["spec"]["template"]
    assert [c["name"] for c in template["cliques"]] == ["w-gms-0", "w"]
    engine = clique(r, "w")
    assert engine["spec"]["replicas"] == 2 and engine["spec"]["startsAfter"] == ["w-gms-0"]
    assert engine["labels"]["nvidia.com/dynamo-failover-engine-group-member"] == "true"
    spec = engine["spec"]["podSpec"]
    main = spec["containers"][0]
    assert spec["restartPolicy"] == "Never" and "--load-format" in main["args"]
    assert env(main)["ENGINE_ID"] == {
        "fieldRef": {"fieldPath": "metadata.labels['grove.io/podclique-pod-index']"}
    }
    assert env(main)["FAILOVER_LOCK_PATH"] == "/run/gms/shared/failover.lock"
    mount = next(m for m in main["volumeMounts"] if m["name"] == "gms-shared")
    assert mount["subPathExpr"] == "$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)/rank-0"
    server = clique(r, "w-gms-0")
    assert "nvidia.com/dynamo-discovery-backend" not in server["labels"]
    assert server["spec"]["podSpec"]["containers"][0]["command"] == ["bash", "-c"]
    (group,) = template["podCliqueScalingGroups"]
    assert group["resourceSharing"] == [
        {"name": "w-gpu-rank-0", "scope": "PerReplica", "filter": {"childCliqueNames": ["w-gms-0", "w"]}}
    ]
    assert template["resourceClaimTemplates"][0]["name"] == "w-gpu-rank-0"


def test_istio_destination_rule_and_virtual_service() -> None:
    epp = {
        "name": "epp",
        "type": "epp",
        "eppConfig": {"config": {"plugins": [], "schedulingProfiles": []}},
        "podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}},
    }
    fe = {
        "name": "fe",
        "type": "frontend",
        "podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}},
    }
    mesh = {
        "serviceMesh": {
            "provider": "istio",
            "gateway": "istio-system/gw",
            "istio": {"tlsMode": "ISTIO_MUTUAL"},
        }
    }
    r = render(graph(epp, fe), **mesh)
    (dr,) = [o for o in r.shared if o["kind"] == "DestinationRule"]
    assert dr["spec"] == {
        "host": "g-epp.team.svc.cluster.local",
        "trafficPolicy": {"tls": {"mode": "ISTIO_MUTUAL", "insecureSkipVerify": True}},
    }
    (vs,) = [o for o in r.components["fe"].objects if o["kind"] == "VirtualService"]
    assert vs["spec"]["gateways"] == ["istio-system/gw"] and vs["spec"]["hosts"] == ["g.local"]
    grove = render(graph(fe, worker()), **GROVE, **mesh)
    (vs,) = [o for o in grove.components["fe"].objects if o["kind"] == "VirtualService"]
    assert vs["metadata"]["name"] == "g-fe"


# --- checkpoints ------------------------------------------------------------------------------


def test_identity_hash_is_sha256_of_go_json() -> None:
    identity = {"model": "m", "backendFramework": "vllm", "extraParameters": {"b": "2", "a": "<1>"}}
    blob = '{"model":"m","backendFramework":"vllm","tensorParallelSize":1,"pipelineParallelSize":1,"extraParameters":{"a":"\\u003c1\\u003e","b":"2"}}'
    assert checkpoint.identity_hash(identity) == hashlib.sha256(blob.encode()).hexdigest()[:16]


def test_checkpoint_id_and_names() -> None:
    blob = '{"namespace":"ns","dgdName":"g","componentName":"w","workerHash":"abc"}'
    ckpt_id = checkpoint.checkpoint_id("ns", "g", "", "w", "abc")
    assert ckpt_id == hashlib.sha256(blob.encode()).hexdigest()[:32]
    assert checkpoint.checkpoint_name(ckpt_id) == f"checkpoint-{ckpt_id}"
    assert checkpoint.job_name(ckpt_id) == f"checkpoint-job-{ckpt_id}-1"


CKPT = {"checkpoint": {"enabled": True}}


def ckpt_worker(policy: str) -> dict[str, Any]:
    return worker(nodes=1, gpus=2, experimental={"checkpoint": {"enabled": True, "startupPolicy": policy}})


def test_wait_for_checkpoint_keeps_replicas_at_zero_until_ready() -> None:
    r = render(graph(ckpt_worker("WaitForCheckpoint")), **CKPT)
    dep = next(o for o in r.components["w"].objects if o["kind"] == "Deployment")
    assert dep["spec"]["replicas"] == 0 and r.components["w"].waiting_for_checkpoint
    (ckpt,) = r.checkpoints
    assert ckpt["metadata"]["annotations"]["nvidia.com/dynamo-auto-checkpoint"] == "true"
    assert r.checkpoint_status["w"]["ready"] is False
    grove = render(graph(ckpt_worker("WaitForCheckpoint")), **CKPT, **GROVE)
    assert clique(grove, "w")["spec"]["replicas"] == 0


def test_ready_checkpoint_restores_the_engine() -> None:
    from dynamo_infra.config import ClusterOptions
    from dynamo_infra.render import render_graph

    r = render_graph(
        graph(ckpt_worker("WaitForCheckpoint")),
        ClusterOptions.parse(CKPT),
        "team",
        checkpoint_ready={"w": True},
    )
    main = pod(r)["containers"][0]
    assert env(main)["DYN_SNAPSHOT_RESTORE_STANDBY"] == "1"
    assert main["startupProbe"]["periodSeconds"] == 1 and main["startupProbe"]["failureThreshold"] == 1800
    assert main["readinessProbe"]["periodSeconds"] == 1
    dep = next(o for o in r.components["w"].objects if o["kind"] == "Deployment")
    assert "replicas" not in dep["spec"]


def test_immediate_policy_marks_restore_candidates_on_grove() -> None:
    r = render(graph(ckpt_worker("Immediate")), **CKPT, **GROVE)
    annotations = clique(r, "w")["annotations"]
    assert annotations["nvidia.com/dynamo-checkpoint-restore-candidate"] == "true"
    assert annotations["nvidia.com/dynamo-checkpoint-startup-policy"] == "Immediate"


def test_capture_job_defaults() -> None:
    r = render(graph(ckpt_worker("Immediate")), **CKPT)
    job = checkpoint.capture_job(r.checkpoints[0])
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 3600
    spec = job["spec"]["template"]["spec"]
    main = spec["containers"][0]
    assert spec["restartPolicy"] == "Never" and main["command"][:2] == ["cuda-checkpoint", "--launch-job"]
    assert main["readinessProbe"] == {
        "exec": {"command": ["cat", "/snapshot-control/ready-for-snapshot"]},
        "periodSeconds": 1,
    }
    assert "livenessProbe" not in main and "startupProbe" not in main
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    assert (
        annotations["sidecar.istio.io/inject"] == "false" and annotations["linkerd.io/inject"] == "disabled"
    )


def test_a_checkpoint_component_stops_the_graph_without_the_cluster_gate() -> None:
    """The operator's graph controller fails on it (after the discovery RBAC), as we refuse it."""
    with pytest.raises(DynamoValidationError) as err:
        render(graph(ckpt_worker("WaitForCheckpoint")))
    (problem,) = err.value.problems
    assert problem.path == "spec.components[w].experimental.checkpoint"
    assert (
        problem.message == "component w: checkpoint functionality is disabled in the operator configuration"
    )


def test_lws_variant_of_the_dra_options_is_accepted() -> None:
    assert (
        render(graph(gms_worker(nodes=2, gpus=1)), **LWS, **DRA).components["w"].workload_kind
        == "LeaderWorkerSet"
    )


def test_immediate_policy_marks_restore_candidates_on_deployments() -> None:
    r = render(graph(ckpt_worker("Immediate")), **CKPT)
    dep = next(o for o in r.components["w"].objects if o["kind"] == "Deployment")
    annotations = dep["spec"]["template"]["metadata"]["annotations"]
    assert annotations["nvidia.com/dynamo-checkpoint-name"] == r.checkpoints[0]["metadata"]["name"]
    assert annotations["nvidia.com/dynamo-checkpoint-restore-candidate"] == "true"
    assert dep["spec"].get("replicas") != 0 and not r.components["w"].waiting_for_checkpoint
