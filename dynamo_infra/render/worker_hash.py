"""ComputeDGDWorkersSpecHash: the 8-hex worker hash that names a graph's worker generation.

The operator generates every component's DCD with the hash replaced by `worker-hash-placeholder`,
keeps the workers, and hashes the Go JSON of `component name -> {labels, annotations, spec}`: the
labels and annotations its workloads would carry (GetDCDKubeLabels / GetDCDKubeAnnotations) and the
DCD spec without the fields that do not change a worker's pods.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import gojson, names
from dynamo_infra.render.legacy import LegacyComponent

# Stand-in for the hash while hashing the worker specs that will carry it.
PLACEHOLDER = names.WORKER_HASH_PLACEHOLDER
# Hex digits of SHA-256 kept.
LENGTH = 8
# DCD spec fields that do not start a new worker generation, cleared before hashing.
EXCLUDED_FIELDS = ("replicas", "minAvailable", "scalingAdapter", "runtimeVersionOverride")
# The hash's per-worker record (a struct local to the operator's hash function).
WORKER_TEMPLATE = "dynamo.workerTemplate"
# Labels of the DCD metadata that win over every other source of the workload labels.
DCD_LABELS_WIN = (
    names.LABEL_COMPONENT,
    names.LABEL_NAMESPACE,
    names.LABEL_GRAPH,
    names.LABEL_WORKER_HASH,
    names.LABEL_COMPONENT_CLASS,
)
# Sub-component types a v1beta1 component type stands for (v1alpha1 `worker` + subComponentType).
SUB_COMPONENT_TYPES = frozenset({"prefill", "decode"})


@functools.cache
def _encoder() -> gojson.Encoder:
    spec = gojson.go_types().root
    return gojson.Encoder(
        {
            WORKER_TEMPLATE: (
                gojson.GoField("labels", "map[string]string", omitempty=True),
                gojson.GoField("annotations", "map[string]string", omitempty=True),
                gojson.GoField("spec", spec),
            )
        }
    )


def _template_metadata(dcd: Manifest) -> Manifest:
    return dict(((dcd.get("spec") or {}).get("podTemplate") or {}).get("metadata") or {})


def sub_component_type(dcd: Manifest, legacy: LegacyComponent) -> str:
    """GetDCDSubComponentType: the v1alpha1 subComponentType this DCD converts back to."""
    component_type = str((dcd.get("spec") or {}).get("type") or "")
    if component_type in SUB_COMPONENT_TYPES:
        return component_type
    return legacy.sub_component_type or ""


def kube_labels(dcd: Manifest, legacy: LegacyComponent) -> dict[str, str]:
    """GetDCDKubeLabels: the labels the DCD's workloads carry before role labels."""
    meta_labels = dict((dcd.get("metadata") or {}).get("labels") or {})
    dynamo_namespace = legacy.dynamo_namespace or meta_labels.get(names.LABEL_NAMESPACE)
    spec = dcd.get("spec") or {}
    labels = {**meta_labels, **legacy.labels, **(_template_metadata(dcd).get("labels") or {})}
    model = (spec.get("modelRef") or {}).get("name")
    if model:
        labels[names.LABEL_BASE_MODEL_HASH] = names.model_hash(model)
    sub_type = sub_component_type(dcd, legacy)
    if sub_type:
        labels[names.LABEL_SUB_COMPONENT_TYPE] = sub_type
    if spec.get("name"):
        labels[names.LABEL_COMPONENT] = spec["name"]
    if dynamo_namespace:
        labels[names.LABEL_NAMESPACE] = dynamo_namespace
    labels.update({k: meta_labels[k] for k in DCD_LABELS_WIN if meta_labels.get(k)})
    return labels


def kube_annotations(dcd: Manifest, legacy: LegacyComponent) -> dict[str, str]:
    """GetDCDKubeAnnotations: the annotations the DCD's workloads carry."""
    annotations = {**legacy.annotations, **(_template_metadata(dcd).get("annotations") or {})}
    model = ((dcd.get("spec") or {}).get("modelRef") or {}).get("name")
    if model:
        annotations[names.ANNOTATION_BASE_MODEL] = model
    annotations.pop(names.ANNOTATION_ORIGIN_VERSION, None)
    for key in names.TOPOLOGY_SOURCE_ANNOTATIONS:
        annotations.pop(key, None)
    meta_annotations = (dcd.get("metadata") or {}).get("annotations") or {}
    annotations.update(
        {k: meta_annotations[k] for k in names.TOPOLOGY_SOURCE_ANNOTATIONS if meta_annotations.get(k)}
    )
    return annotations


def hash_input(workers: Mapping[str, tuple[Manifest, LegacyComponent]]) -> str:
    """The Go JSON the hash is taken of: component -> (its DCD with the placeholder, its v1alpha1 leftovers)."""
    records = {
        name: {
            "labels": kube_labels(dcd, legacy),
            "annotations": kube_annotations(dcd, legacy),
            "spec": {k: v for k, v in (dcd.get("spec") or {}).items() if k not in EXCLUDED_FIELDS},
        }
        for name, (dcd, legacy) in workers.items()
    }
    return _encoder().marshal(records, f"map[string]{WORKER_TEMPLATE}")


def worker_hash(workers: Mapping[str, tuple[Manifest, LegacyComponent]]) -> str:
    """First 8 hex of SHA-256 of `hash_input` (a graph without workers hashes `{}`)."""
    return hashlib.sha256(hash_input(workers).encode()).hexdigest()[:LENGTH]
