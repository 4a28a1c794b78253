"""What a stack asks of the autoscaler that owns an adapted component's replicas."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from dynamo_infra.api.base import WireModel
from dynamo_infra.api.manifest import Manifest


class Autoscaler(WireModel):
    """An HPA (`kind: hpa`, autoscaling/v2 metrics) or a KEDA ScaledObject (`kind: keda`, triggers)
    targeting a component whose `scalingAdapter` hands its replicas over."""

    kind: Literal["hpa", "keda"] = "hpa"
    min_replicas: Annotated[int, Field(ge=0)] = 1
    max_replicas: Annotated[int, Field(ge=1)]
    # HPA: autoscaling/v2 MetricSpecs (default: CPU utilisation); KEDA: not used.
    metrics: list[Manifest] | None = None
    behavior: Manifest | None = None
    # KEDA: ScaledObject triggers (required for keda), polling and cooldown in seconds.
    triggers: list[Manifest] | None = None
    polling_interval: Annotated[int, Field(ge=1)] | None = None
    cooldown_period: Annotated[int, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Autoscaler:
        if self.max_replicas < self.min_replicas:
            raise ValueError(f"maxReplicas must be ≥ minReplicas ({self.min_replicas})")
        if self.kind == "keda" and not self.triggers:
            raise ValueError("kind keda needs at least one trigger")
        if self.kind == "hpa" and self.triggers:
            raise ValueError("triggers are for kind keda; an hpa takes metrics")
        return self
