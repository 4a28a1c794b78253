"""KV transfer policy (`spec.experimental.kvTransferPolicy`): worker env, topology volume, annotations."""

from __future__ import annotations

from dynamo_infra.api import v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.api.merge import merge_env
from dynamo_infra.render import names

# Downward API volume the runtime reads its topology labels from.
TOPOLOGY_VOLUME = "topology-labels"
TOPOLOGY_MOUNT_PATH = "/etc/dynamo/topology"
# Enforcement when the policy sets none.
DEFAULT_ENFORCEMENT = "required"
# Env vars the policy owns (replaced whole on every render).
POLICY_ENV = (
    "DYN_KV_TRANSFER_DOMAIN",
    "DYN_KV_TRANSFER_ENFORCEMENT",
    "DYN_KV_TRANSFER_PREFERRED_WEIGHT",
    "DYN_TOPOLOGY_ENABLED",
    "DYN_TOPOLOGY_MOUNT_PATH",
)


def policy_of(dgd: v1beta1.DynamoGraphDeployment) -> Manifest | None:
    """The graph's policy when it names a label key or a cluster topology."""
    exp = dgd.spec.experimental
    policy = exp.kv_transfer_policy.to_wire() if exp and exp.kv_transfer_policy else None
    if not policy or not (policy.get("labelKey") or policy.get("clusterTopologyName")):
        return None
    return policy


def _weight(value: float) -> str:
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def policy_env(policy: Manifest) -> list[Manifest]:
    env = [
        {"name": "DYN_KV_TRANSFER_DOMAIN", "value": str(policy["domain"])},
        {"name": "DYN_KV_TRANSFER_ENFORCEMENT", "value": policy.get("enforcement") or DEFAULT_ENFORCEMENT},
        {"name": "DYN_TOPOLOGY_ENABLED", "value": "true"},
        {"name": "DYN_TOPOLOGY_MOUNT_PATH", "value": TOPOLOGY_MOUNT_PATH},
    ]
    if policy.get("preferredWeight") is not None:
        env.append({"name": "DYN_KV_TRANSFER_PREFERRED_WEIGHT", "value": _weight(policy["preferredWeight"])})
    return env


def topology_volume(policy: Manifest) -> Manifest:
    """Projects the topology pod label into a file (no items without Grove cluster-topology domains)."""
    items = []
    if policy.get("labelKey"):
        path = f"metadata.labels['{policy['labelKey']}']"
        items.append({"path": str(policy["domain"]), "fieldRef": {"fieldPath": path}})
    return {"name": TOPOLOGY_VOLUME, "downwardAPI": {"items": items} if items else {}}


def apply_to_main(main: Manifest, pod_spec: Manifest, policy: Manifest) -> tuple[Manifest, Manifest]:
    """Policy env on the main container, the topology mount and volume (replacing earlier ones)."""
    env = merge_env([e for e in main.get("env") or [] if e.get("name") not in POLICY_ENV], policy_env(policy))
    mount = {"name": TOPOLOGY_VOLUME, "mountPath": TOPOLOGY_MOUNT_PATH, "readOnly": True}
    mounts = [
        m
        for m in main.get("volumeMounts") or []
        if m.get("name") != TOPOLOGY_VOLUME and m.get("mountPath") != TOPOLOGY_MOUNT_PATH
    ]
    volumes = [v for v in pod_spec.get("volumes") or [] if v.get("name") != TOPOLOGY_VOLUME]
    return (
        {**main, "env": env, "volumeMounts": [*mounts, mount]},
        {**pod_spec, "volumes": [*volumes, topology_volume(policy)]},
    )


def topology_annotations(policy: Manifest) -> dict[str, str]:
    """Annotations telling the topology label controller which node labels to copy."""
    out = {}
    if policy.get("labelKey"):
        out[names.ANNOTATION_TOPOLOGY_LABEL_KEY] = str(policy["labelKey"])
    if policy.get("clusterTopologyName"):
        out[names.ANNOTATION_TOPOLOGY_CLUSTER_TOPOLOGY] = str(policy["clusterTopologyName"])
    return out
