"""Calls that arrive while a write is running wait for the next one, and that one takes
them all: the metadata database takes one write lock per transaction, so a burst of
one-row transactions queues for it (and on SQLite backs off in the busy handler's sleeps)
where one transaction of many rows costs about what one row costs. Committed offsets
(``BatchedOffsetStore``) and share-partition state (``BatchedShareStateStore``) are
written through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class Coalescer(Generic[Item, Result]):
    """Hands ``run`` everything submitted while its previous call was running.

    The first submission runs at once; later ones queue for the next call, and each
    caller gets back its own item's result once the call holding it returns (or its
    exception, shared by every caller of that call).
    """

    def __init__(self, run: Callable[[list[Item]], Awaitable[list[Result]]], name: str) -> None:
        self._run = run
        self._name = name
        self._pending: list[tuple[Item, asyncio.Future[Result]]] = []
        self._runner: asyncio.Task[None] | None = None

    async def submit(self, item: Item) -> Result:
        done: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        done.add_done_callback(_retrieve)
        self._pending.append((item, done))
        if self._runner is None:
            self._runner = asyncio.get_running_loop().create_task(
                self._run_pending(), name=self._name
            )
        return await asyncio.shield(done)

    async def _run_pending(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    results = await self._run([item for item, _ in batch])
                except Exception as exc:
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                except BaseException:
                    for _, done in batch:
                        done.cancel()
                    raise
                else:
                    for (_, done), result in zip(batch, results, strict=True):
                        if not done.done():
                            done.set_result(result)
        finally:
            self._runner = None


def _retrieve(done: asyncio.Future[object]) -> None:
    """A caller cancelled while its call was running never reads the outcome; reading
    it here keeps a failure from being reported as never retrieved."""
    if not done.cancelled():
        done.exception()
