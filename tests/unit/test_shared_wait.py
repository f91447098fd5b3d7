"""Many callers wait on one shared future as they would through ``asyncio.shield``, but
the shared future carries one callback however many wait, so callers that give up do not
each scan a list of all the others (at 100,000 mirrored partitions timing out against a
dead source, that scan held a broker's event loop for minutes)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mirrorsim.client.shared_wait import wait_shared


class CountingFuture(asyncio.Future[Any]):
    """A future that counts the callbacks put on it."""

    def __init__(self) -> None:
        super().__init__()
        self.callbacks_added = 0

    def add_done_callback(self, fn: Any, *, context: Any = None) -> None:
        self.callbacks_added += 1
        super().add_done_callback(fn, context=context)


async def test_callers_that_give_up_leave_one_callback_on_the_shared_future() -> None:
    shared = CountingFuture()
    waiters = [asyncio.create_task(wait_shared(shared)) for _ in range(1000)]
    await asyncio.sleep(0)
    for waiter in waiters[:900]:
        waiter.cancel()
    await asyncio.gather(*waiters[:900], return_exceptions=True)
    assert shared.callbacks_added == 1
    assert not shared.cancelled()
    shared.set_result("connected")
    assert await asyncio.gather(*waiters[900:]) == ["connected"] * 100


async def test_a_timed_out_caller_leaves_the_shared_work_running() -> None:
    release = asyncio.Event()

    async def work() -> str:
        await release.wait()
        return "done"

    shared = asyncio.create_task(work())
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await wait_shared(shared)
    assert not shared.done()
    release.set()
    assert await wait_shared(shared) == "done"
    assert await wait_shared(shared) == "done"


async def test_the_shared_failure_reaches_every_caller() -> None:
    shared: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiters = [asyncio.create_task(wait_shared(shared)) for _ in range(3)]
    await asyncio.sleep(0)
    shared.set_exception(ConnectionError("refused"))
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results)


async def test_a_cancelled_shared_future_cancels_its_callers() -> None:
    shared: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiter = asyncio.create_task(wait_shared(shared))
    await asyncio.sleep(0)
    shared.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
