"""Timing and waiting shared by the benchmarks.

Benchmarks poll in-process state instead of sleeping a fixed time, so a run ends as soon
as the work it measures does, and a stuck run fails with what it waited for.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    """The median of ``repeat`` timed calls, in milliseconds: one slow call from a busy
    neighbour on a shared machine does not move it."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


async def until(predicate: Callable[[], bool], timeout_s: float, what: str, poll_s: float) -> None:
    """Return once ``predicate()`` holds; TimeoutError naming ``what`` after ``timeout_s``."""
    try:
        async with asyncio.timeout(timeout_s):
            while not predicate():
                await asyncio.sleep(poll_s)
    except TimeoutError:
        raise TimeoutError(f"no {what} within {timeout_s}s") from None
