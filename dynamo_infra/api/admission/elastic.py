"""The webhook's rule for vLLM elastic expert parallelism on Ray (`--enable-elastic-ep` with
`--data-parallel-backend ray` / `-dpb ray`): the operator starts the pod's Ray head by wrapping the
main container's command, so the command must be explicit (not the image ENTRYPOINT).

Ported from 1.6-era `deploy/operator/internal/webhook/validation/shared_helpers.go`
(`validateElasticEPRequiresCommand`, applied to DGD components and DCDs) and
`internal/dynamo/backend_vllm.go` (`IsElasticEPRayLaunch`), as on upstream main 2a6da14c8 (Aug 21) and
michaelfeil/dynamo@80b177f2c87c3c80dec88524bb0cda666cc3effc."""

from __future__ import annotations

from typing import Final

from dynamo_infra.api import v1beta1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.paths import At
from dynamo_infra.api.common import MAIN_CONTAINER
from dynamo_infra.api.errors import Problem
from dynamo_infra.api.manifest import Manifest

VLLM: Final = "vllm"
ENABLE_ELASTIC_EP: Final = "--enable-elastic-ep"
# vLLM's data-parallel backend flag, its documented short alias, and the backend elastic EP needs.
DATA_PARALLEL_BACKEND_FLAGS: Final = ("--data-parallel-backend", "-dpb")
RAY: Final = "ray"
COMMAND_REQUIRED: Final = (
    "elastic expert parallelism (--enable-elastic-ep with --data-parallel-backend ray) requires an explicit "
    "container command; the operator starts the single-pod Ray head by wrapping that command and cannot "
    "start it from the image ENTRYPOINT"
)


def is_elastic_ep_ray_launch(container: Manifest) -> bool:
    """Whether the container's command line (command + args, split on whitespace) asks for elastic EP on Ray."""
    tokens = [
        t
        for part in [*(container.get("command") or []), *(container.get("args") or [])]
        for t in str(part).split()
    ]
    return ENABLE_ELASTIC_EP in tokens and any(
        _has_arg(tokens, flag, RAY) for flag in DATA_PARALLEL_BACKEND_FLAGS
    )


def _has_arg(tokens: list[str], flag: str, value: str) -> bool:
    joined, equals = f"{flag} {value}", f"{flag}={value}"
    return any(
        joined in t or equals in t or (t == flag and i + 1 < len(tokens) and tokens[i + 1] == value)
        for i, t in enumerate(tokens)
    )


def elastic_ep_problems(backend_framework: str | None, c: v1beta1.ComponentFields, at: At) -> list[Problem]:
    if backend_framework != VLLM or c.pod_template is None:
        return []
    containers = (c.pod_template.spec or {}).get("containers") or []
    i = next((i for i, x in enumerate(containers) if x.get("name") == MAIN_CONTAINER), None)
    if i is None or containers[i].get("command") or not is_elastic_ep_ray_launch(containers[i]):
        return []
    return [field.required(at("podTemplate", "spec", "containers", i, "command"), COMMAND_REQUIRED)]
