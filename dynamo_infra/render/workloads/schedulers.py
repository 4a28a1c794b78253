"""Gang schedulers Grove hands a graph's cliques to (`grove.scheduler`): the scheduler name on the
clique pods, and where each takes its queue from (DGD annotation, else the cluster's queue)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from dynamo_infra.config import DEFAULT_KAI_QUEUE, ClusterOptions
from dynamo_infra.render import names
from dynamo_infra.render.context import GraphContext

# `grove.scheduler` value that leaves cliques to the Kubernetes default scheduler.
DEFAULT_SCHEDULER = "default"


class GangScheduler(Protocol):
    """What one scheduler integration adds to a PodCliqueSet."""

    # `schedulerName` of the clique pods (a user's own other scheduler wins).
    scheduler_name: str

    def clique_labels(self, g: GraphContext) -> Mapping[str, str]: ...

    def pod_clique_set_annotations(self, g: GraphContext) -> Mapping[str, str]: ...


class KAI:
    scheduler_name = "kai-scheduler"

    def clique_labels(self, g: GraphContext) -> Mapping[str, str]:
        queue = (g.annotations.get(names.ANNOTATION_KAI_QUEUE) or "").strip()
        return {names.LABEL_KAI_QUEUE: queue or g.options.grove.queue or DEFAULT_KAI_QUEUE}

    def pod_clique_set_annotations(self, g: GraphContext) -> Mapping[str, str]:
        return {}


class Volcano:
    scheduler_name = "volcano"

    def clique_labels(self, g: GraphContext) -> Mapping[str, str]:
        return {}

    def pod_clique_set_annotations(self, g: GraphContext) -> Mapping[str, str]:
        queue = (g.annotations.get(names.ANNOTATION_VOLCANO_QUEUE) or "").strip() or (
            g.options.grove.queue or ""
        )
        return {names.ANNOTATION_GROVE_VOLCANO_QUEUE: queue} if queue else {}


# One entry per `grove.scheduler` value besides the default.
SCHEDULERS: Mapping[str, GangScheduler] = {"kai": KAI(), "volcano": Volcano()}


def scheduler_for(options: ClusterOptions) -> GangScheduler | None:
    """The cluster's gang scheduler; None for the Kubernetes default scheduler."""
    return SCHEDULERS.get(options.grove.scheduler)
