"""RateMeter: events per second over a sliding minute, on a hand-driven clock."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.metrics.rate import WINDOW_S, RateMeter


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rate_counts_only_the_last_window() -> None:
    clock = FakeClock()
    meter = RateMeter(clock)
    assert meter.rate() == 0
    for _ in range(30):
        clock.now += 2
        meter.mark()
    assert meter.rate() == 30 / WINDOW_S
    clock.now += WINDOW_S
    assert meter.rate() == 0


@given(st.lists(st.floats(min_value=0, max_value=3 * WINDOW_S), max_size=200))
def test_rate_is_the_marks_inside_the_window(gaps: list[float]) -> None:
    clock = FakeClock()
    meter = RateMeter(clock)
    marks = []
    for gap in gaps:
        clock.now += gap
        meter.mark()
        marks.append(int(clock.now))
    elapsed = max(clock.now - 1000.0, 1.0)
    recent = sum(1 for m in marks if m > int(clock.now) - WINDOW_S)
    assert meter.rate() == recent / min(float(WINDOW_S), elapsed)
