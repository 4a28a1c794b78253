"""The frozen inputs every render function receives."""

from __future__ import annotations

from dataclasses import dataclass

from dynamo_infra.api import v1beta1
from dynamo_infra.config import ClusterOptions


@dataclass(frozen=True)
class GraphContext:
    """One graph being rendered: the hub-version DGD, where it goes, and the cluster options."""

    dgd: v1beta1.DynamoGraphDeployment
    namespace: str
    options: ClusterOptions

    @property
    def name(self) -> str:
        return self.dgd.name

    @property
    def annotations(self) -> dict[str, str]:
        return dict(self.dgd.metadata.annotations or {})

    @property
    def discovery_backend(self) -> str:
        """`kubernetes` unless the DGD annotation or the cluster options say `etcd`."""
        from dynamo_infra.render.names import ANNOTATION_DISCOVERY_BACKEND

        return self.annotations.get(ANNOTATION_DISCOVERY_BACKEND) or self.options.discovery.backend


@dataclass(frozen=True)
class ComponentContext:
    """One component of a graph, with the names the operator derives for it."""

    graph: GraphContext
    component: v1beta1.Component
    dynamo_namespace: str
    dcd_name: str
    worker_hash: str | None

    @property
    def type(self) -> str:
        return self.component.type or ""
