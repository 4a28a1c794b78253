"""Waiting for one object to reach a state: a Kubernetes watch, or polling when a watch cannot be had.

The wait lists the object's collection by name (`fieldSelector=metadata.name=…`), which gives its state
and the collection's `resourceVersion`, then watches from there (`?watch=1&resourceVersion=…`, with
`timeoutSeconds` and bookmarks) and looks at each event as it comes. As client-go's reflector
(k8s.io/client-go/tools/cache/reflector.go): a watch the server ends is started again from the last
resourceVersion seen (bookmarks move it on without an object change), and a 410 Gone (the version was
compacted away) lists again. When the watch is refused (the identity may not `watch`) or breaks, the
rest of the wait polls with `get`, as before watches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.errors import DynamoInfraError

# Longest single watch request (the server ends it then; it is started again from where it was).
WATCH_TIMEOUT_S = 60
# A poll looks again after this long, then twice as long each time up to its interval (most
# deletions are over within milliseconds; a Deployment's pods take longer).
FIRST_POLL_S = 0.02
# A watch that ends sooner than this without an event, when asked to last longer, is not working.
EARLY_END_S = 1.0
# HTTP status of a watch whose resourceVersion is too old: list again.
GONE = 410

Until = Callable[[Manifest | None], bool]


class WatchUnavailable(DynamoInfraError):
    """The watch was refused or broke; `status` is the HTTP status (0 when none)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Gone(DynamoInfraError):
    """The watch's resourceVersion is no longer served (410): list again."""


@dataclass(frozen=True)
class Target:
    """One object, as the client reaches it: list its collection by its name, watch from a version,
    get it (the poll)."""

    list_named: Callable[[], Manifest]
    events: Callable[[str, int], Iterator[Manifest]]
    get: Callable[[], Manifest | None]


def resource_version(obj: Manifest | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def wait_for(
    target: Target, until: Until, timeout: float, *, poll: float, watch: bool = True
) -> tuple[bool, Manifest | None, WatchUnavailable | None]:
    """Whether `until(object or None)` held within `timeout` seconds, the object last seen, and why the
    watch was given up for polling (None when it was not)."""
    deadline = time.monotonic() + timeout
    if watch:
        try:
            met, last = _watched(target, until, deadline)
            return met, last, None
        except WatchUnavailable as e:
            met, last = _polled(target, until, deadline, poll)
            return met, last, e
    met, last = _polled(target, until, deadline, poll)
    return met, last, None


def _watched(target: Target, until: Until, deadline: float) -> tuple[bool, Manifest | None]:
    while True:
        listing = target.list_named()
        items = listing.get("items") or []
        current: Manifest | None = items[0] if items else None
        if until(current):
            return True, current
        version = resource_version(listing)
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False, current
                seconds = max(1, min(WATCH_TIMEOUT_S, int(left + 0.999)))
                started, heard = time.monotonic(), False
                stream = target.events(version, seconds)
                try:
                    for event in stream:
                        heard = True
                        kind, obj = event.get("type"), event.get("object") or {}
                        if kind == "ERROR":
                            if obj.get("code") == GONE:
                                raise Gone()
                            message = f"watch error: {obj.get('message', '')}"
                            raise WatchUnavailable(message, int(obj.get("code") or 0))
                        version = resource_version(obj) or version
                        if kind == "BOOKMARK":
                            continue
                        current = None if kind == "DELETED" else obj
                        if until(current):
                            return True, current
                finally:
                    close = getattr(stream, "close", None)
                    if close is not None:
                        close()
                if not heard and time.monotonic() - started < EARLY_END_S < seconds:
                    # Something between us and the server ends watches at once: poll instead.
                    raise WatchUnavailable("the watch ended at once")
        except Gone:
            continue


def _polled(target: Target, until: Until, deadline: float, poll: float) -> tuple[bool, Manifest | None]:
    pause = min(FIRST_POLL_S, poll)
    while True:
        current = target.get()
        if until(current):
            return True, current
        left = deadline - time.monotonic()
        if left <= 0:
            return False, current
        time.sleep(min(pause, left))
        pause = min(pause * 2, poll)
