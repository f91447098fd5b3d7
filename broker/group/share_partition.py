"""A KIP-932 share partition: one share group's records of one topic partition, kept on the
partition's leader.

Theory of operation: the start offset (SPSO) and the end offset bound the records in flight.
Every record below the start is finished (acknowledged or archived); nothing at or above the
end has been acquired or archived yet. The leader asks `fetch_offset` where to read the log,
hands what it read to `acquire`, and members settle what they got with `acknowledge`. Expired
locks and departed members hand records back. Every change of a record's state goes through
the table in `share_record_states`; this class keeps the bookkeeping around it: who holds
what until when, the lowest record ready for another delivery, and the start offset moving
up past the finished prefix.

The in-flight window (end - start) is capped at ``group.share.partition.max.record.locks``
offsets, so memory and the cost of every scan stay bounded however far members fall behind.
The class does no I/O and reads no clock: the caller passes `now_ms`, persists `snapshot()`
with the share coordinator and arms a timer at `next_deadline_ms()`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from heapq import heappop, heappush
from itertools import groupby

from mirrorsim.broker.group.share_record_states import (
    ACKNOWLEDGE_EVENTS,
    TERMINAL,
    Event,
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

DEFAULT_DELIVERY_COUNT_LIMIT = 5
"""Kafka's ``group.share.delivery.count.limit``."""
DEFAULT_MAX_IN_FLIGHT = 2000
"""Kafka's ``group.share.partition.max.record.locks``."""


@dataclass(slots=True)
class _Record:
    state: RecordState
    delivery_count: int
    member_id: str | None = None
    deadline_ms: int = 0


@dataclass(slots=True)
class _Grant:
    """One `acquire` call: who takes the records, until when, and what was taken so far."""

    member_id: str
    deadline_ms: int
    taken: list[tuple[int, int]] = field(default_factory=list)
    """(offset, delivery count), ascending."""


