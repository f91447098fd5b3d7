"""Reconnect backoff per broker, as Kafka's ``reconnect.backoff.ms``/``.max.ms`` define it.

The first failure waits ``initial_ms``; each further consecutive failure doubles the wait up
to ``max_ms``; a success resets it. Times are passed in (milliseconds on any monotonic
clock), so the policy is a pure value that tests drive without sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ReconnectBackoff:
    initial_ms: float
    max_ms: float
    failures: int = 0
    next_attempt_ms: float = 0.0

    def delay_ms(self, now_ms: float) -> float:
        """How long to wait before the next connection attempt may start."""
        return max(0.0, self.next_attempt_ms - now_ms)

    def record_failure(self, now_ms: float) -> None:
        self.failures += 1
        wait = min(self.max_ms, self.initial_ms * 2 ** (self.failures - 1))
        self.next_attempt_ms = now_ms + wait

    def record_success(self) -> None:
        self.failures = 0
        self.next_attempt_ms = 0.0
