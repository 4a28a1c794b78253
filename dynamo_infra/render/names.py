"""Names and label keys the operator gives to the objects it creates."""

from __future__ import annotations

import hashlib
import json
from typing import Any

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

# DGD metadata annotations copied onto every component when the component does not set them.
PROPAGATED_ANNOTATIONS = (
    ANNOTATION_ENABLE_METRICS,
    ANNOTATION_DISCOVERY_BACKEND,
    ANNOTATION_KUBE_DISCOVERY_MODE,
    ANNOTATION_ORIGIN_VERSION,
    ANNOTATION_VLLM_EXECUTOR,
)
# Version prefix of the worker-hash input, so a change of recipe never collides with old hashes.
WORKER_HASH_VERSION = "dgd-worker-rollout-v2"
# Stand-in for the hash while hashing the worker specs that will carry it.
WORKER_HASH_PLACEHOLDER = "worker-hash-placeholder"


def normalize(name: str) -> str:
    """NormalizeKubeResourceName: lowercase, `.` -> `-`."""
    return name.lower().replace(".", "-")


def dynamo_namespace(k8s_namespace: str, dgd_name: str, global_namespace: bool = False) -> str:
    """The Dynamo runtime namespace of a graph: `{k8sNamespace}-{dgdName}` or the global `dynamo`."""
    if global_namespace:
        return "dynamo"
    return f"{k8s_namespace}-{dgd_name.replace('.', '-')}"


def component_base_name(dgd_name: str, component: str) -> str:
    return normalize(f"{dgd_name}-{component}")


def dcd_name(dgd_name: str, component: str, worker_hash: str | None = None) -> str:
    base = component_base_name(dgd_name, component)
    return f"{base}-{worker_hash}" if worker_hash else base


def discovery_service_account(dgd_name: str) -> str:
    return f"{dgd_name}-k8s-service-discovery"


def short_hash(payload: Any, length: int = 8) -> str:
    """First `length` hex chars of SHA-256 of the canonical JSON of `payload`."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]
