"""v1alpha1 fields that have no v1beta1 home and that the operator still honours after conversion.

Conversion to the hub keeps them in the `nvidia.com/dgd-spec` annotation of the v1beta1 object, and
the operator reads them from there (GetDGDPreservedAlpha*); so do we.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from dynamo_infra.api import v1beta1
from dynamo_infra.api.manifest import Manifest

# Annotation in which v1alpha1 -> v1beta1 conversion preserves the fields v1beta1 lacks.
ANNOTATION_DGD_SPEC = "nvidia.com/dgd-spec"


@dataclass(frozen=True)
class LegacyComponent:
    """Per-component v1alpha1 fields (all optional)."""

    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    # A `componentType` v1beta1 has no `type` for (e.g. `default`): the operator carries it as is.
    component_type: str | None = None
    sub_component_type: str | None = None
    dynamo_namespace: str | None = None
    ingress: Manifest | None = None
    autoscaling: Manifest | None = None


@dataclass(frozen=True)
class LegacyGraph:
    """Graph-level v1alpha1 fields: `spec.pvcs` and the per-component leftovers."""

    pvcs: tuple[Manifest, ...] = ()
    components: Mapping[str, LegacyComponent] = field(default_factory=dict)

    def component(self, name: str) -> LegacyComponent:
        return self.components.get(name) or LegacyComponent()


def _component(raw: Manifest) -> LegacyComponent:
    return LegacyComponent(
        labels=dict(raw.get("labels") or {}),
        annotations=dict(raw.get("annotations") or {}),
        component_type=raw.get("componentType") or None,
        sub_component_type=raw.get("subComponentType") or None,
        dynamo_namespace=raw.get("dynamoNamespace") or None,
        ingress=raw.get("ingress") or None,
        autoscaling=raw.get("autoscaling") or None,
    )


def _from_spec(spec: Manifest) -> LegacyGraph:
    services = spec.get("services") or {}
    return LegacyGraph(
        pvcs=tuple(dict(p) for p in spec.get("pvcs") or []),
        components={name: _component(raw or {}) for name, raw in sorted(services.items())},
    )


def legacy_of(dgd: v1beta1.DynamoGraphDeployment) -> LegacyGraph:
    """The v1alpha1 fields a hub graph preserves in its `nvidia.com/dgd-spec` annotation."""
    raw = (dgd.metadata.annotations or {}).get(ANNOTATION_DGD_SPEC)
    if not raw:
        return LegacyGraph()
    try:
        spec = json.loads(raw)
    except ValueError:
        return LegacyGraph()
    return _from_spec(spec) if isinstance(spec, dict) else LegacyGraph()
