"""Delayed operations: requests parked until a partition changes or their time runs out.

Kafka's purgatory keys each delayed operation by the partitions it cares about; whoever
changes a partition (an append, a high-watermark move, a leadership change) completes the
watchers of that key, and each woken operation re-checks its own condition. Here an
operation is one asyncio future registered under several keys: ``notify(key)`` resolves
every future watching ``key``, and ``wait_until`` loops "check, then wait for the next
change" until the condition holds or the deadline passes. Nothing polls and nothing sleeps.

The time a request spends parked here is Kafka's RemoteTimeMs: whoever handles a request
opens a ``ParkedTime`` with ``parked_time_of_this_request()``, and every ``wait_until`` of
that request (its own task and the tasks it gathers) adds to it, overlapping waits counted
once.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Hashable, Iterable


class ParkedTime:
    """Wall time during which at least one wait of one request was parked."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._parked = 0
        self._since = 0.0

    def park(self) -> None:
        if self._parked == 0:
            self._since = time.perf_counter()
        self._parked += 1

    def unpark(self) -> None:
        self._parked -= 1
        if self._parked == 0:
            self.seconds += time.perf_counter() - self._since


_current: contextvars.ContextVar[ParkedTime | None] = contextvars.ContextVar(
    "parked_time", default=None
)


def parked_time_of_this_request() -> tuple[ParkedTime, contextvars.Token[ParkedTime | None]]:
    """A fresh ``ParkedTime`` for the request this task is handling; reset the token after."""
    parked = ParkedTime()
    return parked, _current.set(parked)


def end_parked_time(token: contextvars.Token[ParkedTime | None]) -> None:
    _current.reset(token)


class Purgatory:
    def __init__(self) -> None:
        self._watchers: dict[Hashable, set[asyncio.Future[None]]] = {}

    def watcher_count(self, key: Hashable) -> int:
        return len(self._watchers.get(key, ()))

    def notify(self, key: Hashable) -> None:
        """Wake every operation watching ``key``; each decides for itself if it is done."""
        for future in self._watchers.pop(key, ()):
            if not future.done():
                future.set_result(None)

    def notify_all(self) -> None:
        for key in list(self._watchers):
            self.notify(key)

    async def wait_for_change(self, keys: Iterable[Hashable], timeout: float) -> bool:
        """Wait until one of ``keys`` is notified (True) or ``timeout`` seconds pass (False)."""
        keys = list(keys)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for key in keys:
            self._watchers.setdefault(key, set()).add(future)
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            for key in keys:
                watchers = self._watchers.get(key)
                if watchers is not None:
                    watchers.discard(future)
                    if not watchers:
                        del self._watchers[key]

    async def wait_until(
        self,
        keys: Iterable[Hashable],
        condition: Callable[[], bool],
        timeout: float,
        *,
        checked: bool = False,
    ) -> bool:
        """Whether ``condition`` became true before ``timeout`` seconds passed.

        ``checked``: the caller has just found ``condition`` false, with no await since, so
        it is not evaluated again before the first wait (a long-poll Fetch's condition
        reads every partition of the request)."""
        if not checked and condition():
            return True
        parked = _current.get()
        if parked is not None:
            parked.park()
        try:
            return await self._wait_until(list(keys), condition, timeout)
        finally:
            if parked is not None:
                parked.unpark()

    async def _wait_until(
        self, keys: list[Hashable], condition: Callable[[], bool], timeout: float
    ) -> bool:
        """``condition`` is false on entry; it is evaluated after each change and once more
        when the time is up."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0 or not await self.wait_for_change(keys, remaining):
                return condition()
            if condition():
                return True
