"""The share partitions this broker leads: ShareFetch and ShareAcknowledge run here.

Kafka's ``SharePartitionManager``: one `SharePartition` per share group and partition,
created on the first ShareFetch that names it on the partition's leader. It starts from
the durable state when there is one; otherwise from ``share.auto.offset.reset``, and that
start is stored at once, so a later "latest" does not skip what was produced meanwhile.
Loading takes the stored state over (`ShareStateStore.take_over`): its state epoch goes
up by one, and a previous holder of the partition (an old leader, or this broker before
an admin reset) can no longer write, so nothing it acknowledges afterwards is reported
as done.

Every change to durable state (an acknowledgement, a release, a record archived at its
delivery limit, the start offset moving) is written before the request that caused it is
answered. Acquisitions are not written: after a crash an acquired record is available
again with the delivery count last written, as in Kafka. Acquisition locks are timers on
the injected clock, one per partition at its earliest deadline.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

from mirrorsim.broker.group.clock import Clock, TimerHandle
from mirrorsim.broker.group.share_partition import SharePartition
from mirrorsim.broker.group.share_state import (
    AcquiredRange,
    FetchedBatch,
    RecordState,
    ShareSnapshot,
)
from mirrorsim.broker.replica import FetchKey, FetchParams, PartitionFetch, ReplicaManager
from mirrorsim.broker.replica.partition import PartitionRead
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.records.raw_batch import RawBatch, iter_batches

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
READ_COMMITTED = 1
MIN_READ_BYTES = 64 * 1024
FIRST_READ_BYTES = 1024 * 1024
READ_HEADROOM = 2.0
_DURATION = re.compile(
    r"^P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?$"
)


class ShareStates(Protocol):
    """What the manager needs of the durable share state (`ShareStateStore`)."""

    async def initialize(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        snapshot: ShareSnapshot,
        *,
        leader_epoch: int,
    ) -> bool: ...

    async def take_over(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> ShareSnapshot | None: ...

    async def write(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        snapshot: ShareSnapshot,
        *,
        leader_epoch: int,
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class ShareLimits:
    """The broker's share-group settings (Kafka's ``group.share.*`` defaults)."""

    delivery_count_limit: int = 5
    max_in_flight: int = 2000
    record_lock_duration_ms: int = 30_000


@dataclass(frozen=True, slots=True)
class ShareGroupSettings:
    """The group's own settings (GROUP config resource) that a share partition applies."""

    auto_offset_reset: str = "latest"
    isolation_level: int = 0
    record_lock_duration_ms: int | None = None


@dataclass(frozen=True, slots=True)
class ShareKey:
    group_id: str
    topic: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class ShareRead:
    """One partition's answer to a ShareFetch: the batches holding acquired records."""

    records: bytes = b""
    acquired: tuple[AcquiredRange, ...] = ()
    error: ErrorCode = ErrorCode.NONE


@dataclass(slots=True)
class LoadedSharePartition:
    partition: SharePartition
    leader_epoch: int
    state_epoch: int
    bytes_per_record: float = 0.0
    """What the log's records took per offset in the last read; 0 before the first."""
    timer: TimerHandle | None = None
    deadline_ms: int | None = None
    writes: list[asyncio.Task[ErrorCode]] = field(default_factory=list)


