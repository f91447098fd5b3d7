"""The broker's replica manager: the partitions this broker hosts and their data path.

The Broker tells it which partitions exist and who leads them (``apply_partition_state``);
the Produce, Fetch, ListOffsets, OffsetForLeaderEpoch and DeleteRecords handlers call it.
It owns the delayed operations: a Produce with acks=all waits until the ISR has the batch
(the high watermark passes it), and a Fetch waits up to ``max.wait.ms`` for ``min.bytes``.
Both are woken by the purgatory whenever a partition's log or high watermark changes.

Errors are raised as ``KafkaError``; per-partition results of a multi-partition Fetch carry
the ``KafkaError`` in place of the data so the handler can answer partition by partition.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mirrorsim.broker.log.config import LogConfig
from mirrorsim.broker.log.errors import DuplicateSequenceError, InvalidRecordError, LogError
from mirrorsim.broker.log.log_manager import LogManager
from mirrorsim.broker.log.partition_log import PartitionLog
from mirrorsim.broker.log.results import AppendInfo, AppendOrigin
from mirrorsim.broker.replica.fetch_session import (
    FetchKey,
    FetchSessionCache,
    PartitionFetch,
    SessionWatch,
    session_wait_key,
)
from mirrorsim.broker.replica.follower_fetcher import ReplicaFetcherManager
from mirrorsim.broker.replica.partition import (
    READ_COMMITTED,
    AppendResult,
    Partition,
    PartitionRead,
)
from mirrorsim.broker.replica.partition_state import PartitionState
from mirrorsim.broker.replica.producer_ids import ProducerIdAllocator
from mirrorsim.broker.replica.purgatory import Purgatory
from mirrorsim.broker.replica.validation import (
    TimestampPolicy,
    split_produced_batches,
    validate_client_batches,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError, RecordErrorsError
from mirrorsim.protocol.records.raw_batch import RawBatch

log = logging.getLogger(__name__)

RETENTION_SLICE = 1000
"""Partitions a retention pass checks between two turns of the event loop."""


def storage_error(exc: OSError) -> KafkaError:
    """An append that failed on the file system (out of descriptors, disk full): Kafka's
    KAFKA_STORAGE_ERROR for the partition, so the client retries; the connection stays."""
    return KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc))


EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
NO_TIMESTAMP = -1
NO_OFFSET = -1
DEBUGGING_REPLICA_ID = -2
VALID_ACKS = (-1, 0, 1)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class FetchParams:
    """The request-level knobs of one Fetch."""

    replica_id: int = -1
    replica_epoch: int = -1
    """A follower's broker epoch (Fetch v15+ ``ReplicaState``), -1 when not sent."""
    max_wait_ms: int = 0
    min_bytes: int = 1
    max_bytes: int = 2**31 - 1
    isolation_level: int = 0

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0


@dataclass(frozen=True, slots=True)
class OffsetAndTimestamp:
    timestamp: int
    offset: int
    leader_epoch: int


FetchOutcome = PartitionRead | KafkaError
AlterIsr = Callable[[PartitionState, tuple[int, ...], Mapping[int, int]], Awaitable[None]]
"""Writes a leader's ISR change through the metadata store (AlterPartition), with the
broker epoch each follower's fetches carried."""


