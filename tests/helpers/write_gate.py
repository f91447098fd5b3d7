"""Holding a coordinator coroutine at a chosen point of the mirror write gate."""

from __future__ import annotations

import asyncio


class Hold:
    """Blocks a coroutine method of the coordinator until released; counts arrivals."""

    def __init__(self) -> None:
        self.arrivals = 0
        self.release = asyncio.Event()

    async def wait(self) -> None:
        self.arrivals += 1
        await self.release.wait()
