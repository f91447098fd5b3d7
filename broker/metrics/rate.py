"""Events per second over the last minute, for gauges Kafka derives from a meter's rate.

Counters cover most of Kafka's meters (Prometheus computes the rate), but MinFetchRate is
a minimum over fetchers of their rates, which no query over the counters can rebuild once
fetchers come and go, so the broker measures it itself: one-second buckets over a sliding
window, cheap to mark at every fetch response.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

WINDOW_S = 60


class RateMeter:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._buckets: deque[tuple[int, int]] = deque()

    def mark(self) -> None:
        second = int(self._clock())
        if self._buckets and self._buckets[-1][0] == second:
            self._buckets[-1] = (second, self._buckets[-1][1] + 1)
        else:
            self._buckets.append((second, 1))
        self._expire(second)

    def rate(self) -> float:
        """Events per second over the window (or since creation, when that is shorter)."""
        now = self._clock()
        self._expire(int(now))
        span = min(float(WINDOW_S), max(now - self._started, 1.0))
        return sum(count for _, count in self._buckets) / span

    def _expire(self, second: int) -> None:
        while self._buckets and self._buckets[0][0] <= second - WINDOW_S:
            self._buckets.popleft()
