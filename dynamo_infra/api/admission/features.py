"""The operator's feature gates that its webhook reads, and the Grove pathway they give a graph."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from dynamo_infra.api.admission.field import go_quote

# DGD annotation that opts a graph out of Grove ("false", any case).
ANNOTATION_ENABLE_GROVE: Final = "nvidia.com/enable-grove"
GROVE_DISABLED = "requires the Grove pathway, but Grove is disabled in the operator configuration"


@dataclass(frozen=True)
class OperatorFeatures:
    """Feature gates, with the operator's defaults (see `ClusterOptions.operator_features`)."""

    # Grove-backed orchestration (`orchestrators.grove.enabled`, else the grove.io API detected).
    grove: bool = False
    # Checkpoint creation and restore (`checkpoint.enabled`).
    checkpoint: bool = False
    # GMS + Snapshot: an internal gate (DYN_OPERATOR_ALLOW_GMS_SNAPSHOT=1), off by default.
    gms_snapshot: bool = False
    # The InferencePool API (inference.networking.k8s.io) is served; the operator detects it.
    inference_pool: bool = True
    # Automatic GPU discovery for profiling requests: always on for a cluster-wide operator.
    gpu_discovery: bool = True


def grove_pathway(features: OperatorFeatures, annotations: dict[str, str] | None) -> tuple[bool, str]:
    """Whether a graph runs on Grove, and (when not) why, in the webhook's words."""
    if not features.grove:
        return False, GROVE_DISABLED
    value = (annotations or {}).get(ANNOTATION_ENABLE_GROVE)
    if value is not None and value.lower() == "false":
        return False, (
            f"requires the Grove pathway; remove or unset annotation {go_quote(ANNOTATION_ENABLE_GROVE)} "
            f"(currently {go_quote(value)})"
        )
    return True, ""
