"""The stack trace each registration sends the engine, cut to the frames that say where a resource came from.

The Python SDK sends every frame below a resource's constructor — the interpreter's, asyncio's, its own
runtime's — and the engine keeps them in the state beside the resource: about 1.2 KB and 30 values per
resource, a quarter of a graph's state, rewritten by every checkpoint of a self-managed backend. Trimmed,
a trace keeps its first frame and the first frame outside this package (the program line that made the
resource, skipping this package's frames between them); the source position (its first frame) is
unchanged.

Opt-in, process-wide: `trim_stack_traces()` (the stack program calls it first). The engine does not compare
traces when a resource is the same, so a trimmed trace replaces a long one only when the resource is
written anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pulumi.runtime.resource as sdk_resource
from pulumi.runtime.proto import source_pb2

import dynamo_infra

# The SDK's function that builds a registration's trace (private: looked up, never assumed).
SDK_TRACE_FUNCTION = "_get_stack_trace"
# Marks the function installed here, so a second call installs nothing.
TRIMMED_MARK = "_dynamo_infra_trimmed"
# URI prefix of this package's files, as the SDK writes a frame's file.
PACKAGE_URI = Path(dynamo_infra.__file__).resolve().parent.as_uri() + "/"


def trimmed(trace: source_pb2.StackTrace, package_uri: str = PACKAGE_URI) -> source_pb2.StackTrace:
    """The first frame of `trace`, then (if that one is in the package at `package_uri`) the first frame
    outside that package."""
    frames = list(trace.frames)
    if not frames or not frames[0].pc.uri.startswith(package_uri):
        return source_pb2.StackTrace(frames=frames[:1])
    caller = next((f for f in frames if not f.pc.uri.startswith(package_uri)), None)
    return source_pb2.StackTrace(frames=[frames[0], *([caller] if caller else [])])


def trim_stack_traces() -> bool:
    """Make every later registration of this process send a trimmed trace; False when the SDK has no
    trace function to wrap (it then sends what it sends)."""
    full: Callable[[], source_pb2.StackTrace] | None = getattr(sdk_resource, SDK_TRACE_FUNCTION, None)
    if full is None:
        return False
    if getattr(full, TRIMMED_MARK, False):
        return True

    def trimmed_trace() -> source_pb2.StackTrace:
        return trimmed(full(), PACKAGE_URI)

    setattr(trimmed_trace, TRIMMED_MARK, True)
    setattr(sdk_resource, SDK_TRACE_FUNCTION, trimmed_trace)
    return True
