"""The webhook's rules for the controller-owned `nvidia.com/workload-provider` DGD annotation (the
workload program the operator selected for the graph: `component` or `grove`): only those values;
on an update, never added by anyone but the operator (which we never are), never changed or removed.

Ported from 1.6-era `deploy/operator/internal/webhook/validation/dynamographdeployment.go`
(michaelfeil/dynamo@80b177f2c87c3c80dec88524bb0cda666cc3effc: `validateObjectMeta`,
`validateObjectMetaUpdate`) and `dynamographdeployment_helpers.go` (`supportedWorkloadProviders`).
The operator's defaulting webhook overwrites the annotation on create; we admit what the user wrote."""

from __future__ import annotations

from typing import Final

from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.field import Text
from dynamo_infra.api.errors import Problem

ANNOTATION_WORKLOAD_PROVIDER: Final = "nvidia.com/workload-provider"
WORKLOAD_PROVIDERS: Final = ("component", "grove")
WORKLOAD_PROVIDER_AT: Final = f"metadata.annotations[{ANNOTATION_WORKLOAD_PROVIDER}]"
OPERATOR_ONLY: Final = "may only be materialized by the Dynamo operator"
# `apivalidation.FieldImmutableErrorMsg`.
FIELD_IMMUTABLE: Final = "field is immutable"


def workload_provider_problems(annotations: dict[str, str]) -> list[Problem]:
    """Creating a DGD: the annotation, when present, names a workload program the operator implements."""
    value = annotations.get(ANNOTATION_WORKLOAD_PROVIDER)
    if value is None or value in WORKLOAD_PROVIDERS:
        return []
    return [field.not_supported(WORKLOAD_PROVIDER_AT, Text(value), WORKLOAD_PROVIDERS)]


def workload_provider_update(new: dict[str, str], old: dict[str, str]) -> list[Problem]:
    """Updating a DGD (by a user, not the operator's principal)."""
    value, old_value = new.get(ANNOTATION_WORKLOAD_PROVIDER), old.get(ANNOTATION_WORKLOAD_PROVIDER)
    if old_value is None and value is not None:
        out = [field.forbidden(WORKLOAD_PROVIDER_AT, OPERATOR_ONLY)]
        if value not in WORKLOAD_PROVIDERS:
            out.append(field.not_supported(WORKLOAD_PROVIDER_AT, Text(value), WORKLOAD_PROVIDERS))
        return out
    if old_value is not None and value != old_value:
        return [field.invalid(WORKLOAD_PROVIDER_AT, None if value is None else Text(value), FIELD_IMMUTABLE)]
    return []
