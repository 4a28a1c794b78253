"""Names and label keys the operator gives to the objects it creates."""

from __future__ import annotations

import hashlib

# Label and annotation keys (internal/consts in the operator).
LABEL_COMPONENT = "nvidia.com/dynamo-component"
LABEL_COMPONENT_TYPE = "nvidia.com/dynamo-component-type"
LABEL_SUB_COMPONENT_TYPE = "nvidia.com/dynamo-sub-component-type"
LABEL_COMPONENT_CLASS = "nvidia.com/dynamo-component-class"
LABEL_NAMESPACE = "nvidia.com/dynamo-namespace"
LABEL_GRAPH = "nvidia.com/dynamo-graph-deployment-name"
LABEL_WORKER_HASH = "nvidia.com/dynamo-worker-hash"
LABEL_SELECTOR = "nvidia.com/selector"
LABEL_METRICS = "nvidia.com/metrics-enabled"
LABEL_DISCOVERY_BACKEND = "nvidia.com/dynamo-discovery-backend"
LABEL_DISCOVERY_ENABLED = "nvidia.com/dynamo-discovery-enabled"
ANNOTATION_ENABLE_METRICS = "nvidia.com/enable-metrics"
ANNOTATION_ORIGIN_VERSION = "nvidia.com/dynamo-operator-origin-version"
ANNOTATION_DISCOVERY_BACKEND = "nvidia.com/dynamo-discovery-backend"
ANNOTATION_KUBE_DISCOVERY_MODE = "nvidia.com/dynamo-kube-discovery-mode"
ANNOTATION_VLLM_EXECUTOR = "nvidia.com/vllm-distributed-executor-backend"
ANNOTATION_RESTART_AT = "nvidia.com/restartAt"
ANNOTATION_MAX_SURGE = "nvidia.com/deployment-rolling-update-max-surge"
ANNOTATION_MAX_UNAVAILABLE = "nvidia.com/deployment-rolling-update-max-unavailable"
ANNOTATION_DEPLOYMENT_STRATEGY = "nvidia.com/deployment-strategy"
ANNOTATION_CURRENT_WORKER_HASH = "nvidia.com/current-worker-hash-v2"
ANNOTATION_DISABLE_PULL_SECRET_DISCOVERY = "nvidia.com/disable-image-pull-secret-discovery"
ANNOTATION_ISTIO_INJECT = "sidecar.istio.io/inject"
ANNOTATION_BASE_MODEL = "nvidia.com/dynamo-base-model"
ANNOTATION_TOPOLOGY_LABEL_KEY = "nvidia.com/topology-label-key"
ANNOTATION_TOPOLOGY_CLUSTER_TOPOLOGY = "nvidia.com/topology-cluster-topology-name"
LABEL_BASE_MODEL_HASH = "nvidia.com/dynamo-base-model-hash"
LABEL_MANAGED_BY = "nvidia.com/managed-by"
# Multinode pods: `role=leader|worker` (LWS pods, and the Service selector of multinode components).
LABEL_ROLE = "role"
ROLE_LEADER = "leader"
ROLE_WORKER = "worker"
# `"false"` opts a graph out of the Grove pathway (multinode components then use LWS).
ANNOTATION_ENABLE_GROVE = "nvidia.com/enable-grove"
ANNOTATION_GROVE_UPDATE_STRATEGY = "nvidia.com/grove-update-strategy"
ANNOTATION_KAI_QUEUE = "nvidia.com/kai-scheduler-queue"
LABEL_KAI_QUEUE = "kai.scheduler/queue"
ANNOTATION_VOLCANO_QUEUE = "nvidia.com/volcano-queue"
# PodCliqueSet annotation Grove's Volcano backend reads the queue from.
ANNOTATION_GROVE_VOLCANO_QUEUE = "scheduling.grove.io/volcano-queue"
LABEL_FAILOVER_ENGINE_GROUP_MEMBER = "nvidia.com/dynamo-failover-engine-group-member"
# Value of `nvidia.com/dynamo-component-class` on workers of a graph that has an EPP.
COMPONENT_CLASS_WORKER = "worker"
# Annotations naming where topology labels come from (kept off pods unless the DCD carries them).
TOPOLOGY_SOURCE_ANNOTATIONS = (ANNOTATION_TOPOLOGY_LABEL_KEY, ANNOTATION_TOPOLOGY_CLUSTER_TOPOLOGY)
# The runtime namespace shared by components with `globalDynamoNamespace: true`.
GLOBAL_DYNAMO_NAMESPACE = "dynamo"
# Who manages the model headless Services (label value).
MANAGED_BY_OPERATOR = "dynamo-operator"

# DGD metadata annotations copied onto every component when the component does not set them.
PROPAGATED_ANNOTATIONS = (
    ANNOTATION_ENABLE_METRICS,
    ANNOTATION_DISCOVERY_BACKEND,
    ANNOTATION_KUBE_DISCOVERY_MODE,
    ANNOTATION_ORIGIN_VERSION,
    ANNOTATION_VLLM_EXECUTOR,
)
# Stand-in for the hash while hashing the worker specs that will carry it.
WORKER_HASH_PLACEHOLDER = "worker-hash-placeholder"


def normalize(name: str) -> str:
    """NormalizeKubeResourceName: lowercase, `.` -> `-`."""
    return name.lower().replace(".", "-")


def dynamo_namespace(k8s_namespace: str, dgd_name: str, global_namespace: bool = False) -> str:
    """The Dynamo runtime namespace of a graph: `{k8sNamespace}-{dgdName}` or the global `dynamo`."""
    if global_namespace:
        return GLOBAL_DYNAMO_NAMESPACE
    return f"{k8s_namespace}-{dgd_name.replace('.', '-')}"


def component_base_name(dgd_name: str, component: str) -> str:
    return normalize(f"{dgd_name}-{component}")


def dcd_name(dgd_name: str, component: str, worker_hash: str | None = None) -> str:
    base = component_base_name(dgd_name, component)
    return f"{base}-{worker_hash}" if worker_hash else base


def discovery_service_account(dgd_name: str) -> str:
    return f"{dgd_name}-k8s-service-discovery"


def service_name(name: str) -> str:
    """Service names are DNS-1035 labels: `.` -> `-`, lowercased."""
    return normalize(name)


def adapter_name(dgd_name: str, component: str) -> str:
    """DynamoGraphDeploymentScalingAdapter of a component."""
    return f"{dgd_name}-{component.lower()}"


def model_hash(model: str) -> str:
    """First 8 hex chars of SHA-256 of a base model name (label-safe)."""
    return hashlib.sha256(model.encode()).hexdigest()[:8]


def model_service_name(model: str) -> str:
    """Headless Service of a base model: `dynamo-model-{hash8}`."""
    return f"dynamo-model-{model_hash(model)}"
