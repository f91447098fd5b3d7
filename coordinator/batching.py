"""Coalescing of concurrent per-partition calls into one call per key.

Every mirror partition runs its own reconcile task, and a failover moves a thousand of
them through the same steps at once. Each step that costs a round trip (a metadata-store
transaction, an append to ``__mirror_state``, a WriteMirrorStates request) would be paid a
thousand times if each task made it alone. A ``KeyedBatcher`` lets each task keep its
straight-line code (``await batcher.submit(key, item)``) while the work runs once per
key for everything submitted meanwhile: a call waits at most for the batch in flight for
its key, and every caller learns the outcome of the batch that carried its item.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class KeyedBatcher(Generic[K, T]):
    """One ``run(key, items)`` at a time per key, carrying every item submitted before it.

    Items of one key are handed to ``run`` in submission order. When ``run`` raises, every
    caller of that batch gets the exception; other keys are unaffected.
    """

    def __init__(self, run: Callable[[K, list[T]], Awaitable[None]]) -> None:
        self._run = run
        self._pending: dict[K, list[tuple[T, asyncio.Future[None]]]] = {}
        self._flushers: dict[K, asyncio.Task[None]] = {}

    async def submit(self, key: K, item: T) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(key, []).append((item, done))
        if key not in self._flushers:
            flusher = asyncio.get_running_loop().create_task(self._flush(key))
            self._flushers[key] = flusher
        await done

    async def _flush(self, key: K) -> None:
        try:
            # One turn of the loop lets every task made ready with this one join the batch.
            await asyncio.sleep(0)
            while batch := self._pending.pop(key, None):
                try:
                    await self._run(key, [item for item, _ in batch])
                except asyncio.CancelledError:
                    for _, done in batch:
                        done.cancel()
                    raise
                except Exception as exc:
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                else:
                    for _, done in batch:
                        if not done.done():
                            done.set_result(None)
        finally:
            del self._flushers[key]
            for _, done in self._pending.pop(key, []):
                done.cancel()

    async def close(self) -> None:
        """Cancel the batches in flight; their callers see CancelledError."""
        flushers = list(self._flushers.values())
        for flusher in flushers:
            flusher.cancel()
        await asyncio.gather(*flushers, return_exceptions=True)
