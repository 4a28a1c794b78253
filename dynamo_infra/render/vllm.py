"""vLLM backend, single-node: the compilation cache location."""

from __future__ import annotations

from dynamo_infra.render.context import ComponentContext, Obj

# vLLM's compilation cache default mount point.
DEFAULT_CACHE_PATH = "/root/.cache/vllm"
# Env var telling vLLM where its cache root is.
CACHE_ENV = "VLLM_CACHE_ROOT"


class VLLM:
    def container(self, ctx: ComponentContext, container: Obj) -> Obj:
        cache = ctx.spec.get("compilationCache") or {}
        path = cache.get("mountPath") or (DEFAULT_CACHE_PATH if cache else None)
        if not path:
            return container
        return {**container, "env": [*(container.get("env") or []), {"name": CACHE_ENV, "value": path}]}

    def pod_spec(self, ctx: ComponentContext, pod: Obj) -> Obj:
        return pod

    def default_compilation_cache_path(self) -> str | None:
        return DEFAULT_CACHE_PATH
