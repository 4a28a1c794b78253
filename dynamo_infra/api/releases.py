"""Operator releases as data: the runtime version the operator resolves per component, and the one
table of runtime-version gates it consults (DESIGN decision 14).

The operator resolves a component's runtime version from `runtimeVersionOverride` when set, else from
the semantic-version tag of its main container image, and turns behaviour on from the release a gate
names. A component whose version cannot be resolved gets no gated behaviour (renders as at our pin).
Ported from ai-dynamo/dynamo `deploy/operator/internal/features/runtime/{gate,gates}.go` and
`internal/runtimeversion` as the fork michaelfeil/dynamo holds them at 80b177f2 (the 1.6.0 cut).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# An image tag that names a runtime version: optional v/V, then strict SemVer 2.0.
_IMAGE_TAG = re.compile(
    r"[vV]?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)
# Version numbers are uint64 in Go.
MAX_UINT64 = 2**64 - 1
# An explicit `runtimeVersionOverride`: strict SemVer 2.0, no `v` (Masterminds `StrictNewVersion`).
_OVERRIDE = re.compile(_IMAGE_TAG.pattern.removeprefix("[vV]?"))
# The operator's error when `runtimeVersionOverride` is set but no semantic version.
OVERRIDE_INVALID = 'must be a semantic version such as "1.1.0"'


def image_tag(image: str) -> str:
    """The tag of an image reference ("" when it has none); a digest is ignored."""
    ref = image.strip().split("@", 1)[0]
    colon = ref.rfind(":")
    return ref[colon + 1 :] if colon > ref.rfind("/") else ""


def image_version(image: str) -> tuple[int, int, int] | None:
    """The runtime version an image tag names (`runtime:v1.2.3-cuda13` -> (1, 2, 3)), else None."""
    m = _IMAGE_TAG.fullmatch(image_tag(image).strip())
    if m is None:
        return None
    numbers = tuple(int(g) for g in m.groups()[:3])
    if any(n > MAX_UINT64 for n in numbers):
        return None
    return numbers[0], numbers[1], numbers[2]


@dataclass(frozen=True, order=True)
class RuntimeVersion:
    """A runtime compatibility version: the semver core (prerelease and build metadata dropped)."""

    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @classmethod
    def parse(cls, value: str) -> RuntimeVersion | None:
        """An explicit `runtimeVersionOverride` (`1.6.0`; untrimmed, no `v`), else None."""
        m = _OVERRIDE.fullmatch(value)
        if m is None:
            return None
        numbers = [int(g) for g in m.groups()[:3]]
        return None if any(n > MAX_UINT64 for n in numbers) else cls(*numbers)

    @classmethod
    def of_image(cls, image: str) -> RuntimeVersion | None:
        """The version an image tag names (`vllm-runtime:1.6.1`, `dynamo:v1.5.0-cuda13`), else None."""
        numbers = image_version(image)
        return None if numbers is None else cls(*numbers)


def resolve(image: str | None, override: str | None) -> RuntimeVersion | None:
    """runtimeversion.Resolve: a set override is authoritative (an invalid one resolves to nothing, the
    image tag is not consulted, and a tag that names another version does not matter); else the tag."""
    if override:
        return RuntimeVersion.parse(override)
    return RuntimeVersion.of_image(image or "") if image else None


@dataclass(frozen=True)
class Gate:
    """Operator behaviour that starts at a runtime release."""

    name: str
    since: RuntimeVersion
    reason: str

    def enabled(self, version: RuntimeVersion | None) -> bool:
        """On for a known version at or above `since`; off for an unresolved one."""
        return version is not None and version >= self.since


V1_5_0 = RuntimeVersion(1, 5, 0)
V1_6_0 = RuntimeVersion(1, 6, 0)

# Worker `DYN_HEALTH_CHECK_ENABLED=true` (canary health checks); no backend opts out at the 1.6.0 cut.
CANARY_HEALTH_CHECKS = Gate(
    "CanaryHealthChecks", V1_5_0, "first runtime whose version is in the worker hash (PR #11083)"
)
# Worker liveness `failureThreshold` 3 instead of 1.
INCREASED_WORKER_FAILURE_THRESHOLD = Gate(
    "IncreasedWorkerFailureThreshold", V1_5_0, "first runtime whose version is in the worker hash (PR #13512)"
)
# The native Rust EPP: `eppConfig` must be absent from this release on and present below it.
NATIVE_RUST_EPP = Gate("NativeRustEPP", V1_5_0, "first release shipping the native Rust EPP image")
# The operator projects the per-component status the 1.6 planner reads (GPU shape, model, power).
PLANNER_DGD_COMPONENT_STATUS = Gate(
    "PlannerDGDComponentStatus", V1_6_0, "first planner that reads component status, not pod templates"
)
# The resolved runtime version is part of the worker hash input (PR #12633); render.worker_hash also
# normalises those workers' specs there, and Grove worker cliques carry the hash from it on (PR #12769).
RUNTIME_VERSION_IN_WORKER_HASH = Gate(
    "RuntimeVersionInWorkerHash", V1_5_0, "a new runtime release starts a new worker generation"
)

# Checkpoints are the ai-dynamo/snapshot API (SnapshotJob capture, PodSnapshot restore through pod
# annotations) instead of DynamoCheckpoint and its capture Job.
SNAPSHOT_API_CHECKPOINTS = Gate(
    "SnapshotAPICheckpoints", V1_5_0, "first release without DynamoCheckpoint (PR #14076)"
)

# Dynamo's injection moves from `main` to a `runtime` native-sidecar init container (sidecar mode).
# The 1.6 operator applies it whatever the version; gated here so a `runtime` init container of an
# older runtime keeps rendering as at our pin (DESIGN decision 14).
RUNTIME_SIDECAR = Gate("RuntimeSidecar", V1_6_0, "first release whose operator has sidecar mode")

# Every gate, in release order: the one table the render and admission modules consult.
GATES: tuple[Gate, ...] = (
    CANARY_HEALTH_CHECKS,
    INCREASED_WORKER_FAILURE_THRESHOLD,
    NATIVE_RUST_EPP,
    RUNTIME_VERSION_IN_WORKER_HASH,
    SNAPSHOT_API_CHECKPOINTS,
    PLANNER_DGD_COMPONENT_STATUS,
    RUNTIME_SIDECAR,
)