class ReplicaManager:
    def __init__(
        self,
        *,
        broker_id: int,
        log_manager: LogManager,
        clock: Callable[[], int] = wall_clock_ms,
        data_dir: Path | None = None,
    ) -> None:
        self.broker_id = broker_id
        self._log_manager = log_manager
        self._clock = clock
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._offline: dict[tuple[str, int], str] = {}
        """Partitions whose log could not be opened (out of descriptors, disk error), with
        why: requests for them answer KAFKA_STORAGE_ERROR, as Kafka's offline partitions."""
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._purgatory = Purgatory()
        self._stopping = False
        self.fetch_sessions = FetchSessionCache(clock=clock)
        directory = data_dir if data_dir is not None else Path(log_manager.data_dir)
        self.producer_ids = ProducerIdAllocator(directory, broker_id)
        self._stopped_mirror_partitions: set[tuple[str, int]] = set()
        """Mirror partitions this leader's mirror coordinator found STOPPED: the only
        partitions of mirror topics that accept produce requests."""
        self.fetchers: ReplicaFetcherManager | None = None
        self._alter_isr: AlterIsr | None = None
        self._isr_changes: dict[tuple[str, int], asyncio.Task[None]] = {}

    def enable_replication(self, fetchers: ReplicaFetcherManager, alter_isr: AlterIsr) -> None:
        """Follow remote leaders with ``fetchers``; write ISR changes with ``alter_isr``."""
        self.fetchers = fetchers
        self._alter_isr = alter_isr

    async def start(self) -> None:
        self._stopping = False

    async def stop(self) -> None:
        """Complete every parked request now; they answer with what they have."""
        self._stopping = True
        self._purgatory.notify_all()
        if self.fetchers is not None:
            await self.fetchers.stop()
        for change in list(self._isr_changes.values()):
            change.cancel()

    # -- metadata ---------------------------------------------------------------------

    async def apply_partition_state(self, state: PartitionState) -> None:
        """Create, lead or follow a partition as the cluster metadata says."""
        key = (state.topic, state.partition)
        if self.broker_id not in state.replicas:
            await self.remove_partition(state.topic, state.partition, delete=True)
            return
        partition = self._partitions.get(key)
        if partition is None:
            # Opening a log creates its directory and files and fsyncs its metadata: on a
            # worker thread, so that a CreateTopics of thousands of partitions does not
            # stall every other request of this broker.
            try:
                partition_log = await asyncio.to_thread(
                    self._log_manager.get_or_create,
                    state.topic,
                    state.partition,
                    LogConfig.from_topic_config(state.configs),
                    topic_id=state.topic_id,
                )
            except OSError as exc:
                self.take_offline(key, exc)
                return
            self._offline.pop(key, None)
            partition_log.on_change = functools.partial(self._changed, key)
            partition = Partition(self.broker_id, state, partition_log, self._clock)
            self._partitions[key] = partition
        elif partition.state.configs != state.configs:
            partition.log.update_config(LogConfig.from_topic_config(state.configs))
        try:
            partition.apply_state(state)
        except OSError as exc:
            self.take_offline(key, exc)
            return
        self._topic_ids[state.topic] = state.topic_id
        if self.fetchers is not None:
            if partition.is_follower:
                self.fetchers.follow(partition)
            else:
                self.fetchers.unfollow(state.topic, state.partition)
        self._changed(key)

    def _changed(self, key: tuple[str, int]) -> None:
        """Something a reader of ``key`` can see changed (its log, leadership or presence):
        wake the requests parked on it, and every fetch session that had it settled."""
        self._purgatory.notify(key)
        for session_id in self.fetch_sessions.mark_changed(*key):
            self._purgatory.notify(session_wait_key(session_id))

    def take_offline(self, key: tuple[str, int], exc: OSError) -> None:
        """The file system refused the partition's log (out of descriptors, disk error):
        it answers KAFKA_STORAGE_ERROR until a later refresh applies its state again. Its
        log stays open in the log manager, with whatever memory holds but the disk does not
        marked dirty, so the retry picks it up where it stopped."""
        self._partitions.pop(key, None)
        self._offline[key] = str(exc)
        if self.fetchers is not None:
            self.fetchers.unfollow(*key)
        self._log_manager.handles.close_idle()
        self._changed(key)

    async def remove_partition(self, topic: str, partition: int, *, delete: bool = True) -> None:
        key = (topic, partition)
        removed = self._partitions.pop(key, None)
        self._offline.pop(key, None)
        if self.fetchers is not None:
            self.fetchers.unfollow(topic, partition)
        if removed is not None and delete:
            self._log_manager.delete(topic, partition)
        if not any(t == topic for t, _ in self._partitions):
            self._topic_ids.pop(topic, None)
        self._changed(key)

    def partition(self, topic: str, partition: int) -> Partition:
        found = self._partitions.get((topic, partition))
        if found is None:
            reason = self._offline.get((topic, partition))
            if reason is not None:
                raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, reason)
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return found

    def offline_partitions(self) -> dict[tuple[str, int], str]:
        """The partitions whose log could not be opened, with why."""
        return dict(self._offline)

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def delayed_operation_count(self, topic: str, partition: int) -> int:
        """Requests parked on the partition (Kafka's purgatory size, per partition)."""
        return self._purgatory.watcher_count((topic, partition))

    def parked_session_fetches(self, session_id: int) -> int:
        """Fetches of a session parked with nothing to read, waiting for a partition of the
        session to change."""
        return self._purgatory.watcher_count(session_wait_key(session_id))

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self._topic_ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        for name, known_id in self._topic_ids.items():
            if known_id == topic_id:
                return name
        return None

    # -- produce ----------------------------------------------------------------------

    def open_stopped_mirror_partition(self, topic: str, partition: int) -> None:
        """The mirror coordinator holds the partition STOPPED: produce may write to it even
        while its topic still names the mirror (``mirror.name`` ending in ``.removed``)."""
        self._stopped_mirror_partitions.add((topic, partition))

    def close_mirror_partition(self, topic: str, partition: int) -> None:
        """The partition is not (or no longer) STOPPED here: a mirror topic refuses produce."""
        self._stopped_mirror_partitions.discard((topic, partition))

    def append_produced(
        self, topic: str, partition: int, records: bytes, *, required_acks: int
    ) -> tuple[AppendResult, Partition]:
        """Validate and append one partition's Produce data as leader, at once.

        The result, and the partition to wait on with ``await_isr`` when acks=all."""
        if required_acks not in VALID_ACKS:
            raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS)
        target = self.partition(topic, partition)
        target.check_writable(
            required_acks,
            mirror_partition_stopped=(topic, partition) in self._stopped_mirror_partitions,
        )
        now = self._clock()
        policy = TimestampPolicy.from_topic_config(target.state.configs)
        batches = validate_client_batches(split_produced_batches(records), policy, now)
        try:
            return target.append_as_leader(batches, now), target
        except DuplicateSequenceError as exc:
            return AppendResult(
                exc.first_offset, exc.last_offset, -1, target.log_start_offset
            ), target
        except InvalidRecordError as exc:
            if exc.record_errors:
                raise RecordErrorsError(str(exc), exc.record_errors) from exc
            raise KafkaError(ErrorCode.INVALID_RECORD, str(exc)) from exc
        except LogError as exc:
            raise KafkaError(ErrorCode(exc.error_code), str(exc)) from exc
        except OSError as exc:
            raise storage_error(exc) from exc

    async def append_records(
        self, topic: str, partition: int, records: bytes, *, required_acks: int, timeout_ms: int
    ) -> AppendResult:
        """One partition's Produce data appended as leader; with acks=all, once the ISR
        has it."""
        result, target = self.append_produced(
            topic, partition, records, required_acks=required_acks
        )
        if required_acks == -1:
            await self._acknowledged(target, result.last_offset, timeout_ms)
        return result

    async def _acknowledged(self, target: Partition, last_offset: int, timeout_ms: int) -> None:
        """``await_isr`` for one partition, its error raised."""
        error = (await self.await_isr([(target, last_offset)], timeout_ms))[0]
        if error is not None:
            raise error

    async def await_isr(
        self, appended: list[tuple[Partition, int]], timeout_ms: int
    ) -> list[KafkaError | None]:
        """Wait until the ISR of every (partition, last offset) has its append, or the
        partition is no longer led here, at most ``timeout_ms``: Kafka's DelayedProduce,
        one wait for all the partitions of a request. What each came to, in order: None
        when acknowledged."""

        def settled(target: Partition, last_offset: int) -> bool:
            return not target.is_leader or target.is_acknowledged(last_offset)

        if not all(settled(target, last) for target, last in appended):
            await self._purgatory.wait_until(
                [(target.topic, target.index) for target, _ in appended],
                lambda: self._stopping or all(settled(t, last) for t, last in appended),
                timeout_ms / 1000,
                checked=True,
            )
        return [_isr_outcome(target, last) for target, last in appended]

    # -- fetch ------------------------------------------------------------------------

    async def fetch(
        self,
        params: FetchParams,
        partitions: Mapping[FetchKey, PartitionFetch],
        session: SessionWatch | None = None,
    ) -> dict[FetchKey, FetchOutcome]:
        """Read every partition; park until ``min_bytes`` are there or ``max_wait_ms`` passes.

        Kafka answers at once when the wait is zero, when nothing is asked, when enough bytes
        are ready, or when any partition has an error or a diverging epoch. ``session``: the
        request reads only the changed partitions of its fetch session; "nothing asked"
        then means an empty session, and a settled partition of the session that changes
        while the request is parked ends the wait, so that the Fetch handler, which
        authorizes partitions, can add it to the read and wait on.
        """
        outcomes = self._read_all(params, partitions)
        if params.is_from_follower:
            outcomes = self._record_follower_fetches(params, partitions, outcomes)
        asked = session.holds_partitions() if session is not None else bool(partitions)
        if params.max_wait_ms <= 0 or not asked or _satisfied(outcomes, params.min_bytes):
            return outcomes

        def ready() -> bool:
            nonlocal outcomes
            if self._stopping:
                return True
            outcomes = self._read_all(params, partitions)
            woken = session is not None and session.woken
            return woken or _satisfied(outcomes, params.min_bytes)

        keys: list[Hashable] = [(key.topic, key.partition) for key in partitions]
        if session is not None:
            keys.append(session_wait_key(session.session_id))
        await self._purgatory.wait_until(keys, ready, params.max_wait_ms / 1000, checked=True)
        return outcomes

    def _record_follower_fetches(
        self,
        params: FetchParams,
        partitions: Mapping[FetchKey, PartitionFetch],
        outcomes: dict[FetchKey, FetchOutcome],
    ) -> dict[FetchKey, FetchOutcome]:
        """Count a follower's fetch offset as its log end offset, as Kafka does, but only
        for reads that passed epoch fencing and found no divergence (a diverged log proves
        nothing). The answer carries the high watermark the fetch itself may have moved."""
        replica_id = params.replica_id
        for key, fetch in partitions.items():
            outcome = outcomes.get(key)
            found = self._partitions.get((key.topic, key.partition))
            if (
                not isinstance(outcome, PartitionRead)
                or outcome.diverging_epoch is not None
                or found is None
                or not found.is_leader
                or replica_id not in found.followers
            ):
                continue
            if found.record_follower_fetch(replica_id, fetch.fetch_offset, params.replica_epoch):
                outcomes[key] = dataclasses.replace(
                    outcome,
                    high_watermark=found.high_watermark,
                    last_stable_offset=found.last_stable_offset,
                )
            self._maybe_change_isr(found, found.isr_to_expand())
        return outcomes

    # -- ISR --------------------------------------------------------------------------

    def maybe_shrink_isr(self, lag_time_max_ms: int) -> None:
        """Kafka's ISR expiration: drop followers that have not caught up for too long.

        Only partitions with followers can shrink; the rest (every partition of a
        single-broker cluster, 100,000 of them at scale) are passed by in the walk
        itself instead of costing two calls each every few seconds."""
        for partition in [p for p in self._partitions.values() if p.followers]:
            self._maybe_change_isr(partition, partition.isr_to_shrink(lag_time_max_ms))

    async def delete_old_segments(self, *, slice_size: int = RETENTION_SLICE) -> int:
        """Kafka's log retention pass over every partition this broker holds, leader or
        follower: segments below the log start (DeleteRecords, a leader's moved start) and,
        under ``cleanup.policy=delete``, those past ``retention.ms`` or ``retention.bytes``.

        It runs on the event loop, which owns the logs, ``slice_size`` partitions at a
        time so a broker with 100,000 of them keeps answering requests. A partition whose
        files cannot be deleted goes offline, as a failed append takes it."""
        deleted = 0
        partitions = list(self._partitions.items())
        for start in range(0, len(partitions), slice_size):
            if start:
                await asyncio.sleep(0)
            for key, partition in partitions[start : start + slice_size]:
                if self._partitions.get(key) is not partition:
                    continue
                try:
                    deleted += partition.log.delete_old_segments()
                except OSError as exc:
                    self.take_offline(key, exc)
        return deleted

    # -- compaction (the log cleaner's host) -------------------------------------------

    def cleanable_logs(self) -> list[tuple[tuple[str, int], PartitionLog]]:
        """The compacted logs of the partitions this broker holds, leader or follower."""
        return [
            (key, partition.log)
            for key, partition in self._partitions.items()
            if partition.log.config.compact
        ]

    def may_clean(self, key: tuple[str, int], partition_log: PartitionLog) -> bool:
        """Whether the partition still has ``partition_log`` and its records are its own
        cluster's to compact. A mirror topic's are not until it is writable (the spec:
        "After failover, when the mirror topic becomes writable, log compaction continues
        normally in the destination cluster"): before that its log is the source's, offset
        for offset, and cleaning it on its own would make it differ."""
        partition = self._partitions.get(key)
        if partition is None or partition.log is not partition_log:
            return False
        if partition.is_leader:
            return partition.state.accepts_produce(key in self._stopped_mirror_partitions)
        return not partition.state.is_read_only

    def _maybe_change_isr(self, partition: Partition, new_isr: tuple[int, ...] | None) -> None:
        """Write one ISR change at a time per partition; the metadata refresh applies it.

        The followers an expansion adds hold the high watermark from the moment it is
        asked for until it is settled (``Partition.joining``): the write refreshes the
        metadata before it returns, so by then the state shows them in the ISR or the
        controller refused them."""
        key = (partition.topic, partition.index)
        if new_isr is None or self._alter_isr is None or key in self._isr_changes:
            return
        epochs = {r: p.broker_epoch for r, p in partition.followers.items() if r in new_isr}
        partition.joining = frozenset(new_isr) - set(partition.state.isr)
        change = asyncio.get_running_loop().create_task(
            self._alter_isr(partition.state, new_isr, epochs), name=f"alter ISR {key}"
        )
        self._isr_changes[key] = change
        change.add_done_callback(lambda _: self._isr_change_settled(key, partition))

    def _isr_change_settled(self, key: tuple[str, int], partition: Partition) -> None:
        self._isr_changes.pop(key, None)
        partition.joining = frozenset()
        if self._partitions.get(key) is partition and partition.maybe_increment_high_watermark():
            self._changed(key)

    # -- follower side ----------------------------------------------------------------

    def append_follower_records(
        self,
        topic: str,
        partition: int,
        batches: list[RawBatch],
        leader_high_watermark: int,
        leader_log_start_offset: int,
        *,
        crc_checked: bool = False,
    ) -> None:
        """A follower fetcher's data: append unchanged, follow the leader's high watermark.
        ``crc_checked``: the fetcher's plan already verified every batch's CRC."""
        target = self.partition(topic, partition)
        _restart_at_straddling_batch(target, batches)
        try:
            target.append_as_follower(
                batches, leader_high_watermark, leader_log_start_offset, crc_checked=crc_checked
            )
        except LogError as exc:
            raise KafkaError(ErrorCode(exc.error_code), str(exc)) from exc
        except OSError as exc:
            raise storage_error(exc) from exc

    def _read_all(
        self, params: FetchParams, partitions: Mapping[FetchKey, PartitionFetch]
    ) -> dict[FetchKey, FetchOutcome]:
        """KIP-74: limits are soft for the first batch of the first partition with data."""
        remaining = params.max_bytes
        min_one_message = True
        outcomes: dict[FetchKey, FetchOutcome] = {}
        for key, fetch in partitions.items():
            try:
                read = self.partition(key.topic, key.partition).read(
                    fetch,
                    replica_id=params.replica_id,
                    isolation_level=params.isolation_level,
                    max_bytes=min(fetch.partition_max_bytes, remaining),
                    min_one_message=min_one_message,
                )
            except KafkaError as exc:
                outcomes[key] = exc
                continue
            outcomes[key] = read
            if read.records:
                remaining = max(0, remaining - len(read.records))
                min_one_message = False
        return outcomes

    # -- offsets ----------------------------------------------------------------------

    def list_offset(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        *,
        isolation_level: int = 0,
        current_leader_epoch: int = -1,
        replica_id: int = -1,
    ) -> OffsetAndTimestamp:
        """ListOffsets for one partition, as Kafka's ``Partition.fetchOffsetForTimestamp``."""
        target = self.partition(topic, partition)
        target.check_leader_epoch(
            current_leader_epoch, require_leader=replica_id != DEBUGGING_REPLICA_ID
        )
        if replica_id >= 0 or replica_id == DEBUGGING_REPLICA_ID:
            last_fetchable = target.log_end_offset
        elif isolation_level == READ_COMMITTED:
            last_fetchable = target.last_stable_offset
        else:
            last_fetchable = target.high_watermark
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            start = target.log_start_offset
            epoch = target.log.epoch_cache.epoch_for_offset(start)
            return OffsetAndTimestamp(NO_TIMESTAMP, start, -1 if epoch is None else epoch)
        if timestamp == LATEST_TIMESTAMP:
            return OffsetAndTimestamp(NO_TIMESTAMP, last_fetchable, target.leader_epoch)
        if timestamp == MAX_TIMESTAMP:
            found = target.log.max_timestamp_offset()
        elif timestamp >= 0:
            found = target.log.offset_for_timestamp(timestamp)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported timestamp {timestamp}")
        if found is None or found.offset >= last_fetchable:
            return OffsetAndTimestamp(NO_TIMESTAMP, NO_OFFSET, -1)
        epoch = -1 if found.leader_epoch is None else found.leader_epoch
        return OffsetAndTimestamp(found.timestamp, found.offset, epoch)

    def last_offset_for_leader_epoch(
        self,
        topic: str,
        partition: int,
        leader_epoch: int,
        *,
        current_leader_epoch: int = -1,
        replica_id: int = -1,
    ) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch; followers and consumers need the leader."""
        target = self.partition(topic, partition)
        target.check_leader_epoch(
            current_leader_epoch, require_leader=replica_id != DEBUGGING_REPLICA_ID
        )
        return target.end_offset_for_epoch(leader_epoch)

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """Raise the log start offset to ``offset`` (-1: the high watermark); the low watermark."""
        target = self.partition(topic, partition)
        target.check_leader_epoch(-1, require_leader=True)
        if target.state.configs.get("cleanup.policy", "delete").strip() == "compact":
            raise KafkaError(
                ErrorCode.POLICY_VIOLATION,
                f"Records of partition {topic}-{partition} can not be deleted due to the "
                f"configured policy",
            )
        if offset == -1:
            offset = target.high_watermark
        if offset < 0 or offset > target.high_watermark:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"Cannot increment the log start offset to {offset} of partition "
                f"{topic}-{partition} since it is larger than the high watermark "
                f"{target.high_watermark}",
            )
        target.log.maybe_increment_log_start_offset(offset)
        return target.log_start_offset

    # -- mirroring hooks (used by mirrorsim.coordinator and mirrorsim.fetcher) ------------

    def append_mirror_batches(
        self, topic: str, partition: int, batches: list[RawBatch]
    ) -> AppendInfo:
        """Append a source cluster's batches unchanged (offsets, epochs, bytes, producers).

        The destination leader acts as the source's follower, so this is the follower
        append; compaction on the source leaves offset gaps, which are kept. The mirror
        fetcher verified every batch's CRC before handing it over (a corrupt batch fails
        the partition there), so the log does not hash the bytes again.
        """
        target = self.partition(topic, partition)
        _restart_at_straddling_batch(target, batches)
        try:
            info = target.log.append_as_follower(batches, allow_gaps=True, crc_checked=True)
        except LogError as exc:
            raise KafkaError(ErrorCode(exc.error_code), str(exc)) from exc
        except OSError as exc:
            raise storage_error(exc) from exc
        target.maybe_increment_high_watermark()
        return info

    def append_internal(self, topic: str, partition: int, batches: list[RawBatch]) -> AppendInfo:
        """Append as leader on behalf of the broker itself (control and state records)."""
        target = self.partition(topic, partition)
        target.check_leader_epoch(-1, require_leader=True)
        try:
            info = target.log.append_as_leader(
                batches, target.leader_epoch, now_ms=self._clock(), origin=AppendOrigin.COORDINATOR
            )
        except LogError as exc:
            raise KafkaError(ErrorCode(exc.error_code), str(exc)) from exc
        except OSError as exc:
            raise storage_error(exc) from exc
        target.maybe_increment_high_watermark()
        return info

    async def wait_for_isr(
        self, topic: str, partition: int, last_offset: int, timeout_ms: int
    ) -> None:
        """acks=all for an internal append: a write its author acts on must survive a
        leader change to any ISR member, so the author waits for the high watermark."""
        await self._acknowledged(self.partition(topic, partition), last_offset, timeout_ms)

    async def append_internal_replicated(
        self, topic: str, partition: int, batches: list[RawBatch], timeout_ms: int
    ) -> AppendInfo:
        """``append_internal``, then ``wait_for_isr``: for an author that acts on its
        write as soon as it is safe (mirror state, a mirror partition's PID reset)."""
        appended = self.append_internal(topic, partition, batches)
        await self.wait_for_isr(topic, partition, appended.last_offset, timeout_ms)
        return appended

    def truncate_to(self, topic: str, partition: int, offset: int) -> bool:
        """Cut the log at ``offset`` (a straddling batch goes whole); True if anything went."""
        target = self.partition(topic, partition)
        removed = target.log.truncate_to(offset)
        target.forget_follower_offsets_past_log_end()
        return removed

    def truncate_fully_and_start_at(self, topic: str, partition: int, offset: int) -> None:
        target = self.partition(topic, partition)
        target.log.truncate_fully_and_start_at(offset)
        target.forget_follower_offsets_past_log_end()


def _restart_at_straddling_batch(target: Partition, batches: list[RawBatch]) -> None:
    """Kafka's follower rule for a log start inside a batch (DeleteRecords, retention
    followed exactly): an empty log that fetched from the leader's log start receives the
    whole batch holding it, so the log restarts at that batch's base offset; the log start
    is raised again from the leader's log start offset afterwards. A log with records
    keeps refusing a batch below its end."""
    if not batches or target.log_end_offset != target.log_start_offset:
        return
    first = batches[0]
    if first.base_offset < target.log_end_offset <= first.last_offset:
        target.log.truncate_fully_and_start_at(first.base_offset)


def _satisfied(outcomes: Mapping[FetchKey, FetchOutcome], min_bytes: int) -> bool:
    accumulated = 0
    for outcome in outcomes.values():
        if isinstance(outcome, KafkaError) or outcome.diverging_epoch is not None:
            return True
        accumulated += len(outcome.records)
    return accumulated >= min_bytes


def _isr_outcome(target: Partition, last_offset: int) -> KafkaError | None:
    """What an acks=all append came to once its wait is over."""
    if not target.is_leader:
        return KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if not target.is_acknowledged(last_offset):
        return KafkaError(ErrorCode.REQUEST_TIMED_OUT)
    if target.under_min_isr:
        return KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    return None
