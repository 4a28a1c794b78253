"""One record per convertible kind (DGD, DCD, DGDSA, DGDR): its two models, field tables,
preservation annotations and fields of named entries; and conversion by record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from dynamo_infra.api import v1alpha1, v1beta1
from dynamo_infra.api.base import Resource
from dynamo_infra.api.conversion import fields
from dynamo_infra.api.conversion.preserve import Keyed, convert
from dynamo_infra.api.conversion.table import Table, from_hub, to_hub
from dynamo_infra.api.manifest import Manifest

R = TypeVar("R", bound=Resource)

ANN_DGD_SPEC = "nvidia.com/dgd-spec"
ANN_DGD_STATUS = "nvidia.com/dgd-status"
ANN_DCD_SPEC = "nvidia.com/dcd-spec"
ANN_DCD_STATUS = "nvidia.com/dcd-status"
ANN_DGDR_SPEC = "nvidia.com/dgdr-spec"
ANN_DGDR_STATUS = "nvidia.com/dgdr-status"


@dataclass(frozen=True)
class Kind:
    """How one kind converts between its v1alpha1 and v1beta1 (hub) models."""

    alpha: type[Resource]
    hub: type[Resource]
    spec: Table
    status: Table
    # Spec and status annotations keeping what the other version cannot hold ("": nothing is kept).
    annotations: tuple[str, str] = ("", "")
    # Fields of named entries, restored entry by entry (same order in both versions).
    alpha_keyed: Keyed = field(default_factory=dict)
    hub_keyed: Keyed = field(default_factory=dict)


KINDS = (
    Kind(
        v1alpha1.DynamoGraphDeployment,
        v1beta1.DynamoGraphDeployment,
        fields.DGD_SPEC,
        fields.DGD_STATUS,
        (ANN_DGD_SPEC, ANN_DGD_STATUS),
        {"services": "map"},
        {"components": "list"},
    ),
    Kind(
        v1alpha1.DynamoComponentDeployment,
        v1beta1.DynamoComponentDeployment,
        fields.DCD_SPEC,
        fields.DCD_STATUS,
        (ANN_DCD_SPEC, ANN_DCD_STATUS),
    ),
    Kind(
        v1alpha1.DynamoGraphDeploymentScalingAdapter,
        v1beta1.DynamoGraphDeploymentScalingAdapter,
        fields.DGDSA_SPEC,
        fields.DGDSA_STATUS,
    ),
    Kind(
        v1alpha1.DynamoGraphDeploymentRequest,
        v1beta1.DynamoGraphDeploymentRequest,
        fields.DGDR_SPEC,
        fields.DGDR_STATUS,
        (ANN_DGDR_SPEC, ANN_DGDR_STATUS),
    ),
)
_BY_MODEL = {model: kind for kind in KINDS for model in (kind.alpha, kind.hub)}


def convertible(obj: Resource) -> bool:
    """Whether `obj`'s kind exists in both versions (DynamoCheckpoint and DynamoModel do not)."""
    return type(obj) in _BY_MODEL


def convert_to(obj: Resource, model: type[R], *, wire: Manifest | None = None) -> R:
    """`obj` as `model`, its kind in the other API version (`wire`: `obj.to_wire()`, when the caller
    has it already)."""
    kind = _BY_MODEL.get(type(obj))
    if kind is None:
        raise TypeError(f"{obj.KIND} exists in one API version only")
    if (type(obj), model) not in ((kind.alpha, kind.hub), (kind.hub, kind.alpha)):
        raise TypeError(f"{obj.API_VERSION} {obj.KIND} does not convert to {model.API_VERSION} {model.KIND}")
    # The table read towards `model`, and back (for what the target version cannot hold).
    there, back = (to_hub, from_hub) if model is kind.hub else (from_hub, to_hub)
    keyed = (kind.alpha_keyed, kind.hub_keyed) if model is kind.hub else (kind.hub_keyed, kind.alpha_keyed)
    return convert(
        obj, model, lambda s: there(kind.spec, s), lambda s: back(kind.spec, s),
        lambda s: there(kind.status, s), lambda s: back(kind.status, s), kind.annotations, *keyed,
        wire=wire,
    )  # fmt: skip


def to_other_version(obj: Resource) -> Resource:
    """The object in the other API version (v1alpha1 ⇄ v1beta1)."""
    kind = _BY_MODEL.get(type(obj))
    if kind is None:
        raise TypeError(f"{obj.KIND} exists in one API version only")
    return convert_to(obj, kind.hub if type(obj) is kind.alpha else kind.alpha)
