"""The KIP-932 share partition: the record state table, Kafka's behaviour on concrete
examples, and a state machine driving acquisitions, acknowledgements, lock expiry, departing
members, log truncation and leader restarts against a model of who holds what."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from mirrorsim.broker.group.share_partition import SharePartition
from mirrorsim.broker.group.share_record_states import (
    LIMITED_EVENTS,
    TERMINAL,
    TRANSITIONS,
    Event,
    IllegalRecordTransition,
    next_state,
)
from mirrorsim.broker.group.share_state import (
    AcknowledgeType,
    AcquiredRange,
    FetchedBatch,
    RecordState,
    ShareSnapshot,
    StateBatch,
)
from mirrorsim.protocol.errors import ErrorCode

ACCEPT = AcknowledgeType.ACCEPT
RELEASE = AcknowledgeType.RELEASE
REJECT = AcknowledgeType.REJECT
GAP = AcknowledgeType.GAP
LOCK_MS = 30_000


def data(base: int, last: int) -> FetchedBatch:
    return FetchedBatch(base, last)


def control(offset: int) -> FetchedBatch:
    return FetchedBatch(offset, offset, is_control=True)


def take(
    partition: SharePartition,
    member: str,
    *batches: FetchedBatch,
    now_ms: int = 0,
    max_records: int = 500,
) -> list[AcquiredRange]:
    return partition.acquire(
        member, batches, now_ms=now_ms, lock_ms=LOCK_MS, max_records=max_records
    )


# The transition table


@given(st.sampled_from(RecordState), st.sampled_from(Event), st.integers(0, 6))
def test_every_state_event_pair_is_in_the_table_or_refused(
    state: RecordState, event: Event, delivery_count: int
) -> None:
    if (state, event) not in TRANSITIONS:
        with pytest.raises(IllegalRecordTransition):
            next_state(state, event, delivery_count, 5)
    elif event in LIMITED_EVENTS and delivery_count >= 5:
        assert next_state(state, event, delivery_count, 5) is RecordState.ARCHIVED
    else:
        assert next_state(state, event, delivery_count, 5) is TRANSITIONS[(state, event)]


def test_acknowledged_and_archived_are_terminal() -> None:
    assert frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED}) == TERMINAL


def test_the_limit_turns_handing_back_into_archiving() -> None:
    for event in (Event.RELEASE, Event.LOCK_EXPIRED, Event.MEMBER_GONE):
        assert next_state(RecordState.ACQUIRED, event, 4, 5) is RecordState.AVAILABLE
        assert next_state(RecordState.ACQUIRED, event, 5, 5) is RecordState.ARCHIVED
    assert next_state(RecordState.ACQUIRED, Event.ACCEPT, 5, 5) is RecordState.ACKNOWLEDGED


# Acquiring and acknowledging


def test_acquire_then_accept_moves_the_start_offset() -> None:
    partition = SharePartition(start_offset=0)
    assert partition.fetch_offset() == 0
    assert take(partition, "a", data(0, 4)) == [AcquiredRange(0, 4, 1)]
    assert (partition.start_offset, partition.end_offset) == (0, 5)
    assert partition.fetch_offset() == 5
    assert partition.acknowledge("a", 0, 2, [ACCEPT]) == ErrorCode.NONE
    assert partition.start_offset == 3
    assert partition.acquired_by("a") == (3, 4)
    assert partition.in_flight == 2


def test_a_released_record_is_delivered_again_with_count_two() -> None:
    partition = SharePartition(start_offset=0)
    take(partition, "a", data(0, 4))
    assert partition.acknowledge("a", 0, 4, [RELEASE]) == ErrorCode.NONE
    assert partition.start_offset == 0
    assert partition.fetch_offset() == 0
    assert take(partition, "b", data(0, 4)) == [AcquiredRange(0, 4, 2)]
    assert partition.acquired_by("b") == (0, 1, 2, 3, 4)


def test_an_expired_lock_hands_the_records_back() -> None:
    partition = SharePartition(start_offset=0)
    partition.acquire("a", [data(0, 4)], now_ms=100, lock_ms=1000, max_records=500)
    assert partition.next_deadline_ms() == 1100
    assert partition.release_expired(1099) == 0
    assert partition.release_expired(1100) == 5
    assert partition.next_deadline_ms() is None
    assert partition.fetch_offset() == 0
    assert partition.acknowledge("a", 0, 4, [ACCEPT]) == ErrorCode.INVALID_RECORD_STATE
    assert take(partition, "b", data(0, 4)) == [AcquiredRange(0, 4, 2)]


@pytest.mark.parametrize("hand_back", ["release", "expire", "leave"])
def test_the_fifth_hand_back_archives_the_record(hand_back: str) -> None:
    partition = SharePartition(start_offset=0, delivery_count_limit=5)
    for delivery in range(1, 6):
        assert take(partition, "a", data(0, 1), now_ms=delivery) == [AcquiredRange(0, 1, delivery)]
        if hand_back == "release":
            partition.acknowledge("a", 0, 1, [RELEASE])
        elif hand_back == "expire":
            partition.release_expired(delivery + LOCK_MS)
        else:
            partition.release_member("a")
    assert partition.start_offset == 2
    assert partition.fetch_offset() == 2
    assert take(partition, "a", data(0, 1)) == []


def test_reject_and_gap_archive_and_each_offset_can_have_its_own_type() -> None:
    partition = SharePartition(start_offset=0)
    take(partition, "a", data(0, 5))
    types = [ACCEPT, REJECT, RELEASE, GAP, ACCEPT, REJECT]
    assert partition.acknowledge("a", 0, 5, types) == ErrorCode.NONE
    assert partition.start_offset == 2
    assert partition.snapshot() == ShareSnapshot(
        2,
        (
            StateBatch(2, 2, 1, RecordState.AVAILABLE),
            StateBatch(3, 3, 1, RecordState.ARCHIVED),
            StateBatch(4, 4, 1, RecordState.ACKNOWLEDGED),
            StateBatch(5, 5, 1, RecordState.ARCHIVED),
        ),
    )
    assert partition.state_counts() == {
        RecordState.AVAILABLE: 1,
        RecordState.ACQUIRED: 0,
        RecordState.ACKNOWLEDGED: 1,
        RecordState.ARCHIVED: 2,
    }


def test_a_control_batch_is_archived_and_never_delivered() -> None:
    partition = SharePartition(start_offset=0)
    assert take(partition, "a", data(0, 2), control(3), data(4, 6)) == [
        AcquiredRange(0, 2, 1),
        AcquiredRange(4, 6, 1),
    ]
    assert partition.acknowledge("a", 3, 3, [ACCEPT]) == ErrorCode.INVALID_RECORD_STATE
    partition.acknowledge("a", 0, 2, [ACCEPT])
    assert partition.start_offset == 4


def test_a_control_batch_at_the_start_moves_the_start_at_once() -> None:
    partition = SharePartition(start_offset=0)
    take(partition, "a", control(0), data(1, 2))
    assert partition.start_offset == 1


def test_offsets_compacted_away_before_delivery_are_archived() -> None:
    partition = SharePartition(start_offset=0)
    assert take(partition, "a", data(0, 1), data(5, 6)) == [
        AcquiredRange(0, 1, 1),
        AcquiredRange(5, 6, 1),
    ]
    assert partition.end_offset == 7
    assert StateBatch(2, 4, 0, RecordState.ARCHIVED) in partition.snapshot().state_batches
    partition.acknowledge("a", 0, 1, [ACCEPT])
    assert partition.start_offset == 5


def test_with_nothing_in_flight_a_compacted_gap_moves_the_start() -> None:
    partition = SharePartition(start_offset=0)
    assert take(partition, "a", data(10, 12)) == [AcquiredRange(10, 12, 1)]
    assert partition.start_offset == 10


def test_records_compacted_away_after_a_delivery_are_archived() -> None:
    partition = SharePartition(start_offset=0)
    take(partition, "a", data(0, 4))
    partition.acknowledge("a", 0, 4, [RELEASE])
    assert take(partition, "b", data(0, 1), data(4, 4)) == [
        AcquiredRange(0, 1, 2),
        AcquiredRange(4, 4, 2),
    ]
    assert partition.state_counts()[RecordState.ARCHIVED] == 2


def test_another_members_acknowledgement_is_refused_and_changes_nothing() -> None:
    partition = SharePartition(start_offset=0)
    take(partition, "a", data(0, 4))
    take(partition, "b", data(5, 9))
    before = partition.snapshot()
    assert partition.acknowledge("b", 0, 4, [ACCEPT]) == ErrorCode.INVALID_RECORD_STATE
    assert partition.acknowledge("a", 3, 6, [ACCEPT]) == ErrorCode.INVALID_RECORD_STATE
    assert partition.acknowledge("b", 8, 12, [ACCEPT]) == ErrorCode.INVALID_RECORD_STATE
    assert partition.snapshot() == before
    assert partition.acquired_by("a") == (0, 1, 2, 3, 4)
    assert partition.acquired_by("b") == (5, 6, 7, 8, 9)


@pytest.mark.parametrize(
    ("first", "last", "types"),
    [(0, 4, [ACCEPT, ACCEPT]), (0, 1, [ACCEPT, 4]), (0, 0, [-1]), (3, 2, [ACCEPT])],
)
def test_a_malformed_acknowledgement_is_an_invalid_request(
    first: int, last: int, types: list[int]
) -> None:
    partition = SharePartition(start_offset=0)
    take(partition, "a", data(0, 4))
    assert partition.acknowledge("a", first, last, types) == ErrorCode.INVALID_REQUEST
    assert partition.acquired_by("a") == (0, 1, 2, 3, 4)


def test_max_records_stops_at_a_batch_boundary() -> None:
    partition = SharePartition(start_offset=0)
    assert take(partition, "a", data(0, 3), data(4, 7), data(8, 11), max_records=5) == [
        AcquiredRange(0, 7, 1)
    ]
    assert partition.end_offset == 8


def test_a_full_window_stops_fetching_until_records_are_settled() -> None:
    partition = SharePartition(start_offset=0, max_in_flight=10)
    assert take(partition, "a", data(0, 5), data(6, 11), data(12, 15)) == [AcquiredRange(0, 11, 1)]
    assert partition.fetch_offset() is None
    partition.acknowledge("a", 0, 5, [ACCEPT])
    assert partition.fetch_offset() == 12


def test_a_full_window_still_redelivers_what_is_in_it() -> None:
    partition = SharePartition(start_offset=0, max_in_flight=4)
    take(partition, "a", data(0, 3))
    partition.acknowledge("a", 1, 1, [RELEASE])
    assert partition.fetch_offset() == 1
    assert take(partition, "b", data(0, 3), data(4, 7)) == [AcquiredRange(1, 1, 2)]


def test_release_member_hands_back_only_that_members_records() -> None:
    partition = SharePartition(start_offset=0)
    take(partition, "a", data(0, 4))
    take(partition, "b", data(5, 9))
    assert partition.release_member("a") == 5
    assert partition.acquired_by("a") == ()
    assert partition.acquired_by("b") == (5, 6, 7, 8, 9)
    assert partition.fetch_offset() == 0
    assert partition.release_member("a") == 0


def test_log_truncation_drops_records_and_their_locks() -> None:
    partition = SharePartition(start_offset=0)
    take(partition, "a", data(0, 4))
    partition.advance_log_start(3)
    assert partition.start_offset == 3
    assert partition.acquired_by("a") == (3, 4)
    partition.advance_log_start(10)
    assert (partition.start_offset, partition.end_offset) == (10, 10)
    assert partition.acquired_by("a") == ()
    assert partition.next_deadline_ms() is None


def test_reset_start_drops_everything_in_flight() -> None:
    partition = SharePartition(start_offset=0)
    take(partition, "a", data(0, 4))
    partition.reset_start(2)
    assert (partition.start_offset, partition.end_offset, partition.in_flight) == (2, 2, 0)
    assert partition.acquired_by("a") == ()
    assert partition.fetch_offset() == 2


# Snapshots


def test_a_snapshot_round_trips_and_held_records_come_back_counted() -> None:
    partition = SharePartition(start_offset=0)
    take(partition, "a", data(0, 9))
    partition.acknowledge("a", 2, 3, [ACCEPT, REJECT])
    partition.acknowledge("a", 4, 4, [RELEASE])
    snapshot = partition.snapshot(state_epoch=3)
    assert snapshot == ShareSnapshot(
        0,
        (
            StateBatch(0, 1, 1, RecordState.AVAILABLE),
            StateBatch(2, 2, 1, RecordState.ACKNOWLEDGED),
            StateBatch(3, 3, 1, RecordState.ARCHIVED),
            StateBatch(4, 9, 1, RecordState.AVAILABLE),
        ),
        3,
    )
    restored = SharePartition.from_snapshot(snapshot, delivery_count_limit=5, max_in_flight=100)
    assert restored.snapshot(state_epoch=3) == snapshot
    assert restored.end_offset == 10
    assert take(restored, "b", data(0, 9)) == [AcquiredRange(0, 1, 2), AcquiredRange(4, 9, 2)]


def test_a_restored_record_at_the_limit_is_archived_not_delivered_again() -> None:
    partition = SharePartition(start_offset=0, delivery_count_limit=2)
    take(partition, "a", data(0, 0))
    partition.acknowledge("a", 0, 0, [RELEASE])
    take(partition, "a", data(0, 0))
    restored = SharePartition.from_snapshot(
        partition.snapshot(), delivery_count_limit=2, max_in_flight=100
    )
    assert restored.fetch_offset() == 0
    assert take(restored, "b", data(0, 0)) == []
    assert restored.start_offset == 1


def test_offsets_a_snapshot_leaves_out_were_never_delivered() -> None:
    snapshot = ShareSnapshot(10, (StateBatch(12, 13, 1, RecordState.ACKNOWLEDGED),))
    partition = SharePartition.from_snapshot(snapshot, delivery_count_limit=5, max_in_flight=100)
    assert (partition.start_offset, partition.end_offset) == (10, 14)
    assert partition.fetch_offset() == 10
    assert take(partition, "a", data(10, 13)) == [AcquiredRange(10, 11, 1)]
    assert partition.snapshot() == ShareSnapshot(
        10,
        (
            StateBatch(10, 11, 1, RecordState.AVAILABLE),
            StateBatch(12, 13, 1, RecordState.ACKNOWLEDGED),
        ),
    )


def test_a_finished_prefix_in_a_snapshot_moves_the_start() -> None:
    snapshot = ShareSnapshot(
        5,
        (
            StateBatch(3, 6, 1, RecordState.ACKNOWLEDGED),
            StateBatch(7, 7, 2, RecordState.ACQUIRED),
        ),
    )
    partition = SharePartition.from_snapshot(snapshot, delivery_count_limit=5, max_in_flight=100)
    assert partition.snapshot() == ShareSnapshot(7, (StateBatch(7, 7, 2, RecordState.AVAILABLE),))


# The state machine

MEMBERS = ("a", "b", "c")
MACHINE_LOCK_MS = 1000
MAX_BATCH = 4


@dataclass(frozen=True)
class Log:
    """A partition's log: data and control batches, with offsets compacted away between."""

    batches: tuple[FetchedBatch, ...]
    data_offsets: frozenset[int]
    end: int

    def read(self, fetch_offset: int, count: int) -> list[FetchedBatch]:
        return [b for b in self.batches if b.last_offset >= fetch_offset][:count]


