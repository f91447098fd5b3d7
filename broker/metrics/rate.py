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
    """``window_s`` is the span the rate averages over (Kafka's quotas use 11 seconds)."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, *, window_s: int = WINDOW_S
    ) -> None:
        self._clock = clock
        self._window_s = window_s
        self._started = clock()
        self._buckets: deque[tuple[int, int]] = deque()

    def mark(self, count: int = 1) -> None:
        """Record ``count`` events (bytes, for a byte rate) now."""
        second = int(self._clock())
        if self._buckets and self._buckets[-1][0] == second:
            self._buckets[-1] = (second, self._buckets[-1][1] + count)
        else:
            self._buckets.append((second, count))
        self._expire(second)

    def rate(self) -> float:
        """Events per second over the window (or since creation, when that is shorter)."""
        now = self._clock()
        self._expire(int(now))
        span = min(float(self._window_s), max(now - self._started, 1.0))
        return sum(count for _, count in self._buckets) / span

    def _expire(self, second: int) -> None:
        while self._buckets and self._buckets[0][0] <= second - self._window_s:
            self._buckets.popleft()
