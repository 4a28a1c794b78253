"""What an engine that changes nothing answers on the backend axis; engines override what they adjust."""

from __future__ import annotations

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.multinode import Placement


class EngineDefaults:
    """The main container and pod as rendered, no default cache path, secret or failover engine."""

    leader_starts_after_workers = False

    def container(self, ctx: ComponentContext, container: Manifest, placement: Placement) -> Manifest:
        return container

    def pod_spec(self, ctx: ComponentContext, pod: Manifest, placement: Placement) -> Manifest:
        return pod

    def default_compilation_cache_path(self) -> str | None:
        return None

    def multinode_secret(self, ctx: ComponentContext) -> str | None:
        return None

    def failover_engine(self, engine: Manifest, n: int, nodes: int) -> Manifest | None:
        return None
