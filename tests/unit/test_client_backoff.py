"""Reconnect backoff: doubles per consecutive failure, capped, reset by success."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.client.backoff import ReconnectBackoff


def test_first_attempt_is_immediate_and_failures_double_the_wait() -> None:
    backoff = ReconnectBackoff(initial_ms=50, max_ms=1000)
    assert backoff.delay_ms(now_ms=0) == 0
    waits = []
    for _ in range(7):
        backoff.record_failure(now_ms=0)
        waits.append(backoff.delay_ms(now_ms=0))
    assert waits == [50, 100, 200, 400, 800, 1000, 1000]


def test_success_resets_and_time_passing_shrinks_the_wait() -> None:
    backoff = ReconnectBackoff(initial_ms=50, max_ms=1000)
    backoff.record_failure(now_ms=1000)
    assert backoff.delay_ms(now_ms=1030) == 20
    assert backoff.delay_ms(now_ms=2000) == 0
    backoff.record_failure(now_ms=2000)
    backoff.record_success()
    assert backoff.delay_ms(now_ms=2000) == 0
    backoff.record_failure(now_ms=2000)
    assert backoff.delay_ms(now_ms=2000) == 50


@given(
    initial=st.integers(1, 10_000),
    cap=st.integers(1, 100_000),
    failures=st.integers(1, 60),
    now=st.integers(0, 10**12),
)
def test_wait_is_monotone_and_never_exceeds_the_cap(
    initial: int, cap: int, failures: int, now: int
) -> None:
    backoff = ReconnectBackoff(initial_ms=initial, max_ms=cap)
    previous = 0.0
    for _ in range(failures):
        backoff.record_failure(now_ms=now)
        wait = backoff.delay_ms(now_ms=now)
        assert previous <= wait <= cap
        previous = wait
