"""Semantic versions as the webhook reads them: the runtime version in an image tag, and the
operator-origin-version annotation (Masterminds semver, loose form)."""

from __future__ import annotations

import re

from dynamo_infra.api.releases import MAX_UINT64, image_tag, image_version

__all__ = ["image_tag", "image_version", "is_loose_semver", "runtime_version_override_required"]

# Masterminds `NewVersion` (coercing): v, 1 to 3 numbers, prerelease, build metadata.
_LOOSE = re.compile(
    r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
)
_IDENTIFIER = re.compile(r"[0-9A-Za-z-]+")


def runtime_version_override_required(image: str, override: str | None) -> bool:
    """Whether the webhook asks for `runtimeVersionOverride`: no override and no version in the tag."""
    return not override and image_version(image) is None


def is_loose_semver(value: str) -> bool:
    """Whether Masterminds `semver.NewVersion` accepts `value` (`1`, `v1.2`, `1.2.3-rc.1+build`)."""
    m = _LOOSE.fullmatch(value)
    if m is None:
        return False
    numbers = [m.group(1), (m.group(2) or ".0")[1:], (m.group(3) or ".0")[1:]]
    if any(int(n) > MAX_UINT64 for n in numbers):
        return False
    prerelease, metadata = m.group(5), m.group(8)
    if prerelease and not all(
        p and _IDENTIFIER.fullmatch(p) and not (p.isdigit() and len(p) > 1 and p[0] == "0")
        for p in prerelease.split(".")
    ):
        return False
    return not metadata or all(p and _IDENTIFIER.fullmatch(p) for p in metadata.split("."))
