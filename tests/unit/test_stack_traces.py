"""A registration's stack trace, trimmed to its first frame and the program line outside the package, with
the SDK's own trace function underneath (so an SDK that changes it fails here)."""

from __future__ import annotations

from pathlib import Path

import pulumi.runtime.resource as sdk_resource
import pytest
from pulumi.runtime.proto import source_pb2

from dynamo_infra.components import stack_traces
from dynamo_infra.components.stack_traces import PACKAGE_URI, trim_stack_traces, trimmed

HERE = Path(__file__).resolve().as_uri()


def trace(*uris: str) -> source_pb2.StackTrace:
    return source_pb2.StackTrace(
        frames=[
            source_pb2.StackFrame(pc=source_pb2.SourcePosition(uri=u, line=i + 1)) for i, u in enumerate(uris)
        ]
    )


def uris(t: source_pb2.StackTrace) -> list[str]:
    return [f.pc.uri for f in t.frames]


def test_package_frames_between_the_first_and_the_program_are_dropped() -> None:
    ours = [f"{PACKAGE_URI}components/workload.py", f"{PACKAGE_URI}components/graph.py", f"{PACKAGE_URI}x.py"]
    full = trace(
        *ours, "file:///project/__main__.py", "", "file:///venv/pulumi/runtime/stack.py", "file:///asyncio.py"
    )
    assert uris(trimmed(full)) == [ours[0], "file:///project/__main__.py"]
    assert trimmed(full).frames[0].pc.line == 1


def test_a_resource_made_outside_the_package_keeps_its_own_frame_only() -> None:
    full = trace("file:///platform/app.py", f"{PACKAGE_URI}components/graph.py", "file:///asyncio.py")
    assert uris(trimmed(full)) == ["file:///platform/app.py"]


def test_empty_and_all_package_traces() -> None:
    assert uris(trimmed(source_pb2.StackTrace())) == []
    assert uris(trimmed(trace(f"{PACKAGE_URI}a.py", f"{PACKAGE_URI}b.py"))) == [f"{PACKAGE_URI}a.py"]


class _Resource:
    """Three constructors deep, as the SDK expects of a resource class (it skips to the third `__init__`)."""

    def __init__(self) -> None:
        self.trace = sdk_resource._get_stack_trace()


class _Custom(_Resource):
    def __init__(self) -> None:
        super().__init__()


class _Concrete(_Custom):
    def __init__(self) -> None:
        super().__init__()


def make() -> source_pb2.StackTrace:
    return _Concrete().trace


def test_installed_on_the_sdk_once(monkeypatch: pytest.MonkeyPatch) -> None:
    original = sdk_resource._get_stack_trace
    monkeypatch.setattr(sdk_resource, "_get_stack_trace", original)
    full = make()
    assert len(full.frames) > 2 and full.frames[0].pc.uri == HERE
    # This test file stands for the package: its frames are "ours", pytest's are the caller's.
    monkeypatch.setattr(stack_traces, "PACKAGE_URI", HERE)
    assert trim_stack_traces() is True
    installed = sdk_resource._get_stack_trace
    assert installed is not original
    assert trim_stack_traces() is True and sdk_resource._get_stack_trace is installed
    short = make()
    assert len(short.frames) == 2
    assert short.frames[0] == full.frames[0]
    assert short.frames[1].pc.uri != HERE and short.frames[1].pc.uri


def test_an_sdk_without_the_function_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(sdk_resource, "_get_stack_trace")
    assert trim_stack_traces() is False
    assert not hasattr(sdk_resource, "_get_stack_trace")
