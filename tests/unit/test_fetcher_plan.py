"""The fetcher plan's decisions on single responses."""

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.fetcher.plan import (
    FOLLOWER_RULES,
    EpochSupport,
    Fail,
    Fetch,
    FetchedPartition,
    FetchOutcome,
    FetchPhase,
    PartitionFetchState,
    QueryEpochEndOffset,
    QueryOffsetBounds,
    Truncate,
    TruncateFullyAndStartAt,
    Wait,
    next_action,
    on_fetch_response,
    on_leader_change,
    on_offset_bounds,
)
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records import RawBatch, Record, build_batch


def batch(offset: int, n: int = 1, epoch: int = 0) -> RawBatch:
    return build_batch(
        [Record(offset + i, 1_000, b"k", b"v") for i in range(n)],
        base_offset=offset,
        partition_leader_epoch=epoch,
    )


def state(offset: int = 0, leader_epoch: int = 0, **changes: object) -> PartitionFetchState:
    base = PartitionFetchState.initial(
        log_end_offset=offset,
        latest_epoch=None,
        current_leader_epoch=leader_epoch,
        epoch_support=EpochSupport.DIVERGING_EPOCH,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def respond(s: PartitionFetchState, response: FetchedPartition):  # type: ignore[no-untyped-def]
    return on_fetch_response(
        s, response, epoch_entries=[], log_end_offset=s.fetch_offset, now_ms=0, backoff_ms=100
    )


def ok(*batches: RawBatch, lso: int = 1_000, start: int = 0) -> FetchedPartition:
    return FetchedPartition(ErrorCode.NONE, lso, lso, start, batches=batches)


def test_appends_and_advances() -> None:
    outcome = respond(state(), ok(batch(0, 2), batch(2, 1, epoch=0)))
    assert [b.base_offset for b in outcome.append] == [0, 2]
    assert next_action(outcome.state, 0) == Fetch(3, 0, 0)


def test_only_batches_below_the_lso_are_appended() -> None:
    outcome = respond(state(), ok(batch(0, 2), batch(2, 2), lso=3))
    assert [b.base_offset for b in outcome.append] == [0]
    assert outcome.state.fetch_offset == 2


def test_batches_below_the_fetch_offset_are_skipped_and_straddling_fails() -> None:
    assert respond(state(2), ok(batch(0, 2), batch(2))).append[0].base_offset == 2
    straddled = respond(state(1), ok(batch(0, 2)))
    assert straddled.state.phase is FetchPhase.FAILED
    assert not straddled.append


def test_a_batch_holding_the_source_log_start_is_taken_whole() -> None:
    """DeleteRecords cut the source inside batch 50-100; the log restarted at 100."""
    outcome = respond(state(100), ok(batch(50, 51), batch(101), start=100))
    assert [b.base_offset for b in outcome.append] == [50, 101]
    assert outcome.state.fetch_offset == 102
    assert outcome.source_log_start_offset == 100
    elsewhere = respond(state(100), ok(batch(50, 51), start=60))
    assert elsewhere.state.phase is FetchPhase.FAILED


def test_bad_crc_fails_the_partition_and_appends_nothing() -> None:
    good = batch(0)
    corrupt = RawBatch.from_bytes(good.data[:-1] + bytes([good.data[-1] ^ 1]))
    outcome = respond(state(), ok(batch(0), replace(corrupt, base_offset=1)))
    assert outcome.append == ()
    assert isinstance(next_action(outcome.state, 0), Fail)


def _corrupt(offset: int) -> RawBatch:
    good = batch(offset)
    return RawBatch.from_bytes(good.data[:-1] + bytes([good.data[-1] ^ 1]))


def _respond_unverified(s: PartitionFetchState, response: FetchedPartition) -> FetchOutcome:
    return on_fetch_response(
        s,
        response,
        epoch_entries=[],
        log_end_offset=s.fetch_offset,
        now_ms=0,
        backoff_ms=100,
        verify_crc=False,
    )


def test_unverified_crcs_are_left_to_the_caller() -> None:
    outcome = _respond_unverified(state(), ok(batch(0), _corrupt(1)))
    assert [b.base_offset for b in outcome.append] == [0, 1]
    assert outcome.state.fetch_offset == 2


def test_unverified_crcs_still_name_a_bad_batch_before_another_problem() -> None:
    outcome = _respond_unverified(state(leader_epoch=3), ok(_corrupt(0), batch(1, epoch=4)))
    assert outcome.append == ()
    assert outcome.state.failure == "batch at offset 0 fails its CRC"


def test_follower_rules_verify_every_crc() -> None:
    with pytest.raises(ValueError):
        _respond_unverified(state(rules=FOLLOWER_RULES), ok(batch(0)))


def test_epoch_above_the_fetch_leader_epoch_fails() -> None:
    outcome = respond(state(leader_epoch=3), ok(batch(0, epoch=4)))
    assert outcome.state.phase is FetchPhase.FAILED
    assert "leader epoch 4" in (outcome.state.failure or "")


def test_out_of_range_then_source_log_start_ahead_truncates_fully() -> None:
    oor = respond(state(50), FetchedPartition(ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1, -1))
    assert next_action(oor.state, 0) == QueryOffsetBounds()
    after = on_offset_bounds(oor.state, source_log_start_offset=100, source_end_offset=120)
    assert next_action(after, 0) == TruncateFullyAndStartAt(100)


def test_out_of_range_beyond_the_source_end_fails() -> None:
    oor = respond(state(500), FetchedPartition(ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1, -1))
    after = on_offset_bounds(oor.state, source_log_start_offset=0, source_end_offset=120)
    assert after.phase is FetchPhase.FAILED


def test_leadership_errors_back_off_and_ask_for_metadata() -> None:
    outcome = respond(state(), FetchedPartition(ErrorCode.FENCED_LEADER_EPOCH, -1, -1, -1))
    assert outcome.refresh_metadata
    assert next_action(outcome.state, 10) == Wait(100)
    moved = on_leader_change(outcome.state, 5)
    assert next_action(moved, 10) == Fetch(0, -1, 5)


def test_non_retriable_errors_fail() -> None:
    outcome = respond(state(), FetchedPartition(ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, -1))
    assert outcome.state.phase is FetchPhase.FAILED


# -- a follower's rules: the same plan, where Kafka's replica fetcher differs -------------


def follower(offset: int = 0, leader_epoch: int = 0) -> PartitionFetchState:
    return state(offset, leader_epoch, rules=FOLLOWER_RULES)


def test_a_follower_reads_past_the_lso() -> None:
    outcome = respond(follower(), ok(batch(0, 2), batch(2, 2), lso=1))
    assert [b.base_offset for b in outcome.append] == [0, 2]


def test_a_follower_appends_before_a_bad_batch_and_backs_off() -> None:
    good = batch(1)
    corrupt = RawBatch.from_bytes(good.data[:-1] + bytes([good.data[-1] ^ 1]))
    outcome = respond(follower(), ok(batch(0), corrupt))
    assert [b.base_offset for b in outcome.append] == [0]
    assert next_action(outcome.state, 0) == Wait(100)
    assert next_action(outcome.state, 100) == Fetch(1, 0, 0)


def test_a_follower_keeps_batches_up_to_one_from_a_newer_epoch() -> None:
    """KAFKA-18723: nothing from an epoch newer than the request's is appended."""
    batches = [batch(i, epoch=e) for i, e in enumerate([1, 2, 3, 2])]
    outcome = respond(follower(leader_epoch=2), ok(*batches))
    assert [b.partition_leader_epoch for b in outcome.append] == [1, 2]
    assert outcome.state.phase is FetchPhase.FETCHING


def test_a_follower_ahead_of_its_leader_cuts_back_to_the_leaders_end() -> None:
    """An unclean election: the new leader's log ends below the follower's."""
    oor = respond(follower(500), FetchedPartition(ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1, -1))
    after = on_offset_bounds(oor.state, source_log_start_offset=0, source_end_offset=120)
    assert next_action(after, 0) == Truncate(120)


def test_a_follower_retries_an_unexpected_error() -> None:
    outcome = respond(
        follower(), FetchedPartition(ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, -1)
    )
    assert next_action(outcome.state, 0) == Wait(100)


def test_old_sources_verify_the_latest_epoch_first() -> None:
    s = PartitionFetchState.initial(
        log_end_offset=10,
        latest_epoch=2,
        current_leader_epoch=3,
        epoch_support=EpochSupport.OFFSET_FOR_LEADER_EPOCH,
    )
    assert next_action(s, 0) == QueryEpochEndOffset(2, 3)
    none = replace(s, epoch_support=EpochSupport.NONE, phase=FetchPhase.FETCHING)
    assert next_action(none, 0) == Fetch(10, -1, 3)


@st.composite
def responses(draw: st.DrawFn) -> tuple[int, FetchedPartition]:
    offset = draw(st.integers(0, 5))
    batches: list[RawBatch] = []
    cursor = draw(st.integers(0, 5))
    for _ in range(draw(st.integers(0, 6))):
        n = draw(st.integers(1, 3))
        batches.append(batch(cursor, n, epoch=draw(st.integers(0, 2))))
        cursor += n + draw(st.integers(0, 2))
    return offset, ok(*batches, lso=draw(st.integers(0, cursor + 1)))


@given(responses())
def test_appended_batches_are_contiguous_from_the_fetch_offset_and_below_the_lso(
    case: tuple[int, FetchedPartition],
) -> None:
    offset, response = case
    outcome = respond(state(offset, leader_epoch=2), response)
    expected = offset
    for appended in outcome.append:
        assert appended.base_offset >= expected
        assert appended.last_offset < response.last_stable_offset
        expected = appended.next_offset
    if outcome.append:
        assert outcome.state.fetch_offset == outcome.append[-1].next_offset