class SharePartitionManager:
    def __init__(
        self,
        *,
        replicas: ReplicaManager,
        states: ShareStates,
        group_settings: Callable[[str], ShareGroupSettings],
        limits: ShareLimits,
        clock: Clock,
    ) -> None:
        self._replicas = replicas
        self._states = states
        self._group_settings = group_settings
        self._limits = limits
        self._clock = clock
        self._loaded: dict[ShareKey, LoadedSharePartition] = {}
        self._loading: dict[ShareKey, asyncio.Future[LoadedSharePartition]] = {}

    def lock_duration_ms(self, group_id: str) -> int:
        own = self._group_settings(group_id).record_lock_duration_ms
        return self._limits.record_lock_duration_ms if own is None else own

    def loaded(self) -> Mapping[ShareKey, SharePartition]:
        return {key: entry.partition for key, entry in self._loaded.items()}

    async def stop(self) -> None:
        for entry in self._loaded.values():
            if entry.timer is not None:
                entry.timer.cancel()
        pending = [task for entry in self._loaded.values() for task in entry.writes]
        await asyncio.gather(*pending, return_exceptions=True)
        self._loaded.clear()

    # Fetch

    async def fetch(
        self,
        member_id: str,
        keys: Sequence[ShareKey],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        max_records: int,
    ) -> dict[ShareKey, ShareRead]:
        """Acquire up to ``max_records`` records for the member across ``keys``, waiting up
        to ``max_wait_ms`` for ``min_bytes`` when nothing can be acquired yet."""
        answers: dict[ShareKey, ShareRead] = {}
        wanted: dict[ShareKey, PartitionFetch] = {}
        for key in keys:
            try:
                entry = await self._entry(key)
            except KafkaError as exc:
                answers[key] = ShareRead(error=exc.code)
                continue
            self._expire(key, entry)
            offset = entry.partition.fetch_offset()
            if offset is not None:
                wanted[key] = PartitionFetch(
                    fetch_offset=offset,
                    partition_max_bytes=read_limit(entry, max_bytes, max_records),
                )
        if not wanted:
            return answers
        isolation = {self._group_settings(key.group_id).isolation_level for key in wanted}
        params = FetchParams(
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            isolation_level=READ_COMMITTED if READ_COMMITTED in isolation else 0,
        )
        reads = await self._replicas.fetch(
            params, {FetchKey(k.topic, k.partition, k.topic_id): f for k, f in wanted.items()}
        )
        remaining = max_records
        for key in wanted:
            outcome = reads[FetchKey(key.topic, key.partition, key.topic_id)]
            if isinstance(outcome, KafkaError):
                answers[key] = ShareRead(error=outcome.code)
                continue
            entry = self._loaded.get(key)
            if entry is None or remaining <= 0:
                answers[key] = ShareRead()
                continue
            answers[key] = self._acquire(key, entry, member_id, outcome, remaining)
            remaining -= sum(r.last_offset - r.first_offset + 1 for r in answers[key].acquired)
        return answers

    def _acquire(
        self,
        key: ShareKey,
        entry: LoadedSharePartition,
        member_id: str,
        read: PartitionRead,
        max_records: int,
    ) -> ShareRead:
        entry.partition.advance_log_start(read.log_start_offset)
        batches = list(iter_batches(read.records, share_memory=True))
        if batches:
            offsets = batches[-1].last_offset - batches[0].base_offset + 1
            entry.bytes_per_record = len(read.records) / offsets
        fetched = _fetched_batches(batches, read.aborted_transactions)
        acquired = entry.partition.acquire(
            member_id,
            fetched,
            now_ms=self._clock.now_ms(),
            lock_ms=self.lock_duration_ms(key.group_id),
            max_records=max_records,
        )
        self._arm(key, entry)
        if not acquired:
            return ShareRead()
        chosen = [
            batch.data
            for batch in batches
            if any(
                r.first_offset <= batch.last_offset and batch.base_offset <= r.last_offset
                for r in acquired
            )
        ]
        return ShareRead(records=b"".join(bytes(data) for data in chosen), acquired=tuple(acquired))

    # Acknowledge and release

    async def acknowledge(
        self, member_id: str, key: ShareKey, batches: Sequence[tuple[int, int, Sequence[int]]]
    ) -> ErrorCode:
        """Apply the member's acknowledgements of one partition and store the result; the
        first refused batch's error is the partition's (later batches still apply)."""
        try:
            entry = await self._entry(key)
        except KafkaError as exc:
            return exc.code
        error = ErrorCode.NONE
        for first, last, types in batches:
            result = entry.partition.acknowledge(member_id, first, last, types)
            if result != ErrorCode.NONE and error == ErrorCode.NONE:
                error = result
        self._arm(key, entry)
        return await self._store(key, entry) if error == ErrorCode.NONE else error

    async def release_member(self, group_id: str, member_id: str) -> None:
        """The member's share session ended: what it still holds in the group's partitions
        on this broker goes back to the group, including partitions its session had
        forgotten (records there stay acquired until acknowledged or released)."""
        writes = []
        for key in [k for k in self._loaded if k.group_id == group_id]:
            entry = self._loaded.get(key)
            if entry is not None and entry.partition.release_member(member_id):
                self._arm(key, entry)
                writes.append(self._store(key, entry))
        await asyncio.gather(*writes)

    async def _store(self, key: ShareKey, entry: LoadedSharePartition) -> ErrorCode:
        """Write the partition's state; a write fenced by a newer leader unloads it."""
        try:
            await self._states.write(
                key.group_id,
                key.topic_id,
                key.partition,
                entry.partition.snapshot(state_epoch=entry.state_epoch),
                leader_epoch=entry.leader_epoch,
            )
        except KafkaError as exc:
            self._unload(key)
            return exc.code
        return ErrorCode.NONE

    # Loading

    async def _entry(self, key: ShareKey) -> LoadedSharePartition:
        """The loaded share partition, (re)loaded when this broker has become the
        partition's leader again since it was loaded."""
        replica = self._replicas.partition(key.topic, key.partition)
        if not replica.is_leader:
            self._unload(key)
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        entry = self._loaded.get(key)
        if entry is not None and entry.leader_epoch == replica.leader_epoch:
            return entry
        self._unload(key)
        pending = self._loading.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._load(key, replica.leader_epoch))
            self._loading[key] = pending
            pending.add_done_callback(lambda _: self._loading.pop(key, None))
        return await asyncio.shield(pending)

    async def _load(self, key: ShareKey, leader_epoch: int) -> LoadedSharePartition:
        """Take the stored state over, or store the first one; when another leader stores
        a first state at the same time, take that one over instead."""
        limits = self._limits
        snapshot = await self._states.take_over(
            key.group_id, key.topic_id, key.partition, leader_epoch
        )
        if snapshot is None:
            first = ShareSnapshot(self._initial_offset(key))
            if await self._states.initialize(
                key.group_id, key.topic_id, key.partition, first, leader_epoch=leader_epoch
            ):
                snapshot = first
            else:
                snapshot = await self._states.take_over(
                    key.group_id, key.topic_id, key.partition, leader_epoch
                )
                if snapshot is None:
                    raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        partition = SharePartition.from_snapshot(
            snapshot,
            delivery_count_limit=limits.delivery_count_limit,
            max_in_flight=limits.max_in_flight,
        )
        entry = LoadedSharePartition(partition, leader_epoch, snapshot.state_epoch)
        self._loaded[key] = entry
        return entry

    def refresh_idle(self, keys: Sequence[ShareKey]) -> None:
        """Unload the partitions of ``keys`` in which nothing is acquired, so their next
        use reads the stored state again. A share session opens after an admin reset or
        deletion of the group's offsets (done while the group had no members) and so sees
        it; a partition whose records other members hold keeps its state, which a reset
        cannot have touched while they were members."""
        for key in keys:
            entry = self._loaded.get(key)
            if entry is not None and not entry.partition.state_counts()[RecordState.ACQUIRED]:
                self._unload(key)

    def _initial_offset(self, key: ShareKey) -> int:
        """Where a share partition without state starts (``share.auto.offset.reset``)."""
        reset = self._group_settings(key.group_id).auto_offset_reset
        if reset == "earliest":
            timestamp = EARLIEST_TIMESTAMP
        elif reset.startswith("by_duration:"):
            back = _duration(reset.removeprefix("by_duration:"))
            timestamp = self._clock.now_ms() - int(back.total_seconds() * 1000)
        else:
            timestamp = LATEST_TIMESTAMP
        found = self._replicas.list_offset(key.topic, key.partition, timestamp)
        if found.offset >= 0:
            return found.offset
        return self._replicas.list_offset(key.topic, key.partition, LATEST_TIMESTAMP).offset

    def _unload(self, key: ShareKey) -> None:
        entry = self._loaded.pop(key, None)
        if entry is not None and entry.timer is not None:
            entry.timer.cancel()

    # Acquisition locks

    def _arm(self, key: ShareKey, entry: LoadedSharePartition) -> None:
        """Keep one timer per partition, at its earliest lock deadline."""
        deadline = entry.partition.next_deadline_ms()
        if deadline == entry.deadline_ms:
            return
        if entry.timer is not None:
            entry.timer.cancel()
        entry.timer, entry.deadline_ms = None, deadline
        if deadline is not None:
            delay = deadline - self._clock.now_ms()
            entry.timer = self._clock.call_later(delay, lambda: self._on_deadline(key, entry))

    def _on_deadline(self, key: ShareKey, entry: LoadedSharePartition) -> None:
        entry.timer, entry.deadline_ms = None, None
        if self._loaded.get(key) is not entry:
            return
        self._expire(key, entry)
        self._arm(key, entry)

    def _expire(self, key: ShareKey, entry: LoadedSharePartition) -> None:
        if entry.partition.release_expired(self._clock.now_ms()):
            task = asyncio.ensure_future(self._store(key, entry))
            entry.writes.append(task)
            task.add_done_callback(lambda done: _forget(entry.writes, done, key))