class SharePartition:
    def __init__(
        self,
        *,
        start_offset: int,
        delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        state_batches: Iterable[StateBatch] = (),
    ) -> None:
        if delivery_count_limit < 1 or max_in_flight < 1:
            raise ValueError("delivery_count_limit and max_in_flight must be positive")
        self._limit = delivery_count_limit
        self._max_in_flight = max_in_flight
        self._start = start_offset
        self._end = start_offset
        self._records: dict[int, _Record] = {}
        """Every offset in [start, end)."""
        self._available: list[int] = []
        """Heap of offsets that became AVAILABLE; entries no longer AVAILABLE are stale."""
        self._locks: list[tuple[int, int]] = []
        """Heap of (deadline, offset) per acquisition; entries no longer held are stale."""
        self._held: dict[str, set[int]] = {}
        """Member id -> the offsets it has ACQUIRED (no empty sets)."""
        self._restore(state_batches)
        self._advance_start()

    @classmethod
    def from_snapshot(
        cls, snapshot: ShareSnapshot, *, delivery_count_limit: int, max_in_flight: int
    ) -> SharePartition:
        return cls(
            start_offset=snapshot.start_offset,
            delivery_count_limit=delivery_count_limit,
            max_in_flight=max_in_flight,
            state_batches=snapshot.state_batches,
        )

    def _restore(self, batches: Iterable[StateBatch]) -> None:
        """Rebuild the records from durable state batches. A record that was ACQUIRED comes
        back AVAILABLE (its lock died with the old leader) and keeps its delivery count;
        offsets no batch covers were never delivered. The end offset follows the last record
        that was ever delivered or archived, as `snapshot` reports no others."""
        restored: dict[int, tuple[RecordState, int]] = {}
        for batch in batches:
            state = _durable_state(RecordState(batch.state))
            for offset in range(max(batch.first_offset, self._start), batch.last_offset + 1):
                restored[offset] = (state, batch.delivery_count)
        touched = [offset for offset, entry in restored.items() if entry != _UNTOUCHED]
        self._end = max(touched) + 1 if touched else self._start
        for offset in range(self._start, self._end):
            state, count = restored.get(offset, _UNTOUCHED)
            self._records[offset] = _Record(state, count)
            if state is RecordState.AVAILABLE:
                self._available.append(offset)

    # Views

    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._end

    @property
    def in_flight(self) -> int:
        return self._end - self._start

    def state_counts(self) -> dict[RecordState, int]:
        """How many in-flight records are in each state."""
        counts = Counter(record.state for record in self._records.values())
        return {state: counts[state] for state in RecordState}

    def acquired_by(self, member_id: str) -> tuple[int, ...]:
        """The offsets `member_id` holds, ascending."""
        return tuple(sorted(self._held.get(member_id, ())))

    def snapshot(self, state_epoch: int = 0) -> ShareSnapshot:
        """The durable state: runs of in-flight records with one state and delivery count.
        Runs never delivered are left out; the last record in flight never is one, so
        `from_snapshot` recovers the end offset."""
        batches: list[StateBatch] = []
        offsets = range(self._start, self._end)
        for (state, count), run in groupby(offsets, key=self._durable_key):
            if (state, count) != _UNTOUCHED:
                run_offsets = list(run)
                batches.append(StateBatch(run_offsets[0], run_offsets[-1], count, state))
        return ShareSnapshot(self._start, tuple(batches), state_epoch)

    def _durable_key(self, offset: int) -> tuple[RecordState, int]:
        record = self._records[offset]
        return _durable_state(record.state), record.delivery_count

    # Fetching and acquiring

    def fetch_offset(self) -> int | None:
        """Where the leader should read the log from: the lowest record waiting for another
        delivery, else the end offset while the in-flight window has room, else None."""
        lowest = self._lowest_available()
        if lowest is not None:
            return lowest
        if self._end - self._start < self._max_in_flight:
            return self._end
        return None

    def _lowest_available(self) -> int | None:
        heap = self._available
        while heap:
            record = self._records.get(heap[0])
            if record is not None and record.state is RecordState.AVAILABLE:
                return heap[0]
            heappop(heap)
        return None

    def acquire(
        self,
        member_id: str,
        batches: Sequence[FetchedBatch],
        *,
        now_ms: int,
        lock_ms: int,
        max_records: int,
    ) -> list[AcquiredRange]:
        """Lock the deliverable records of `batches` (read from `fetch_offset` on, ascending)
        for `member_id` until `now_ms + lock_ms`.

        Whole batches are taken until `max_records` is reached, so a fetch may return a few
        more: the records go to the client as the log's batches. Offsets without a record to
        deliver (control batches, offsets missing between batches) are archived."""
        grant = _Grant(member_id, now_ms + lock_ms)
        previous_last: int | None = None
        for batch in batches:
            if len(grant.taken) >= max_records:
                break
            if previous_last is not None:
                self._archive_missing(previous_last + 1, batch.base_offset)
            if not self._take_batch(batch, grant):
                break
            previous_last = batch.last_offset
        self._advance_start()
        return _merge(grant.taken)

    def _archive_missing(self, first: int, end: int) -> None:
        """Archive AVAILABLE in-flight records in [first, end): the log skipped them, so
        compaction removed them after an earlier delivery."""
        for offset in range(max(first, self._start), min(end, self._end)):
            record = self._records[offset]
            if record.state is RecordState.AVAILABLE:
                self._settle(offset, record, Event.GAP)

    def _take_batch(self, batch: FetchedBatch, grant: _Grant) -> bool:
        """Acquire (or archive) one batch's offsets at and above the start offset; False
        when the batch's new records must wait because the in-flight window has no room
        for them (or for the offsets the log skipped before them)."""
        first = max(batch.base_offset, self._start)
        for offset in range(first, min(batch.last_offset + 1, self._end)):
            self._offer(offset, self._records[offset], batch.is_control, grant)
        if batch.last_offset < self._end:
            return True
        self._advance_start()
        if not self._extend_to(first) or self._end - self._start >= self._max_in_flight:
            return False
        for offset in range(self._end, batch.last_offset + 1):
            record = self._records[offset] = _Record(RecordState.AVAILABLE, 0)
            self._offer(offset, record, batch.is_control, grant)
        self._end = batch.last_offset + 1
        return True

    def _extend_to(self, offset: int) -> bool:
        """Move the end offset up to `offset`, archiving the offsets the log skipped (they
        were compacted away before any delivery); False if they would fill the window."""
        if offset <= self._end:
            return True
        if self._start == self._end:
            self._start = self._end = offset
            return True
        if offset - self._start >= self._max_in_flight:
            return False
        for skipped in range(self._end, offset):
            record = self._records[skipped] = _Record(RecordState.AVAILABLE, 0)
            self._settle(skipped, record, Event.GAP)
        self._end = offset
        return True

    def _offer(self, offset: int, record: _Record, is_control: bool, grant: _Grant) -> None:
        """An AVAILABLE record read from the log: a control record is archived, any other
        is delivered to the grant's member (or archived at the delivery limit)."""
        if record.state is not RecordState.AVAILABLE:
            return
        if is_control:
            self._settle(offset, record, Event.GAP)
            return
        record.state = next_state(record.state, Event.ACQUIRE, record.delivery_count, self._limit)
        if record.state is not RecordState.ACQUIRED:
            return
        record.delivery_count += 1
        record.member_id = grant.member_id
        record.deadline_ms = grant.deadline_ms
        self._held.setdefault(grant.member_id, set()).add(offset)
        heappush(self._locks, (grant.deadline_ms, offset))
        grant.taken.append((offset, record.delivery_count))

    # Settling

    def acknowledge(
        self, member_id: str, first_offset: int, last_offset: int, types: Sequence[int]
    ) -> ErrorCode:
        """Settle [first_offset, last_offset] with one acknowledge type for all or one per
        offset. All or nothing: every offset must be held by `member_id`."""
        events = _acknowledge_events(first_offset, last_offset, types)
        if events is None:
            return ErrorCode.INVALID_REQUEST
        if not self._holds(member_id, first_offset, last_offset):
            return ErrorCode.INVALID_RECORD_STATE
        for index, offset in enumerate(range(first_offset, last_offset + 1)):
            event = events[index] if len(events) > 1 else events[0]
            self._settle(offset, self._records[offset], event)
        self._advance_start()
        return ErrorCode.NONE

    def _holds(self, member_id: str, first_offset: int, last_offset: int) -> bool:
        held = self._held.get(member_id, set())
        if last_offset - first_offset + 1 > len(held):
            return False
        return all(offset in held for offset in range(first_offset, last_offset + 1))

    def release_expired(self, now_ms: int) -> int:
        """Hand back every record whose lock ran out by `now_ms`; how many there were."""
        released = 0
        while self._locks and self._locks[0][0] <= now_ms:
            deadline_ms, offset = heappop(self._locks)
            record = self._locked(deadline_ms, offset)
            if record is not None:
                self._settle(offset, record, Event.LOCK_EXPIRED)
                released += 1
        self._advance_start()
        return released

    def next_deadline_ms(self) -> int | None:
        """When the earliest lock runs out, for the caller's timer."""
        while self._locks:
            deadline_ms, offset = self._locks[0]
            if self._locked(deadline_ms, offset) is not None:
                return deadline_ms
            heappop(self._locks)
        return None

    def _locked(self, deadline_ms: int, offset: int) -> _Record | None:
        """The record a lock heap entry stands for, if it still holds that lock."""
        record = self._records.get(offset)
        if (
            record is not None
            and record.state is RecordState.ACQUIRED
            and record.deadline_ms == deadline_ms
        ):
            return record
        return None

    def release_member(self, member_id: str) -> int:
        """The member left: what it holds goes back to the group; how many records."""
        offsets = sorted(self._held.get(member_id, ()))
        for offset in offsets:
            self._settle(offset, self._records[offset], Event.MEMBER_GONE)
        self._advance_start()
        return len(offsets)

    def _settle(self, offset: int, record: _Record, event: Event) -> None:
        """Move a record by `event`; a record leaving ACQUIRED loses its holder."""
        state = next_state(record.state, event, record.delivery_count, self._limit)
        if record.state is RecordState.ACQUIRED:
            self._drop_holder(offset, record)
        record.state = state
        if state is RecordState.AVAILABLE:
            heappush(self._available, offset)

    def _drop_holder(self, offset: int, record: _Record) -> None:
        member_id = record.member_id
        record.member_id = None
        if member_id is None:
            return
        held = self._held[member_id]
        held.discard(offset)
        if not held:
            del self._held[member_id]

    # Moving the start offset

    def _advance_start(self) -> None:
        """Drop the finished prefix: the start offset moves to the first record still to be
        delivered or settled."""
        while self._start < self._end and self._records[self._start].state in TERMINAL:
            del self._records[self._start]
            self._start += 1

    def advance_log_start(self, log_start_offset: int) -> None:
        """Retention or DeleteRecords removed the log below `log_start_offset`: the records
        there are gone, and so are any locks on them."""
        if log_start_offset <= self._start:
            return
        for offset in range(self._start, min(log_start_offset, self._end)):
            record = self._records.pop(offset)
            if record.state is RecordState.ACQUIRED:
                self._drop_holder(offset, record)
        self._start = log_start_offset
        self._end = max(self._end, log_start_offset)
        self._advance_start()

    def reset_start(self, offset: int) -> None:
        """An administrator moved the group's offset (the caller makes sure no member is
        active): all in-flight state is dropped and consumption starts at `offset`."""
        self._records.clear()
        self._available.clear()
        self._locks.clear()
        self._held.clear()
        self._start = self._end = offset


_UNTOUCHED = (RecordState.AVAILABLE, 0)
"""A record never delivered: what an offset no state batch mentions is."""


def _durable_state(state: RecordState) -> RecordState:
    """What a record's state is once its lock is gone: a held record may be delivered again
    (and counted) after the leader restarts."""
    return RecordState.AVAILABLE if state is RecordState.ACQUIRED else state


def _acknowledge_events(
    first_offset: int, last_offset: int, types: Sequence[int]
) -> list[Event] | None:
    """The event per acknowledge type, or None for a malformed acknowledgement batch."""
    if last_offset < first_offset or len(types) not in (1, last_offset - first_offset + 1):
        return None
    try:
        return [ACKNOWLEDGE_EVENTS[AcknowledgeType(value)] for value in types]
    except ValueError:
        return None


def _merge(taken: list[tuple[int, int]]) -> list[AcquiredRange]:
    """Contiguous offsets with one delivery count become one range."""
    runs: list[list[int]] = []
    for offset, count in taken:
        if runs and runs[-1][1] + 1 == offset and runs[-1][2] == count:
            runs[-1][1] = offset
        else:
            runs.append([offset, offset, count])
    return [AcquiredRange(first, last, count) for first, last, count in runs]