def build_log(segments: list[tuple[str, int]]) -> Log:
    batches: list[FetchedBatch] = []
    data_offsets: set[int] = set()
    offset = 0
    for kind, size in segments:
        if kind == "data":
            data_offsets.update(range(offset, offset + size))
        if kind != "gap":
            batches.append(FetchedBatch(offset, offset + size - 1, is_control=kind == "control"))
        offset += size
    return Log(tuple(batches), frozenset(data_offsets), offset)


class SharePartitionMachine(RuleBasedStateMachine):
    """The model knows only what the partition said: what each acquisition handed out, to
    whom, until when and with which delivery count, and which records were settled."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.owner: dict[int, str] = {}
        self.deadline: dict[int, int] = {}
        self.deliveries: dict[int, int] = {}
        self.finished: set[int] = set()
        """Offsets that may lie below the start offset and must never be delivered again."""
        self.seen_start = 0

    @initialize(
        segments=st.lists(
            st.tuples(
                st.sampled_from(["data", "data", "data", "control", "gap"]),
                st.integers(1, MAX_BATCH),
            ),
            min_size=1,
            max_size=14,
        ),
        limit=st.sampled_from([1, 2, 5]),
        max_in_flight=st.sampled_from([3, 8, 2000]),
    )
    def create(self, segments: list[tuple[str, int]], limit: int, max_in_flight: int) -> None:
        self.log = build_log(segments)
        self.limit = limit
        self.max_in_flight = max_in_flight
        self.partition = SharePartition(
            start_offset=0, delivery_count_limit=limit, max_in_flight=max_in_flight
        )
        self.finished = set(range(self.log.end)) - self.log.data_offsets

    def hand_back(self, offset: int) -> None:
        del self.owner[offset]
        del self.deadline[offset]
        if self.deliveries[offset] >= self.limit:
            self.finished.add(offset)

    @rule(member=st.sampled_from(MEMBERS), max_records=st.integers(1, 8), count=st.integers(1, 4))
    def acquire(self, member: str, max_records: int, count: int) -> None:
        fetch_offset = self.partition.fetch_offset()
        if fetch_offset is None:
            assert self.partition.state_counts()[RecordState.AVAILABLE] == 0
            assert self.partition.in_flight >= self.max_in_flight
            return
        ranges = self.partition.acquire(
            member,
            self.log.read(fetch_offset, count),
            now_ms=self.now,
            lock_ms=MACHINE_LOCK_MS,
            max_records=max_records,
        )
        for earlier, later in pairwise(ranges):
            assert earlier.last_offset < later.first_offset
            adjacent = earlier.last_offset + 1 == later.first_offset
            assert not (adjacent and earlier.delivery_count == later.delivery_count)
        offsets = [
            (o, r.delivery_count) for r in ranges for o in range(r.first_offset, r.last_offset + 1)
        ]
        assert len(offsets) < max_records + MAX_BATCH
        for offset, delivery_count in offsets:
            assert offset in self.log.data_offsets
            assert offset not in self.finished
            assert offset not in self.owner
            assert delivery_count == self.deliveries.get(offset, 0) + 1 <= self.limit
            self.deliveries[offset] = delivery_count
            self.owner[offset] = member
            self.deadline[offset] = self.now + MACHINE_LOCK_MS

    @rule(member=st.sampled_from(MEMBERS), data=st.data())
    def acknowledge(self, member: str, data: st.DataObject) -> None:
        held = sorted(o for o, m in self.owner.items() if m == member)
        first = data.draw(
            st.sampled_from(held) if held else st.integers(0, self.log.end), label="first"
        )
        last = first + data.draw(st.integers(-1, 3), label="extra")
        per_offset = data.draw(st.booleans(), label="per_offset")
        length = max(last - first + 1, 1) if per_offset else 1
        types = data.draw(
            st.lists(st.integers(0, 3) | st.just(7), min_size=length, max_size=length),
            label="types",
        )
        before = self.partition.snapshot()
        result = self.partition.acknowledge(member, first, last, types)
        if last < first or 7 in types:
            assert result == ErrorCode.INVALID_REQUEST
        elif any(self.owner.get(o) != member for o in range(first, last + 1)):
            assert result == ErrorCode.INVALID_RECORD_STATE
        else:
            assert result == ErrorCode.NONE
            for index, offset in enumerate(range(first, last + 1)):
                self.settle(offset, types[index if per_offset else 0])
            return
        assert self.partition.snapshot() == before

    def settle(self, offset: int, ack_type: int) -> None:
        if ack_type == RELEASE:
            self.hand_back(offset)
            return
        del self.owner[offset]
        del self.deadline[offset]
        self.finished.add(offset)

    @rule(elapsed=st.integers(0, 1500))
    def tick(self, elapsed: int) -> None:
        self.now += elapsed
        expired = [o for o, deadline in self.deadline.items() if deadline <= self.now]
        assert self.partition.release_expired(self.now) == len(expired)
        for offset in expired:
            self.hand_back(offset)

    @rule(member=st.sampled_from(MEMBERS))
    def leave(self, member: str) -> None:
        held = [o for o, m in self.owner.items() if m == member]
        assert self.partition.release_member(member) == len(held)
        for offset in held:
            self.hand_back(offset)

    @rule(retained=st.integers(0, 5))
    def truncate(self, retained: int) -> None:
        log_start = self.partition.start_offset + retained
        self.partition.advance_log_start(log_start)
        for offset in range(log_start):
            self.finished.add(offset)
            if offset in self.owner:
                del self.owner[offset]
                del self.deadline[offset]

    @rule()
    def restart(self) -> None:
        snapshot = self.partition.snapshot(state_epoch=1)
        restored = SharePartition.from_snapshot(
            snapshot, delivery_count_limit=self.limit, max_in_flight=self.max_in_flight
        )
        assert restored.snapshot(state_epoch=1) == snapshot
        assert restored.start_offset == self.partition.start_offset
        assert restored.end_offset == self.partition.end_offset
        self.partition = restored
        for offset in list(self.owner):
            self.hand_back(offset)

    @invariant()
    def start_never_decreases_and_leaves_only_finished_records(self) -> None:
        start = self.partition.start_offset
        assert start >= self.seen_start
        assert all(o in self.finished for o in range(self.seen_start, start))
        self.seen_start = start

    @invariant()
    def each_record_has_one_holder(self) -> None:
        held = {m: self.partition.acquired_by(m) for m in MEMBERS}
        for member, offsets in held.items():
            assert offsets == tuple(sorted(o for o, m in self.owner.items() if m == member))
        counts = self.partition.state_counts()
        assert counts[RecordState.ACQUIRED] == len(self.owner)
        assert sum(counts.values()) == self.partition.in_flight

    @invariant()
    def the_window_stays_bounded(self) -> None:
        assert self.partition.in_flight < self.max_in_flight + MAX_BATCH

    @invariant()
    def the_next_deadline_is_the_earliest_lock(self) -> None:
        assert self.partition.next_deadline_ms() == min(self.deadline.values(), default=None)


SharePartitionMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
TestSharePartitionMachine = SharePartitionMachine.TestCase
