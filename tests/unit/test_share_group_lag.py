"""A share partition's lag as DescribeShareGroupOffsets v1 reports it: the records from the
start offset up to the high watermark that are neither acknowledged nor archived."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.group.share_state import RecordState, ShareSnapshot, StateBatch
from mirrorsim.broker.handlers.share_group_offsets import share_lag


def batch(first: int, last: int, state: RecordState, deliveries: int = 1) -> StateBatch:
    return StateBatch(first, last, deliveries, state)


def test_everything_above_the_start_offset_lags_until_it_is_done_with() -> None:
    assert share_lag(ShareSnapshot(5), 12) == 7
    in_flight = ShareSnapshot(
        5,
        (
            batch(5, 6, RecordState.AVAILABLE, 2),
            batch(7, 8, RecordState.ACKNOWLEDGED),
            batch(9, 9, RecordState.ACQUIRED),
            batch(10, 10, RecordState.ARCHIVED),
        ),
    )
    assert share_lag(in_flight, 12) == 7 - 3


def test_a_start_offset_at_or_past_the_high_watermark_has_no_lag() -> None:
    assert share_lag(ShareSnapshot(12), 12) == 0
    assert share_lag(ShareSnapshot(20), 12) == 0


def test_records_above_the_high_watermark_do_not_count() -> None:
    done_beyond = ShareSnapshot(0, (batch(8, 15, RecordState.ACKNOWLEDGED),))
    assert share_lag(done_beyond, 10) == 10 - 2


@given(
    start=st.integers(0, 50),
    states=st.lists(st.sampled_from(list(RecordState)), max_size=30),
    beyond=st.integers(-40, 40),
)
def test_lag_counts_each_unfinished_record_once(
    start: int, states: list[RecordState], beyond: int
) -> None:
    """One batch per record: the lag is the number of records below the high watermark
    whose state is not final, plus the never-delivered records up to it."""
    snapshot = ShareSnapshot(
        start, tuple(batch(start + i, start + i, s) for i, s in enumerate(states))
    )
    high_watermark = max(0, start + len(states) + beyond)
    final = {RecordState.ACKNOWLEDGED, RecordState.ARCHIVED}
    expected = sum(
        1
        for offset in range(start, high_watermark)
        if offset - start >= len(states) or states[offset - start] not in final
    )
    assert share_lag(snapshot, high_watermark) == expected
