"""Waiting on one future from many callers, each free to give up at a constant cost.

``asyncio.shield`` registers a callback on the shielded future per caller, and a caller
that gives up (a timeout, a cancellation) removes its callback again, which scans the
future's whole callback list. When every mirrored partition waits on one shared attempt
(the source connection, a fetcher's creation, a metadata refresh) and the source is
down, each of N partitions times out: N removals of N callbacks. At 100,000 partitions
that kept a destination broker's event loop at a full core for minutes, unable even to
stop. Here the shared future gets one callback, however many wait, and each caller
waits on a future of its own that it alone drops from a set.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TypeVar

T = TypeVar("T")

_WAITERS: weakref.WeakKeyDictionary[asyncio.Future[object], set[asyncio.Future[None]]] = (
    weakref.WeakKeyDictionary()
)


async def wait_shared(shared: asyncio.Future[T]) -> T:
    """``shared``'s result (or exception) as ``await asyncio.shield(shared)`` gives it: a
    caller's cancellation ends its own wait and leaves ``shared`` running."""
    if not shared.done():
        waiters = _WAITERS.get(shared)  # type: ignore[arg-type]
        if waiters is None:
            waiters = _WAITERS[shared] = set()  # type: ignore[index]
            shared.add_done_callback(_wake)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.add(waiter)
        try:
            await waiter
        finally:
            waiters.discard(waiter)
    return shared.result()


def _wake(shared: asyncio.Future[object]) -> None:
    for waiter in _WAITERS.pop(shared, ()):
        if not waiter.done():
            waiter.set_result(None)