def read_limit(entry: LoadedSharePartition, max_bytes: int, max_records: int) -> int:
    """How much of the log to read for ``max_records`` records. A share consumer asks for
    few records (librdkafka: 500) and many bytes (52 MB), and reading all those bytes to
    hand out 500 records would copy the whole backlog on every fetch; the partition's
    recent bytes per record, with room to spare, bound the read instead (at least
    `MIN_READ_BYTES`; a partition's first read takes at most `FIRST_READ_BYTES`)."""
    if entry.bytes_per_record <= 0:
        return min(max_bytes, FIRST_READ_BYTES)
    wanted = int(entry.bytes_per_record * max_records * READ_HEADROOM)
    return min(max_bytes, max(MIN_READ_BYTES, wanted))


def _forget(writes: list[asyncio.Task[ErrorCode]], done: asyncio.Task[None], key: ShareKey) -> None:
    writes.remove(done)
    if not done.cancelled() and done.exception() is not None:
        log.warning("share state of %s not stored after lock expiry: %s", key, done.exception())


def _fetched_batches(
    batches: Sequence[RawBatch], aborted: tuple[tuple[int, int], ...] | None
) -> list[FetchedBatch]:
    """The log's batches as the share partition sees them. Under read_committed a data
    batch of an aborted transaction is never delivered, like a transaction marker: the
    producer's transaction is open from its first aborted offset to its abort marker."""
    starts = sorted(aborted or ())
    open_aborted: set[int] = set()
    fetched = []
    for batch in batches:
        while starts and starts[0][1] <= batch.base_offset:
            open_aborted.add(starts.pop(0)[0])
        hidden = batch.is_control or batch.producer_id in open_aborted
        if batch.is_control:
            open_aborted.discard(batch.producer_id)
        fetched.append(FetchedBatch(batch.base_offset, batch.last_offset, hidden))
    return fetched


def _duration(text: str) -> timedelta:
    match = _DURATION.match(text)
    if match is None:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Not an ISO-8601 duration: {text}")
    parts = {name: int(value or 0) for name, value in match.groupdict().items()}
    return timedelta(**parts)
