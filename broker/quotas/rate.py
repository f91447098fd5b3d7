"""A rate over sampled windows and the throttle time of a violation, as Kafka measures them.

Kafka's quota sensors use ``Rate`` over a ``SampledStat`` of ``quota.window.num`` samples of
``quota.window.size.seconds`` each: a sample starts when the first value after the previous
one's end arrives, samples with no event for ``num * size`` are reset, and the rate is the
sum of the samples over the elapsed time since the oldest one started. Until ``num - 1``
whole windows have elapsed the elapsed time is padded to that many windows, except within
the very first window, which counts as one window. Kafka measures this way so that a
client that was idle is not handed a burst of ``num`` windows' worth of quota at once.

A violation's throttle time is the delay ``X`` that brings the observed rate ``O`` down to
the bound ``T`` over the window ``W``: ``O * W / (W + X) = T``, so ``X = (O - T) / T * W``.
Clock values are milliseconds; the caller passes them, so tests drive time directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class WindowConfig:
    samples: int = 11
    window_ms: int = 1000


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0
    events: int = 0

    def reset(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.value = 0.0
        self.events = 0


@dataclass(slots=True)
class Rate:
    """Kafka's ``Rate`` (per second) over a ``SampledStat``; one per quota id and type."""

    config: WindowConfig
    _samples: list[_Sample] = field(default_factory=list)
    _current: int = 0
    _windows_started: int = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.config.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_event_ms = now_ms

    def measure(self, now_ms: int) -> float:
        """Units per second."""
        total = self._purged_sum(now_ms)
        return total / (self.window_size_ms(now_ms) / 1000.0)

    def window_size_ms(self, now_ms: int) -> int:
        self._purge(now_ms)
        elapsed = now_ms - self._oldest(now_ms).start_ms
        full_windows = elapsed // self.config.window_ms
        if self._windows_started <= 1 and full_windows == 0:
            return self.config.window_ms
        minimum = self.config.samples - 1
        if full_windows < minimum:
            elapsed += (minimum - full_windows) * self.config.window_ms
        return max(elapsed, 1)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
            self._windows_started = 1
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # one extra sample is kept, as Kafka does, so a window never loses its oldest part early
        self._current = (self._current + 1) % (self.config.samples + 1)
        self._windows_started += 1
        if self._current >= len(self._samples):
            self._samples.append(_Sample(now_ms, now_ms))
        else:
            self._samples[self._current].reset(now_ms)
        return self._samples[self._current]

    def _oldest(self, now_ms: int) -> _Sample:
        if not self._samples:
            return _Sample(now_ms, now_ms)
        return min(self._samples, key=lambda s: s.start_ms)

    def _purge(self, now_ms: int) -> None:
        expire_ms = self.config.samples * self.config.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_ms:
                sample.reset(now_ms)

    def _purged_sum(self, now_ms: int) -> float:
        self._purge(now_ms)
        return sum(sample.value for sample in self._samples)


def throttle_time_ms(observed: float, bound: float, window_ms: int) -> int:
    """Kafka's ``ClientQuotaManager.throttleTime``: 0 when within the bound."""
    if observed <= bound:
        return 0
    return round((observed - bound) / bound * window_ms)


@dataclass(slots=True)
class QuotaSensor:
    """Records a value and answers the throttle time, as Kafka's quota ``Sensor`` does: the
    value is recorded first, then the rate checked against the bound."""

    rate: Rate
    bound: float

    def record_and_throttle_ms(self, value: float, now_ms: int, max_ms: int | None = None) -> int:
        """The throttle time, at most ``max_ms`` when given (Kafka bounds the request
        quota's throttle to one quota window)."""
        self.rate.record(value, now_ms)
        observed = self.rate.measure(now_ms)
        if observed <= self.bound:
            return 0
        throttle = throttle_time_ms(observed, self.bound, self.rate.window_size_ms(now_ms))
        return throttle if max_ms is None else min(throttle, max_ms)

    def unrecord(self, value: float, now_ms: int) -> None:
        """Take back a value whose response is not sent (a throttled fetch answers empty)."""
        self.rate.record(-value, now_ms)
