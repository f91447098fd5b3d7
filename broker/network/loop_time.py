"""The time a coroutine spends running on the event loop, its awaits left out.

Kafka's ``request_percentage`` quota meters the time a request occupies a request handler
thread; here the handler's share of the one event loop is that time. Each step of the
coroutine (from being resumed to its next suspension) is timed and summed, so waiting in
purgatory, on a socket or on a worker thread costs nothing, exactly as a Kafka request
parked in purgatory frees its handler thread.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Generator
from typing import Any


class LoopTime:
    """Await ``LoopTime(coro)`` in place of ``coro``; ``seconds`` then holds its loop time."""

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro = coro
        self.seconds = 0.0

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self._coro
        to_send: Any = None
        to_throw: BaseException | None = None
        while True:
            started = time.perf_counter()
            try:
                suspended = coro.send(to_send) if to_throw is None else coro.throw(to_throw)
            except StopIteration as finished:
                return finished.value
            finally:
                self.seconds += time.perf_counter() - started
            try:
                to_send, to_throw = (yield suspended), None
            except BaseException as raised:
                to_send, to_throw = None, raised
