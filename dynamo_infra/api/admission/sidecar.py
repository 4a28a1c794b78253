"""Sidecar mode: Dynamo's runtime in a `runtime` native-sidecar init container beside a stock engine
in `main`. Which container is Dynamo's (`runtime_sidecar`, the one decision render and admission
share) and the webhook's rules for it (`sidecar_problems`).

Ported from ai-dynamo/dynamo `deploy/operator/internal/dynamo/component_dynamo_sidecar.go`
(`GetDynamoSidecar`, `ValidateDynamoSidecar`) as michaelfeil/dynamo holds it at eaf61940 (1.6.0 cut),
called from `internal/webhook/validation/` for every component. The operator selects sidecar mode by
the init container's name alone ("regardless of validity"); we also require the runtime release that
container's image names to have the mode (`releases.RUNTIME_SIDECAR`), so older graphs render as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dynamo_infra.api import releases
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.paths import At
from dynamo_infra.api.common import MAIN_CONTAINER
from dynamo_infra.api.errors import Problem
from dynamo_infra.api.manifest import Manifest

# The reserved init container that hosts Dynamo's runtime in sidecar mode.
RUNTIME_CONTAINER = "runtime"
# A Kubernetes native sidecar: an init container that keeps running beside the pod's containers.
SIDECAR_RESTART_POLICY = "Always"
# Component types sidecar mode serves.
_WORKER_TYPES = ("worker", "prefill", "decode")
_PLANNED = "is not currently supported for {}; support is planned for a future release"


def _index(containers: Any, name: str) -> int | None:
    return next((i for i, c in enumerate(containers or []) if c.get("name") == name), None)


def runtime_sidecar(template_spec: Mapping[str, Any] | None, override: str | None) -> Manifest | None:
    """GetDynamoSidecar: the `runtime` init container when its runtime release has sidecar mode."""
    init = (template_spec or {}).get("initContainers")
    i = _index(init, RUNTIME_CONTAINER)
    if i is None:
        return None
    container = dict(init[i])  # type: ignore[index]
    version = releases.resolve(container.get("image"), override)
    return container if releases.RUNTIME_SIDECAR.enabled(version) else None


def runtime_container(template_spec: Mapping[str, Any] | None, override: str | None) -> str:
    """The container the operator injects Dynamo into (and names in `CONTAINER_NAME`)."""
    return RUNTIME_CONTAINER if runtime_sidecar(template_spec, override) is not None else MAIN_CONTAINER


def runtime_image(spec: Mapping[str, Any], at: At) -> tuple[str, str] | None:
    """In sidecar mode, the image the runtime version is resolved from and its path; else None."""
    template_spec = (spec.get("podTemplate") or {}).get("spec") or {}
    if runtime_sidecar(template_spec, spec.get("runtimeVersionOverride")) is None:
        return None
    i = _index(template_spec.get("initContainers"), RUNTIME_CONTAINER)
    image = template_spec["initContainers"][i].get("image") or ""
    return str(image), at("podTemplate", "spec", "initContainers", i, "image")


def sidecar_problems(spec: Mapping[str, Any], name: str, at: At) -> list[Problem]:
    """ValidateDynamoSidecar on a component's wire spec: the rules of a `runtime` init container."""
    template_spec = (spec.get("podTemplate") or {}).get("spec") or {}
    sidecar = runtime_sidecar(template_spec, spec.get("runtimeVersionOverride"))
    if sidecar is None:
        return []
    i = _index(template_spec.get("initContainers"), RUNTIME_CONTAINER)
    runtime_at = ("podTemplate", "spec", "initContainers", i)
    detail = f'component "{name}" with a runtime init container'
    out: list[Problem] = []
    if spec.get("type") not in _WORKER_TYPES:
        out.append(
            field.forbidden(
                at(*runtime_at, "name"), "is supported only for worker, prefill, and decode components"
            )
        )
    # ContainerRestartPolicy is a named Go string type: its bad value prints as JSON.
    policy = sidecar.get("restartPolicy")
    if policy != SIDECAR_RESTART_POLICY:
        out.append(
            field.invalid(at(*runtime_at, "restartPolicy"), str(policy or ""), f"must be Always for {detail}")
        )
    containers = template_spec.get("containers") or []
    j = _index(containers, MAIN_CONTAINER)
    if j is None:
        out.append(
            field.required(
                at("podTemplate", "spec", "containers"), f"main engine container is required for {detail}"
            )
        )
    elif not containers[j].get("image"):
        out.append(
            field.required(
                at("podTemplate", "spec", "containers", j, "image"), f"engine image is required for {detail}"
            )
        )
    if spec.get("multinode") is not None:
        out.append(field.forbidden(at("multinode"), _PLANNED.format(detail)))
    experimental = spec.get("experimental") or {}
    if (experimental.get("checkpoint") or {}).get("enabled"):
        out.append(field.forbidden(at("experimental", "checkpoint", "enabled"), _PLANNED.format(detail)))
    for key in ("gpuMemoryService", "failover"):
        if experimental.get(key) is not None:
            out.append(field.forbidden(at("experimental", key), _PLANNED.format(detail)))
    return out
