"""The program's end-of-run wait for its outputs, linear in their number.

After the program's code returns, the Python SDK (`pulumi.runtime.stack.wait_for_rpcs`) waits for every
outstanding registration and then for every outstanding output. It waits for the outputs with
`asyncio.wait(FIRST_COMPLETED)` over all of them, again after each completion: each round adds and
removes a callback on every output still pending. A stack's outputs resolve as the engine finishes its
resources, so a 100-graph first `up` went through ~1,700 rounds over ~1,600 pending outputs, about
20 s of the program's CPU on the 2 cores the engine and the API server share with it.

Here each outstanding output gets one callback that queues it when done; the wait takes them from the
queue in the order they finish and awaits each, so a failed one fails the program as soon as it
finishes, as the SDK's does (a registration the engine reported failed excepted, as there). The
registrations are still waited for by the SDK's own function, which this one calls.

Opt-in, process-wide: `linear_output_wait()` (the stack program calls it first). It installs only over
the SDK function it was written against (`SDK_WAIT_DIGEST`): another SDK keeps its own wait.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import pulumi.runtime.stack as sdk_stack
from pulumi.runtime.settings import SETTINGS

# The SDK's wait, by name in its module (private: looked up, never assumed).
SDK_WAIT_FUNCTION = "wait_for_rpcs"
# SHA-256 of that function's source in the SDK tools/toolchain.toml pins: another source is not replaced.
SDK_WAIT_DIGEST = "c92289a2f839f5221a4068c262a706a05ce2af506b5484545ac5d371b6211e48"
# Marks the function installed here, so a second call installs nothing.
LINEAR_MARK = "_dynamo_infra_linear"
# Raised into the outputs of a resource whose registration the engine reported failed: not a program
# error (continue-on-error updates go on); absent from some SDKs.
REGISTRATION_FAILED: type[BaseException] | None = getattr(sdk_stack, "ResourceRegistrationFailed", None)

Wait = Callable[..., Awaitable[None]]


def source_digest(function: Callable[..., Any]) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()


async def settle_outputs() -> None:
    """Await every output the SDK tracks (`SETTINGS.outputs`), those made meanwhile too, each once, in
    the order they finish; the first failure is raised."""
    finished: asyncio.Queue[asyncio.Future[Any]] = asyncio.Queue()
    pending = 0
    while True:
        with SETTINGS.lock:
            fresh = list(SETTINGS.outputs)
            SETTINGS.outputs.clear()
        for output in fresh:
            output.add_done_callback(finished.put_nowait)
        pending += len(fresh)
        if not pending:
            return
        done = await finished.get()
        pending -= 1
        try:
            await done
        except Exception as e:
            if REGISTRATION_FAILED is None or not isinstance(e, REGISTRATION_FAILED):
                raise


def linear_wait(sdk_wait: Wait) -> Wait:
    """`sdk_wait` (the SDK's `wait_for_rpcs`) with its outputs awaited by `settle_outputs`."""

    async def wait_for_rpcs(await_all_outstanding_tasks: bool = True) -> None:
        while True:
            await sdk_wait(await_all_outstanding_tasks=False)
            if not await_all_outstanding_tasks:
                return
            await settle_outputs()
            if not SETTINGS.rpc_manager.rpcs:
                return

    setattr(wait_for_rpcs, LINEAR_MARK, True)
    return wait_for_rpcs


def linear_output_wait(expected_digest: str = SDK_WAIT_DIGEST) -> bool:
    """Make this process's program wait for its outputs linearly; False when the SDK's wait is not the one
    this was written against (it then waits as it does)."""
    sdk_wait: Wait | None = getattr(sdk_stack, SDK_WAIT_FUNCTION, None)
    if sdk_wait is None:
        return False
    if getattr(sdk_wait, LINEAR_MARK, False):
        return True
    try:
        digest = source_digest(sdk_wait)
    except (OSError, TypeError):
        return False
    if digest != expected_digest:
        return False
    setattr(sdk_stack, SDK_WAIT_FUNCTION, linear_wait(sdk_wait))
    return True
