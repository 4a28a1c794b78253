"""The backend axis (vllm, sglang, trtllm): how each engine adjusts the main container and the pod,
and the engine's other choices (multinode secrets, clique start order, failover engines)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol

from dynamo_infra.api import DynamoValidationError, Problem, v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.backends.defaults import EngineDefaults
from dynamo_infra.render.backends.sglang import SGLang
from dynamo_infra.render.backends.trtllm import TRTLLM
from dynamo_infra.render.backends.vllm import VLLM
from dynamo_infra.render.context import MAIN_CONTAINER, ComponentContext
from dynamo_infra.render.multinode import Placement

# Backend of components that run no engine (frontend, planner, epp, other) or none detected.
NOOP = "noop"


class Backend(Protocol):
    """Steps of GenerateBasePodSpec that depend on the engine (multinode launch included)."""

    # backendFramework value that selects it (and the `dynamo.<name>` module it runs).
    name: str
    # Grove starts a multinode leader clique only after its worker cliques.
    leader_starts_after_workers: bool

    def container(self, ctx: ComponentContext, container: Manifest, placement: Placement) -> Manifest: ...

    def pod_spec(self, ctx: ComponentContext, pod: Manifest, placement: Placement) -> Manifest: ...

    def default_compilation_cache_path(self) -> str | None:
        """Where the compilation cache mounts when `compilationCache.mountPath` is unset."""
        ...

    def multinode_secret(self, ctx: ComponentContext) -> str | None:
        """The Secret the pods of a multinode component mount but the user provides."""
        ...

    def failover_engine(self, engine: Manifest, n: int, nodes: int) -> Manifest | None:
        """Engine `n` of intra-pod failover; None when the engine does not support failover."""
        ...


class Noop(EngineDefaults):
    name = NOOP


# One entry per backendFramework of the API.
BACKENDS: Mapping[str, Backend] = {b.name: b for b in (VLLM(), SGLang(), TRTLLM())}
NOOP_BACKEND: Backend = Noop()
# A worker command naming `python… -m … dynamo.<backend>` selects that backend.
DETECTION_PATTERNS: Mapping[str, re.Pattern[str]] = {
    name: re.compile(rf"python[0-9.]*\s+[^|&;]*-m\s+[^|&;]*dynamo\.{name}[^|&;]*") for name in BACKENDS
}


def detect(command: list[str], args: list[str], where: str) -> str | None:
    """DetectBackendFrameworkFromArgs: the one backend named in command/args, or None."""
    text = " ".join([*command, *args])
    found = sorted(name for name, pattern in DETECTION_PATTERNS.items() if pattern.search(text))
    if len(found) > 1:
        raise DynamoValidationError(
            [Problem(where, f"multiple backend frameworks detected from command: {found}")]
        )
    return found[0] if found else None


def graph_backend_framework(dgd: v1beta1.DynamoGraphDeployment) -> str:
    """The DGD's backendFramework as set, else the single backend detected in worker commands."""
    if dgd.spec.backend_framework:
        return dgd.spec.backend_framework
    detected = ""
    for c in dgd.spec.components or []:
        if not c.is_worker:
            continue
        main = (c.pod_template.container(MAIN_CONTAINER) if c.pod_template else None) or {}
        found = detect(
            list(main.get("command") or []), list(main.get("args") or []), f"spec.components[{c.name}]"
        )
        if not found:
            continue
        if detected and found != detected:
            raise DynamoValidationError(
                [
                    Problem(
                        "spec.backendFramework",
                        f"multiple backend frameworks detected for generated DynamoComponentDeployments: "
                        f"{detected} and {found}",
                    )
                ]
            )
        detected = found
    return detected


def backend_framework(ctx: ComponentContext) -> str:
    """determineBackendFramework: detected from a worker's command, else the DCD's, else noop."""
    if not ctx.is_worker:
        return NOOP
    main = ctx.container(MAIN_CONTAINER) or {}
    explicit = ctx.spec.get("backendFramework") or None
    detected = detect(list(main.get("command") or []), list(main.get("args") or []), "spec.podTemplate")
    if detected and explicit and detected != explicit:
        raise DynamoValidationError(
            [
                Problem(
                    f"components[{ctx.name}]",
                    f'backend framework mismatch: detected "{detected}" from command but '
                    f'explicitly configured as "{explicit}"',
                )
            ]
        )
    return detected or explicit or NOOP


def backend_for(name: str, where: str) -> Backend:
    """BackendFactory: the named backend; an unknown name is an error, as in the operator."""
    if name == NOOP:
        return NOOP_BACKEND
    backend = BACKENDS.get(name)
    if backend is None:
        valid = ", ".join(BACKENDS)
        raise DynamoValidationError(
            [Problem(where, f"unsupported backend framework: {name} (valid values: {valid})")]
        )
    return backend


def component_backend(ctx: ComponentContext) -> Backend:
    """The backend a component's pods are rendered with."""
    return backend_for(backend_framework(ctx), f"components[{ctx.name}].backendFramework")
