"""TensorRT-LLM backend, single-node: no changes (no compilation cache default)."""

from __future__ import annotations

from dynamo_infra.render.context import ComponentContext, Obj


class TRTLLM:
    def container(self, ctx: ComponentContext, container: Obj) -> Obj:
        return container

    def pod_spec(self, ctx: ComponentContext, pod: Obj) -> Obj:
        return pod

    def default_compilation_cache_path(self) -> str | None:
        return None
