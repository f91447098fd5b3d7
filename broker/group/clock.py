"""Time for the coordinator: a reading in milliseconds plus one-shot timers.

Session, rebalance and initial-delay timeouts are timers rather than a polling loop, and
they go through this interface so a `ManualClock` can drive them deterministically.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now_ms(self) -> int: ...

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle: ...


class SystemClock:
    """Wall-clock time and timers on the running asyncio loop."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, callback)


class _ManualTimer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only when `advance` is called; due timers fire inside `advance`,
    in deadline order, with `now_ms()` reading each timer's own deadline."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._timers: list[tuple[int, int, _ManualTimer]] = []
        self._sequence = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        timer = _ManualTimer(callback)
        deadline = self._now + max(delay_ms, 0)
        heapq.heappush(self._timers, (deadline, next(self._sequence), timer))
        return timer

    def advance(self, delta_ms: int) -> None:
        target = self._now + delta_ms
        while self._timers and self._timers[0][0] <= target:
            deadline, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = deadline
            timer.callback()
        self._now = target

    @property
    def pending_timers(self) -> int:
        return sum(1 for _, _, timer in self._timers if not timer.cancelled)
