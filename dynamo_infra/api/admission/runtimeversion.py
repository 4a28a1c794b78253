"""Semantic versions as the webhook reads them: the runtime version in an image tag, and the
operator-origin-version annotation (Masterminds semver, loose form)."""

from __future__ import annotations

import re

# An image tag that names a runtime version: optional v/V, then strict SemVer 2.0.
_IMAGE_TAG = re.compile(
    r"[vV]?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)
# Masterminds `NewVersion` (coercing): v, 1 to 3 numbers, prerelease, build metadata.
_LOOSE = re.compile(
    r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
)
# Version numbers are uint64 in Go.
_MAX_UINT64 = 2**64 - 1
_IDENTIFIER = re.compile(r"[0-9A-Za-z-]+")


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
    if any(n > _MAX_UINT64 for n in numbers):
        return None
    return numbers[0], numbers[1], numbers[2]


def runtime_version_override_required(image: str, override: str | None) -> bool:
    """Whether the webhook asks for `runtimeVersionOverride`: no override and no version in the tag."""
    return not override and image_version(image) is None


def is_loose_semver(value: str) -> bool:
    """Whether Masterminds `semver.NewVersion` accepts `value` (`1`, `v1.2`, `1.2.3-rc.1+build`)."""
    m = _LOOSE.fullmatch(value)
    if m is None:
        return False
    numbers = [m.group(1), (m.group(2) or ".0")[1:], (m.group(3) or ".0")[1:]]
    if any(int(n) > _MAX_UINT64 for n in numbers):
        return False
    prerelease, metadata = m.group(5), m.group(8)
    if prerelease and not all(
        p and _IDENTIFIER.fullmatch(p) and not (p.isdigit() and len(p) > 1 and p[0] == "0")
        for p in prerelease.split(".")
    ):
        return False
    return not metadata or all(p and _IDENTIFIER.fullmatch(p) for p in metadata.split("."))
