"""One focused test per default the operator injects at the parity pin (fails if a value changes)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from dynamo_infra.api import DynamoValidationError, v1alpha1, v1beta1
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import RenderedGraph, render_graph
from dynamo_infra.render.features.pullsecrets import from_secret, matching
from dynamo_infra.render.runtime.status import ComponentStatus, dgd_status, replica_status

NS = "team"
IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"
WORKER_CMD = {"command": ["python3", "-m", "dynamo.vllm"], "args": ["--model", "m"]}


def component(name: str, type_: str | None, **extra: Any) -> dict[str, Any]:
    main = {"name": "main", "image": IMAGE, **extra.pop("main", {})}
    c: dict[str, Any] = {"name": name, "podTemplate": {"spec": {"containers": [main]}}, **extra}
    if type_:
        c["type"] = type_
    return c


def graph(
    *components: dict[str, Any], meta_annotations: dict[str, str] | None = None, **spec: Any
) -> v1beta1.DynamoGraphDeployment:
    meta: dict[str, Any] = {"name": "g"}
    if meta_annotations:
        meta["annotations"] = meta_annotations
    return v1beta1.DynamoGraphDeployment.parse(
        {
            "apiVersion": v1beta1.API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": meta,
            "spec": {"components": list(components), **spec},
        }
    )


def render(dgd: Any, **options: Any) -> RenderedGraph:
    return render_graph(dgd, ClusterOptions.parse(options) if options else ClusterOptions(), NS)


def objs(r: RenderedGraph, name: str, kind: str) -> list[dict[str, Any]]:
    return [o for o in r.components[name].objects if o["kind"] == kind]


def pod(r: RenderedGraph, name: str) -> dict[str, Any]:
    return objs(r, name, "Deployment")[0]["spec"]["template"]["spec"]


def main(r: RenderedGraph, name: str) -> dict[str, Any]:
    return pod(r, name)["containers"][0]


def env(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env") or []}


@pytest.fixture(scope="module")
def agg() -> RenderedGraph:
    return render(
        graph(
            component("fe", "frontend"),
            component("w", "decode", main=WORKER_CMD),
            component("p", "planner"),
            component("o", None),
        )
    )


def test_frontend_container(agg: RenderedGraph) -> None:
    c = main(agg, "fe")
    assert c["command"] == ["python3"] and c["args"] == ["-m", "dynamo.frontend"]
    assert c["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert c["livenessProbe"] == {
        "httpGet": {"path": "/live", "port": "http"},
        "initialDelaySeconds": 15,
        "periodSeconds": 10,
        "timeoutSeconds": 1,
        "failureThreshold": 3,
    }
    assert c["readinessProbe"] == {
        "httpGet": {"path": "/health", "port": "http"},
        "initialDelaySeconds": 10,
        "periodSeconds": 10,
        "timeoutSeconds": 3,
        "failureThreshold": 3,
    }
    assert "startupProbe" not in c
    e = env(c)
    assert (e["DYNAMO_PORT"], e["DYN_HTTP_PORT"], e["DYN_NAMESPACE_PREFIX"]) == ("8000", "8000", "team-g")
    assert "DYN_NAMESPACE_PREFIX_STRICT" not in e


def test_common_env_and_dynamo_namespace(agg: RenderedGraph) -> None:
    e = env(main(agg, "o"))
    assert e["DYN_NAMESPACE"] == "team-g" and e["DYN_COMPONENT"] == ""
    assert e["DYN_PARENT_DGD_K8S_NAME"] == "g" and e["DYN_PARENT_DGD_K8S_NAMESPACE"] == NS
    assert e["POD_UID"] == {"fieldRef": {"fieldPath": "metadata.uid"}}
    assert e["DYN_DISCOVERY_BACKEND"] == "kubernetes"
    assert main(agg, "o")["command"] == ["/bin/sh", "-c"]


def test_worker_container(agg: RenderedGraph) -> None:
    c = main(agg, "w")
    h = agg.worker_hash
    assert c["ports"] == [
        {"name": "system", "containerPort": 9090, "protocol": "TCP"},
        {"name": "nixl", "containerPort": 19090, "protocol": "TCP"},
    ]
    assert c["livenessProbe"] == {
        "httpGet": {"path": "/live", "port": "system"},
        "periodSeconds": 5,
        "timeoutSeconds": 4,
        "failureThreshold": 1,
    }
    assert c["readinessProbe"]["failureThreshold"] == 3 and c["readinessProbe"]["timeoutSeconds"] == 4
    assert c["startupProbe"] == {
        "httpGet": {"path": "/live", "port": "system"},
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": 720,
    }
    e = env(c)
    assert e["DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS"] == '["generate"]'
    assert (e["DYN_HEALTH_CHECK_ENABLED"], e["NIXL_TELEMETRY_ENABLE"], e["DYN_FORWARDPASS_METRIC_PORT"]) == (
        "false",
        "n",
        "20380",
    )
    assert e["DYN_NAMESPACE_WORKER_SUFFIX"] == h
    names = [x["name"] for x in c["env"]]
    assert names == sorted(names)


def test_planner(agg: RenderedGraph) -> None:
    assert pod(agg, "p")["serviceAccountName"] == "planner-serviceaccount"
    e = env(main(agg, "p"))
    assert (e["PLANNER_PROMETHEUS_PORT"], e["DYN_SYSTEM_PORT"]) == ("9085", "9090")


def test_pod_defaults(agg: RenderedGraph) -> None:
    p = pod(agg, "w")
    assert (p["terminationGracePeriodSeconds"], p["restartPolicy"]) == (60, "Always")
    assert p["securityContext"] == {"fsGroup": 1000}
    assert p["serviceAccountName"] == "g-k8s-service-discovery"
    assert {"name": "shared-memory", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}} in p["volumes"]
    assert {"name": "shared-memory", "mountPath": "/dev/shm"} in p["containers"][0]["volumeMounts"]


def test_user_security_context_and_shared_memory_size() -> None:
    r = render(
        graph(
            component(
                "a",
                "frontend",
                podTemplate={
                    "spec": {
                        "securityContext": {"runAsUser": 0},
                        "containers": [{"name": "main", "image": IMAGE}],
                    }
                },
                sharedMemorySize="0",
            ),
            component("b", "frontend", sharedMemorySize="2Gi"),
        )
    )
    assert pod(r, "a")["securityContext"] == {"runAsUser": 0}
    assert "volumes" not in pod(r, "a")
    assert pod(r, "b")["volumes"] == [
        {"name": "shared-memory", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}
    ]


def test_names_labels_and_services(agg: RenderedGraph) -> None:
    h = agg.worker_hash
    assert agg.components["w"].dcd_name == f"g-w-{h}" and agg.components["fe"].dcd_name == "g-fe"
    (svc,) = objs(agg, "w", "Service")
    assert svc["metadata"]["name"] == f"g-w-{h}"
    assert svc["spec"]["ports"] == [
        {"name": "system", "port": 9090, "targetPort": "system", "protocol": "TCP"}
    ]
    assert svc["spec"]["selector"] == {
        "nvidia.com/dynamo-component-type": "decode",
        "nvidia.com/dynamo-namespace": "team-g",
        "nvidia.com/dynamo-component": "w",
    }
    (fe,) = objs(agg, "fe", "Service")
    assert fe["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]
    labels = objs(agg, "w", "Deployment")[0]["spec"]["template"]["metadata"]["labels"]
    assert labels["nvidia.com/dynamo-sub-component-type"] == "decode"
    assert labels["nvidia.com/selector"] == f"g-w-{h}"
    assert agg.annotations["nvidia.com/current-worker-hash-v2"] == h


def test_origin_version_on_dcd_not_on_pods(agg: RenderedGraph) -> None:
    dcd = agg.components["fe"].dcd
    assert dcd["spec"]["podTemplate"]["metadata"]["annotations"] == {
        "nvidia.com/dynamo-operator-origin-version": "1.4.0"
    }
    assert "annotations" not in objs(agg, "fe", "Deployment")[0]["spec"]["template"]["metadata"]
    explicit = render(
        graph(
            component("fe", "frontend"),
            meta_annotations={"nvidia.com/dynamo-operator-origin-version": "0.9.0"},
        )
    )
    assert explicit.annotations["nvidia.com/dynamo-operator-origin-version"] == "0.9.0"


def test_etcd_discovery_drops_services_and_account() -> None:
    r = render(
        graph(component("fe", "frontend"), component("w", "worker", main=WORKER_CMD)),
        discovery={"backend": "etcd"},
    )
    assert objs(r, "w", "Service") == [] and len(objs(r, "fe", "Service")) == 1
    assert pod(r, "w")["serviceAccountName"] == "default"
    assert "DYN_DISCOVERY_BACKEND" not in env(main(r, "w"))
    assert r.shared == ()


def test_container_discovery_mode() -> None:
    r = render(
        graph(
            component("fe", "frontend"),
            meta_annotations={"nvidia.com/dynamo-kube-discovery-mode": "container"},
        )
    )
    e = env(main(r, "fe"))
    assert (e["CONTAINER_NAME"], e["DYN_KUBE_DISCOVERY_MODE"]) == ("main", "container")


def test_standard_env_from_cluster_options() -> None:
    r = render(
        graph(component("fe", "frontend", main={"env": [{"name": "NATS_SERVER", "value": "mine"}]})),
        infrastructure={"natsAddress": "nats://x", "etcdAddress": "etcd:2379"},
    )
    e = env(main(r, "fe"))
    assert (e["NATS_SERVER"], e["ETCD_ENDPOINTS"]) == ("mine", "etcd:2379")


EPP_CONFIG = {
    "config": {
        "plugins": [{"type": "picker"}],
        "schedulingProfiles": [{"name": "d", "plugins": [{"pluginRef": "picker"}]}],
    }
}


def test_epp_component_and_objects() -> None:
    r = render(
        graph(component("Epp", "epp", eppConfig=EPP_CONFIG), component("w", "decode", main=WORKER_CMD))
    )
    c = main(r, "Epp")
    assert "command" not in c
    assert c["args"][:2] == ["--pool-name", "g-pool"] and "--config-file" in c["args"]
    e = env(c)
    assert (e["USE_STREAMING"], e["RUST_LOG"], e["DYN_ENFORCE_DISAGG"], e["DYN_NAMESPACE_PREFIX"]) == (
        "true",
        "info",
        "false",
        "team-g",
    )
    assert "NVIDIA_VISIBLE_DEVICES" not in e
    assert c["livenessProbe"] == {
        "grpc": {"port": 9003, "service": "inference-extension"},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
    }
    assert c["startupProbe"]["failureThreshold"] == 180
    p = pod(r, "Epp")
    assert (p["serviceAccountName"], p["terminationGracePeriodSeconds"]) == ("epp-serviceaccount", 130)
    (svc,) = objs(r, "Epp", "Service")
    assert svc["spec"]["ports"] == [
        {"name": "grpc", "port": 9002, "targetPort": 9002, "protocol": "TCP", "appProtocol": "http2"}
    ]
    template = objs(r, "Epp", "Deployment")[0]["spec"]["template"]["metadata"]
    assert template["annotations"]["sidecar.istio.io/inject"] == "false"
    kinds = {o["kind"]: o for o in r.shared}
    assert kinds["ConfigMap"]["metadata"]["name"] == "g-epp-config"
    assert "kind: EndpointPickerConfig" in kinds["ConfigMap"]["data"]["epp-config-dynamo.yaml"]
    pool = kinds["InferencePool"]
    assert pool["spec"]["selector"]["matchLabels"] == {
        "nvidia.com/dynamo-component-class": "worker",
        "nvidia.com/dynamo-namespace": "team-g",
    }
    assert pool["spec"]["endpointPickerRef"] == {"kind": "Service", "name": "g-epp", "port": {"number": 9002}}
    assert "DestinationRule" not in kinds
    assert (
        objs(r, "w", "Deployment")[0]["spec"]["template"]["metadata"]["labels"][
            "nvidia.com/dynamo-component-class"
        ]
        == "worker"
    )


def test_epp_config_map_ref_and_destination_rule() -> None:
    ref = {"configMapRef": {"name": "mine", "key": "k.yaml"}}
    r = render(
        graph(component("epp", "epp", eppConfig=ref)),
        serviceMesh={"provider": "istio", "istio": {"tlsMode": "ISTIO_MUTUAL"}},
    )
    vol = next(v for v in pod(r, "epp")["volumes"] if v["name"] == "epp-config")
    assert vol["configMap"] == {
        "name": "mine",
        "items": [{"key": "k.yaml", "path": "epp-config-dynamo.yaml"}],
    }
    kinds = {o["kind"]: o for o in r.shared}
    assert "ConfigMap" not in kinds
    assert kinds["DestinationRule"]["spec"] == {
        "host": "g-epp.team.svc.cluster.local",
        "trafficPolicy": {"tls": {"mode": "ISTIO_MUTUAL", "insecureSkipVerify": True}},
    }


def test_model_ref_headless_service() -> None:
    r = render(graph(component("w", "decode", main=WORKER_CMD, modelRef={"name": "Qwen/Qwen3-0.6B"})))
    (svc,) = [o for o in objs(r, "w", "Service") if o["metadata"]["name"].startswith("dynamo-model-")]
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["ports"] == [{"name": "system", "port": 9090, "targetPort": 9090, "protocol": "TCP"}]
    assert svc["metadata"]["annotations"] == {"nvidia.com/dynamo-base-model": "Qwen/Qwen3-0.6B"}
    h = svc["spec"]["selector"]["nvidia.com/dynamo-base-model-hash"]
    assert (
        objs(r, "w", "Deployment")[0]["spec"]["template"]["metadata"]["labels"][
            "nvidia.com/dynamo-base-model-hash"
        ]
        == h
    )


def test_compilation_cache_per_backend() -> None:
    r = render(graph(component("w", "decode", main=WORKER_CMD, compilationCache={"pvcName": "cache"})))
    c = main(r, "w")
    assert env(c)["VLLM_CACHE_ROOT"] == "/root/.cache/vllm"
    assert {"name": "cache", "mountPath": "/root/.cache/vllm"} in c["volumeMounts"]
    assert {"name": "cache", "persistentVolumeClaim": {"claimName": "cache"}} in pod(r, "w")["volumes"]
    sglang = {"command": ["python3", "-m", "dynamo.sglang"]}
    with pytest.raises(DynamoValidationError, match="mountPath"):
        render(graph(component("w", "decode", main=sglang, compilationCache={"pvcName": "cache"})))
    ok = render(
        graph(component("w", "decode", main=sglang, compilationCache={"pvcName": "cache", "mountPath": "/c"}))
    )
    assert "VLLM_CACHE_ROOT" not in env(main(ok, "w"))


def test_implicit_pvc_volume_for_mount() -> None:
    r = render(
        graph(component("fe", "frontend", main={"volumeMounts": [{"name": "models", "mountPath": "/m"}]}))
    )
    assert pod(r, "fe")["volumes"][0] == {"name": "models", "persistentVolumeClaim": {"claimName": "models"}}


def test_default_ingress_and_virtual_service() -> None:
    r = render(
        graph(component("fe", "frontend")),
        ingress={
            "controllerClassName": "nginx",
            "hostSuffix": "example.com",
            "controllerTlsSecretName": "tls",
        },
    )
    (ing,) = objs(r, "fe", "Ingress")
    assert ing["spec"]["ingressClassName"] == "nginx"
    assert ing["spec"]["rules"][0]["host"] == "g.example.com"
    assert ing["spec"]["tls"] == [{"hosts": ["g.example.com"], "secretName": "tls"}]
    vs = render(graph(component("fe", "frontend")), ingress={"virtualServiceGateway": "istio-system/gw"})
    (v,) = objs(vs, "fe", "VirtualService")
    assert v["spec"]["hosts"] == ["g.local"] and v["spec"]["gateways"] == ["istio-system/gw"]
    assert objs(render(graph(component("fe", "frontend"))), "fe", "Ingress") == []


def test_scaling_adapter_initial_replicas() -> None:
    r = render(
        graph(
            component("w", "decode", main=WORKER_CMD, scalingAdapter={}),
            component("fe", "frontend", replicas=3, scalingAdapter={}),
        )
    )
    a = r.components["w"].adapter
    assert a is not None and a["spec"] == {"replicas": 1, "dgdRef": {"name": "g", "serviceName": "w"}}
    assert a["apiVersion"] == "nvidia.com/v1alpha1" and a["metadata"]["name"] == "g-w"
    assert r.components["fe"].adapter["spec"]["replicas"] == 3  # type: ignore[index]
    assert r.components["w"].scaling_adapter


def alpha(services: dict[str, Any], **spec: Any) -> v1alpha1.DynamoGraphDeployment:
    return v1alpha1.DynamoGraphDeployment.parse(
        {
            "apiVersion": v1alpha1.API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": "g"},
            "spec": {"services": services, **spec},
        }
    )


def test_legacy_autoscaling_hpa_only_when_asked() -> None:
    dgd = alpha(
        {
            "Frontend": {
                "componentType": "frontend",
                "autoscaling": {"enabled": True, "minReplicas": 1, "maxReplicas": 4},
            }
        }
    )
    assert objs(render(dgd), "Frontend", "HorizontalPodAutoscaler") == []
    r = render(dgd, legacyAutoscalingHpa=True)
    (h,) = objs(r, "Frontend", "HorizontalPodAutoscaler")
    assert h["spec"]["metrics"][0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 80}
    assert r.components["Frontend"].autoscaled


def test_pvcs_with_create() -> None:
    dgd = alpha(
        {"Frontend": {"componentType": "frontend"}},
        pvcs=[
            {
                "name": "model-cache",
                "create": True,
                "size": "100Gi",
                "storageClass": "fast",
                "volumeAccessMode": "ReadWriteMany",
            },
            {"name": "existing"},
        ],
    )
    r = render(dgd)
    assert r.pvcs[0]["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": "100Gi"}},
        "storageClassName": "fast",
    }
    assert r.required_pvcs == ("existing",)


def test_kv_transfer_policy_env() -> None:
    r = render(
        graph(
            component("w", "decode", main=WORKER_CMD),
            experimental={"kvTransferPolicy": {"labelKey": "topology.kubernetes.io/zone", "domain": "zone"}},
        )
    )
    e = env(main(r, "w"))
    assert (e["DYN_KV_TRANSFER_DOMAIN"], e["DYN_KV_TRANSFER_ENFORCEMENT"], e["DYN_TOPOLOGY_ENABLED"]) == (
        "zone",
        "required",
        "true",
    )
    assert e["DYN_TOPOLOGY_MOUNT_PATH"] == "/etc/dynamo/topology"
    assert r.components["w"].dcd["metadata"]["annotations"] == {
        "nvidia.com/topology-label-key": "topology.kubernetes.io/zone"
    }
    meta = objs(r, "w", "Deployment")[0]["spec"]["template"]["metadata"]
    assert meta["annotations"]["nvidia.com/topology-label-key"] == "topology.kubernetes.io/zone"


def test_restart_propagation() -> None:
    dgd = graph(component("fe", "frontend"), component("w", "decode", main=WORKER_CMD), restart={"id": "r1"})
    r = render(dgd)
    for name in ("fe", "w"):
        assert (
            objs(r, name, "Deployment")[0]["spec"]["template"]["metadata"]["annotations"][
                "nvidia.com/restartAt"
            ]
            == "r1"
        )
    seq = render_graph(dgd, ClusterOptions(), NS, restart_status={"observedID": "r1", "phase": "Pending"})
    assert "annotations" not in objs(seq, "w", "Deployment")[0]["spec"]["template"]["metadata"]


def test_deployment_strategy_from_annotations() -> None:
    r = render(
        graph(
            component("fe", "frontend"), annotations={"nvidia.com/deployment-rolling-update-max-surge": "1"}
        )
    )
    assert objs(r, "fe", "Deployment")[0]["spec"]["strategy"]["rollingUpdate"] == {
        "maxSurge": 1,
        "maxUnavailable": "25%",
    }
    rc = render(
        graph(
            component(
                "fe",
                "frontend",
                podTemplate={
                    "metadata": {"annotations": {"nvidia.com/deployment-strategy": "Recreate"}},
                    "spec": {"containers": [{"name": "main", "image": IMAGE}]},
                },
            )
        )
    )
    assert objs(rc, "fe", "Deployment")[0]["spec"]["strategy"] == {"type": "Recreate"}


def test_pull_secret_matching() -> None:
    cfg = base64.b64encode(json.dumps({"auths": {"https://nvcr.io": {}}}).encode()).decode()
    secret = {
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "ngc"},
        "data": {".dockerconfigjson": cfg},
    }
    parsed = from_secret(secret)
    assert parsed is not None
    assert matching([IMAGE, "docker.io/x:1"], [parsed]) == ["ngc"]
    r = render_graph(graph(component("fe", "frontend")), ClusterOptions(), NS, pull_secrets=[parsed])
    assert pod(r, "fe")["imagePullSecrets"] == [{"name": "ngc"}]
    off = render_graph(
        graph(component("fe", "frontend")),
        ClusterOptions(imagePullSecretDiscovery=False),
        NS,
        pull_secrets=[parsed],
    )
    assert "imagePullSecrets" not in pod(off, "fe")


def test_dgd_status_and_replica_status() -> None:
    d = {
        "kind": "Deployment",
        "metadata": {"name": "g-fe"},
        "status": {"replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1},
    }
    rs = replica_status(d, "team-g")
    assert rs == {
        "componentKind": "Deployment",
        "componentNames": ["g-fe"],
        "replicas": 1,
        "updatedReplicas": 1,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "runtimeNamespace": "team-g",
    }
    s = dgd_status({"fe": ComponentStatus(True, "DeploymentReady", "")}, {"fe": rs})
    assert (
        s["state"] == "successful" and s["conditions"][0]["status"] == "True" and s["components"]["fe"] == rs
    )


def test_multinode_needs_an_orchestrator() -> None:
    with pytest.raises(DynamoValidationError, match="no multinode orchestrator available"):
        render(graph(component("w", "decode", main=WORKER_CMD, multinode={"nodeCount": 2})))
