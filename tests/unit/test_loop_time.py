"""A handler's event-loop time counts its own steps only: time spent awaiting (a sleep,
purgatory, another task) is left out; results, exceptions and cancellation pass through."""

from __future__ import annotations

import asyncio
import time

import pytest

from mirrorsim.broker.network.loop_time import LoopTime


def _spin(seconds: float) -> None:
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        pass


async def test_awaits_are_left_out_and_the_result_passes_through() -> None:
    async def handler() -> int:
        await asyncio.sleep(0.2)
        _spin(0.03)
        await asyncio.sleep(0.1)
        _spin(0.02)
        return 7

    timed = LoopTime(handler())
    assert await timed == 7
    assert 0.05 <= timed.seconds < 0.12


async def test_exceptions_and_cancellation_pass_through() -> None:
    async def failing() -> None:
        await asyncio.sleep(0)
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await LoopTime(failing())

    async def waiting() -> None:
        await LoopTime(asyncio.sleep(30))

    task = asyncio.create_task(waiting())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
