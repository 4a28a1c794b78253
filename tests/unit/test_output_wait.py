"""The program's end-of-run wait for its outputs: each awaited once, in the order they finish, failures
raised as the SDK raises them, and installed only over the SDK wait it was written against."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pulumi.runtime.stack as sdk_stack
import pytest
from pulumi.runtime.settings import SETTINGS

from dynamo_infra.components import output_wait
from dynamo_infra.components.output_wait import (
    REGISTRATION_FAILED,
    SDK_WAIT_DIGEST,
    linear_output_wait,
    linear_wait,
    settle_outputs,
    source_digest,
)

# Outputs resolved one at a time in the tests of cost.
MANY = 200


class CountingFuture(asyncio.Future[Any]):
    """A future that counts the done-callbacks added to it."""

    added = 0

    def add_done_callback(self, fn: Callable[..., Any], *, context: Any = None) -> None:
        CountingFuture.added += 1
        super().add_done_callback(fn, context=context)


@pytest.fixture(autouse=True)
def tracked() -> Iterator[set[Any]]:
    """The SDK's set of tracked outputs, empty for the test and restored after it."""
    saved = set(SETTINGS.outputs)
    SETTINGS.outputs.clear()
    CountingFuture.added = 0
    yield SETTINGS.outputs
    SETTINGS.outputs.clear()
    SETTINGS.outputs.update(saved)


def track(count: int) -> list[asyncio.Future[Any]]:
    loop = asyncio.get_running_loop()
    futures: list[asyncio.Future[Any]] = [CountingFuture(loop=loop) for _ in range(count)]
    SETTINGS.outputs.update(futures)
    return futures


async def resolve_one_by_one(futures: list[asyncio.Future[Any]], order: list[int]) -> None:
    for i in order:
        await asyncio.sleep(0)
        futures[i].set_result(i)


def test_outputs_are_awaited_as_they_finish_with_those_made_meanwhile() -> None:
    seen: list[int] = []

    async def run() -> None:
        first = track(3)
        for f in first:
            f.add_done_callback(lambda f: seen.append(f.result()))

        async def later() -> None:
            await resolve_one_by_one(first, [2, 0])
            second = track(2)
            second[0].add_done_callback(lambda f: seen.append(f.result() + 10))
            await resolve_one_by_one(second, [0, 1])
            await resolve_one_by_one(first, [1])

        producer = asyncio.ensure_future(later())
        await asyncio.wait_for(settle_outputs(), 5)
        assert producer.done()

    asyncio.run(run())
    assert seen == [2, 0, 10, 1]
    assert not SETTINGS.outputs


def test_each_output_gets_one_callback_where_the_sdk_adds_one_per_round() -> None:
    async def run(wait: Callable[[], Any]) -> int:
        futures = track(MANY)
        producer = asyncio.ensure_future(resolve_one_by_one(futures, list(range(MANY))))
        await asyncio.wait_for(wait(), 30)
        await producer
        return CountingFuture.added

    ours = asyncio.run(run(settle_outputs))
    CountingFuture.added = 0
    sdk = asyncio.run(run(sdk_stack.wait_for_rpcs))
    assert ours == MANY
    assert sdk > 10 * MANY


def test_a_failed_output_fails_the_wait_when_it_finishes() -> None:
    async def run() -> None:
        futures = track(3)

        async def fail_second() -> None:
            await asyncio.sleep(0)
            futures[1].set_exception(ValueError("broken apply"))

        failing = asyncio.ensure_future(fail_second())
        try:
            await asyncio.wait_for(settle_outputs(), 5)
        finally:
            assert failing.done()

    with pytest.raises(ValueError, match="broken apply"):
        asyncio.run(run())


@pytest.mark.skipif(REGISTRATION_FAILED is None, reason="this SDK has no registration-failed marker")
def test_a_registration_the_engine_reported_failed_is_not_a_program_error() -> None:
    assert REGISTRATION_FAILED is not None
    marker = REGISTRATION_FAILED

    async def run() -> None:
        futures = track(2)

        async def settle() -> None:
            await asyncio.sleep(0)
            futures[0].set_exception(marker("engine said no"))
            futures[1].set_result(1)

        settling = asyncio.ensure_future(settle())
        await asyncio.wait_for(settle_outputs(), 5)
        assert settling.done()

    asyncio.run(run())


def test_the_wait_calls_the_sdk_wait_for_registrations_then_settles_outputs() -> None:
    calls: list[bool] = []

    async def sdk_wait(await_all_outstanding_tasks: bool = True) -> None:
        calls.append(await_all_outstanding_tasks)

    async def run(all_tasks: bool) -> None:
        futures = track(1)
        futures[0].set_result(0)
        await linear_wait(sdk_wait)(await_all_outstanding_tasks=all_tasks)

    asyncio.run(run(True))
    assert calls == [False] and not SETTINGS.outputs
    # A provider server's wait (registrations only) leaves the outputs alone.
    calls.clear()
    asyncio.run(run(False))
    assert calls == [False] and len(SETTINGS.outputs) == 1


def test_installed_over_the_pinned_sdk_wait_only(monkeypatch: pytest.MonkeyPatch) -> None:
    original = sdk_stack.wait_for_rpcs
    monkeypatch.setattr(sdk_stack, "wait_for_rpcs", original)
    # The pinned SDK's wait is the one written against: a new SDK fails here until it is read again.
    assert source_digest(original) == SDK_WAIT_DIGEST
    assert linear_output_wait("0" * 64) is False and sdk_stack.wait_for_rpcs is original
    assert linear_output_wait() is True
    installed = sdk_stack.wait_for_rpcs
    assert installed is not original
    assert linear_output_wait() is True and sdk_stack.wait_for_rpcs is installed
    monkeypatch.delattr(sdk_stack, "wait_for_rpcs")
    assert linear_output_wait() is False
    assert output_wait.SDK_WAIT_FUNCTION == "wait_for_rpcs"
