"""Is a container image pinned? A digest always is; a tag is unless it is missing, `latest`, or a
placeholder left from a template (`${VERSION}`, `<tag>`, `my-tag`, `TAG`)."""

from __future__ import annotations

import re

from dynamo_infra.policy.pods import PodTemplate, named_containers

# A digest reference (`repo@sha256:<hex>`), pinned whatever its tag says.
DIGEST = re.compile(r"@[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}$")
# Characters of a template variable or an unfilled placeholder in a tag.
PLACEHOLDER_MARKS = re.compile(r"[${}<>()%]")
# Tags that name no release: the moving default, and words templates leave for the user to replace.
UNPINNED_TAGS = frozenset(
    {
        "latest",
        "tag",
        "my-tag",
        "mytag",
        "your-tag",
        "image-tag",
        "version",
        "changeme",
        "change-me",
        "replaceme",
        "replace-me",
        "placeholder",
        "todo",
        "tbd",
        "xxx",
    }
)
# An all-capitals tag (`TAG`, `IMAGE_TAG`, `VERSION`) is a variable's name, not a release.
VARIABLE_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def image_tag(image: str) -> str | None:
    """The tag of an image reference (None when it has none)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else None


def unpinned_reason(image: str) -> str | None:
    """Why `image` is not pinned, or None when it is."""
    if DIGEST.search(image):
        return None
    if PLACEHOLDER_MARKS.search(image):
        return "has a placeholder"
    tag = image_tag(image)
    if tag is None:
        return "has no tag (pulls latest)"
    if tag.lower() in UNPINNED_TAGS or VARIABLE_NAME.fullmatch(tag):
        return "has the tag latest" if tag.lower() == "latest" else f"has the placeholder tag {tag}"
    return None


def image_violations(templates: list[PodTemplate]) -> list[str]:
    """One line per container whose image is not pinned."""
    out = []
    for where, c in named_containers(templates):
        image = str(c.get("image") or "")
        reason = unpinned_reason(image) if image else "has no image"
        if reason:
            out.append(f"{where}: image {image!r} {reason}; pin a version tag or a digest")
    return out
