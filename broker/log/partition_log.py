"""One partition's log, Kafka's ``UnifiedLog``: segments, offsets, epochs and producers.

Theory of operation. The log is a list of segments ordered by base offset; only the
last (active) one is appended to. The log end offset (LEO) is the next offset to assign.
A leader append assigns offsets and stamps its leader epoch into each batch header (the
CRC does not cover either field, so the bytes stay valid); a follower append keeps the
leader's bytes exactly. The high watermark is owned by the replica manager and only
clamped here; the last stable offset additionally stops at the first ongoing
transaction.

Durability: ``flush`` fsyncs. The recovery point (persisted on roll and close) marks
what is known to be on disk; on open every segment from the one holding the recovery
point onwards is re-validated batch by batch and cut at the first torn or corrupt batch,
unless the log was closed cleanly. Producer state is rebuilt from the newest snapshot
plus a replay of the log tail. The leader epoch cache writes truncations lazily (before
the recovery point moves), so after a crash its entries from the recovery point on are
checked against the batch headers there.
"""

from __future__ import annotations

import bisect
import dataclasses
import shutil
import struct
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import crc32c

from mirrorsim.broker.log.checkpoint import (
    CheckpointFormatError,
    read_checkpoint,
    write_checkpoint,
)
from mirrorsim.broker.log.cleaner import (
    CleanerCheckpoint,
    CleaningPlan,
    commit_cleaning,
    compact_log,
    plan_cleaning,
)
from mirrorsim.broker.log.config import LogConfig
from mirrorsim.broker.log.epoch_cache import CHECKPOINT_NAME, LeaderEpochFileCache
from mirrorsim.broker.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    NonContiguousAppendError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
)
from mirrorsim.broker.log.file_handles import FileHandles
from mirrorsim.broker.log.partition_metadata import (
    InconsistentTopicIdError,
    read_partition_metadata,
    sync_partition_metadata,
    write_partition_metadata,
)
from mirrorsim.broker.log.producer_state import ProducerAppend, ProducerStateManager
from mirrorsim.broker.log.results import (
    AppendInfo,
    AppendOrigin,
    CompactionStats,
    ReadResult,
    TimestampOffset,
)
from mirrorsim.broker.log.segment import (
    OFFSET_WIDTH,
    AppendItem,
    BatchHeader,
    LogSegment,
    SegmentArgs,
)
from mirrorsim.broker.log.shutdown_sync import DeferredRenames
from mirrorsim.broker.log.txn_index import AbortedTxn, CompletedAbort
from mirrorsim.protocol.records import CorruptRecordError as CodecCorruptRecordError
from mirrorsim.protocol.records import (
    RawBatch,
    TransactionMarker,
    decode_control_batch,
    decode_records,
)
from mirrorsim.protocol.records.control import MirrorPidReset, UnknownControlRecord
from mirrorsim.protocol.records.raw_batch import ATTR_CONTROL, ATTR_TIMESTAMP_TYPE, CRC_START

RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
_PREFIX = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch
_MAX_TIMESTAMP_AT = 35
_ATTRIBUTES_AT = 21
_CRC_AT = 17
_TEMPORARY_SUFFIXES = (".tmp", ".cleaned", ".swap", ".deleted")


class PartitionLog:
    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        topic_id: uuid.UUID | None,
        clock: Callable[[], float],
        handles: FileHandles,
    ) -> None:
        self.dir = directory
        self.handles = handles
        self.config = config
        self.topic_id = topic_id
        self._clock = clock
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.high_watermark = 0
        self.recovery_point = 0
        self.epoch_cache = LeaderEpochFileCache(directory / CHECKPOINT_NAME)
        self.producer_state = ProducerStateManager(directory)
        self.cleaner_checkpoint = CleanerCheckpoint(directory)
        self._unflushed_messages = 0
        self._last_flush_ms = 0
        self._closed = False
        self._metadata_unsynced = False
        """``partition.metadata`` was written without fsync; the next flush syncs it."""
        self.on_change: Callable[[], None] = _unobserved
        """Called after every change a reader of the log can see (its end, high watermark,
        log start or last epoch): the replica manager wakes the fetches parked on it and
        the fetch sessions that had settled it. The log only calls; it knows no readers."""

    # -- opening and recovery ------------------------------------------------------------

    @classmethod
    def open(
        cls,
        dir: Path,
        config: LogConfig,
        *,
        topic_id: uuid.UUID | None = None,
        clock: Callable[[], float] = time.time,
        handles: FileHandles | None = None,
    ) -> PartitionLog:
        """Open (or create) the log in ``dir``; its segment files take their descriptors
        from ``handles``, the broker's budget (a log of its own when not given)."""
        directory = Path(dir)
        directory.mkdir(parents=True, exist_ok=True)
        stored_id = read_partition_metadata(directory)
        if topic_id is not None and stored_id is not None and stored_id != topic_id:
            raise InconsistentTopicIdError(
                f"{directory} belongs to topic id {stored_id}, not {topic_id}"
            )
        written = False
        if topic_id is not None and stored_id is None:
            write_partition_metadata(directory, topic_id)
            written = True
        log = cls(
            directory,
            config,
            topic_id or stored_id,
            clock,
            handles or FileHandles.for_process_limit(),
        )
        log._metadata_unsynced = written
        log._load()
        return log

    def _load(self) -> None:
        for leftover in self.dir.iterdir():
            if leftover.name.endswith(_TEMPORARY_SUFFIXES):
                leftover.unlink()
        clean_marker = self.dir / CLEAN_SHUTDOWN_FILE
        clean = clean_marker.exists()
        clean_marker.unlink(missing_ok=True)
        self.recovery_point = _read_single(self.dir / RECOVERY_POINT_FILE) or 0
        log_start = _read_single(self.dir / LOG_START_FILE) or 0
        saved_hw = _read_single(self.dir / HIGH_WATERMARK_FILE) or 0
        self._load_segments(clean)
        if self.segments and self.active_segment.next_offset < log_start:
            for segment in self.segments:
                segment.delete()
            self.segments, self._bases = [], []
        if not self.segments:
            self._add_segment(LogSegment.create(self.dir, log_start, **self._segment_args()))
        self.log_end_offset = self.active_segment.next_offset
        self.log_start_offset = min(
            max(log_start, self.segments[0].base_offset), self.log_end_offset
        )
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.high_watermark = min(max(saved_hw, self.log_start_offset), self.log_end_offset)
        self._load_epoch_cache(clean)
        self._rebuild_producer_state(reindex_aborts_from=None if clean else self.recovery_point)
        self._last_flush_ms = self._now_ms()

    def _load_epoch_cache(self, clean: bool) -> None:
        """The checkpoint's entries where they are known durable, the batches' elsewhere.

        After a clean close the checkpoint was flushed and is whole. After a crash only
        its entries below the recovery point are (see epoch_cache.py), so the entries
        from there on are re-learned from the batches recovery just re-validated; a torn
        or missing checkpoint is re-learned from the log start. An epoch with no batch
        (starting at the log end, or covering an empty log) is dropped either way, and
        after a crash so is one past the recovery point whose batches all fell below the
        log start: nothing is left to re-learn it from.
        """
        path = self.dir / CHECKPOINT_NAME
        cache = LeaderEpochFileCache.load_if_intact(path)
        if cache is None:
            cache = LeaderEpochFileCache(path)
            cache.relearn_from(0, self._epoch_starts_from(self.segments[0].base_offset))
        elif not clean:
            cache.relearn_from(self.recovery_point, self._epoch_starts_from(self.recovery_point))
        cache.truncate_from_start(self.log_start_offset)
        cache.truncate_from_end(self.log_end_offset)
        self.epoch_cache = cache

    def _load_segments(self, clean: bool) -> None:
        bases = sorted(
            int(p.name[:OFFSET_WIDTH])
            for p in self.dir.glob("*.log")
            if len(p.name) == OFFSET_WIDTH + 4 and p.name[:OFFSET_WIDTH].isdigit()
        )
        corrupt_from: int | None = None
        for i, base in enumerate(bases):
            if corrupt_from is not None:
                LogSegment(self.dir, base, **self._segment_args()).delete()
                continue
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            needs_recovery = not clean and (next_base is None or next_base > self.recovery_point)
            if needs_recovery:
                segment = LogSegment(self.dir, base, **self._segment_args())
                if segment.recover(self.config.max_message_bytes + self.config.segment_bytes):
                    corrupt_from = base
            else:
                segment = LogSegment.load(self.dir, base, **self._segment_args())
            self._add_segment(segment)

    def _segment_args(self) -> SegmentArgs:
        return {
            "index_interval_bytes": self.config.index_interval_bytes,
            "max_index_entries": self.config.segment_index_bytes // 8,
            "handles": self.handles,
        }

    def _add_segment(self, segment: LogSegment) -> None:
        self.segments.append(segment)
        self._bases.append(segment.base_offset)

    def _rebuild_producer_state(self, reindex_aborts_from: int | None = None) -> None:
        """Newest snapshot at or below the LEO, then replay the batches after it.

        After a crash, ``reindex_aborts_from`` is the recovery point: ``.txnindex``
        entries appended after the last flush died with the process, so the aborts the
        replay meets from there on are indexed again (Kafka's recovery does the same).
        Snapshots are only taken at a roll or a close, both at the recovery point, so
        the replay always starts at or below it. READ_COMMITTED fetches and a mirror
        failover's stop cut rely on the index being whole.
        """
        state = self.producer_state
        state.delete_snapshots_above(self.log_end_offset)
        if not state.load_latest_snapshot(self.log_end_offset):
            state.map_end_offset = self.log_start_offset
        start = max(state.map_end_offset, self.log_start_offset)
        staged = state.begin(validate=False)
        if reindex_aborts_from is None:
            for batch in self._batches_from(start):
                _stage(staged, batch)
        else:
            self._replay_reindexing_aborts(staged, start, reindex_aborts_from)
        state.commit(staged, self.log_end_offset)

    def _replay_reindexing_aborts(self, staged: ProducerAppend, start: int, since: int) -> None:
        """Replay from ``start``; aborts ending at or after ``since`` that the index lacks
        (it keeps what was flushed) are appended to the segment holding their marker."""
        indexed = {
            (e.producer_id, e.last_offset)
            for segment in self.segments[self._segment_index(since) :]
            for e in segment.txn_index.entries
        }
        for batch in self._batches_from(start):
            completed = len(staged.completed)
            _stage(staged, batch)
            for txn in staged.completed[completed:]:
                if (
                    txn.is_aborted
                    and txn.last_offset >= since
                    and (txn.producer_id, txn.last_offset) not in indexed
                ):
                    self.segments[self._segment_index(txn.last_offset)].txn_index.append(
                        CompletedAbort(
                            txn.producer_id,
                            txn.first_offset,
                            txn.last_offset,
                            staged.last_stable_offset_after(txn),
                        )
                    )

    def _epoch_starts_from(self, offset: int) -> Iterator[tuple[int, int]]:
        """(partition leader epoch, base offset) of each batch from the one holding
        ``offset`` to the log end."""
        for segment in self.segments[self._segment_index(offset) :]:
            first = segment.translate_offset(offset)
            if first is None:
                continue
            for header in segment.headers(first.position):
                yield header.partition_leader_epoch, header.base_offset

    def _batches_from(self, offset: int) -> Iterator[RawBatch]:
        for segment in self.segments[self._segment_index(offset) :]:
            first = segment.translate_offset(offset)
            if first is None:
                continue
            for header in segment.headers(first.position):
                if header.producer_id >= 0 or header.attributes & 0x20:
                    yield RawBatch.from_bytes(segment.read_at(header.position, header.size))

    # -- properties ----------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def latest_epoch(self) -> int | None:
        return self.epoch_cache.latest_epoch

    @property
    def last_stable_offset(self) -> int:
        first_unstable = self.producer_state.first_unstable_offset
        if first_unstable is not None and first_unstable < self.high_watermark:
            return max(first_unstable, self.log_start_offset)
        return self.high_watermark

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        for segment in self.segments:
            segment.index_interval_bytes = config.index_interval_bytes

    def update_high_watermark(self, offset: int) -> int:
        moved = min(max(offset, self.log_start_offset), self.log_end_offset)
        if moved != self.high_watermark:
            self.high_watermark = moved
            self.on_change()
        return self.high_watermark

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- appending -----------------------------------------------------------------------

    def append_as_leader(
        self,
        batches: Sequence[RawBatch],
        leader_epoch: int,
        *,
        now_ms: int | None = None,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> AppendInfo:
        """Assign offsets from the LEO, stamp ``leader_epoch``, check producer state, append.

        Raises a typed ``LogError`` and leaves the log untouched when any batch is refused.
        """
        now = self._now_ms() if now_ms is None else now_ms
        log_append_time = self.config.log_append_time
        staged = self.producer_state.begin(validate=True)
        items: list[AppendItem] = []
        offset = self.log_end_offset
        for batch in batches:
            self._validate_leader_batch(batch, origin)
            if origin is AppendOrigin.CLIENT:
                staged.check_duplicate(batch)
            last_offset = offset + batch.last_offset_delta
            if batch.has_producer_id or batch.is_control:
                _stage(staged, dataclasses.replace(batch, base_offset=offset))
            if log_append_time:
                pieces: Sequence[bytes | memoryview] = (
                    _with_log_append_time(batch, offset, leader_epoch, now),
                )
            else:
                pieces = (
                    _PREFIX.pack(offset, batch.batch_length, leader_epoch),
                    memoryview(batch.data)[_PREFIX.size :],
                )
            items.append(
                AppendItem(
                    pieces,
                    len(batch.data),
                    offset,
                    last_offset,
                    now if log_append_time else batch.max_timestamp,
                    batch.records_count,
                )
            )
            offset = last_offset + 1
        if not items:
            return self._empty_append_info()
        if leader_epoch >= 0:
            self.epoch_cache.assign(leader_epoch, self.log_end_offset)
        info = self._append(items, staged, log_append_time_ms=now if log_append_time else -1)
        self._maybe_flush(now)
        return info

    def _validate_leader_batch(self, batch: RawBatch, origin: AppendOrigin) -> None:
        if batch.size > self.config.max_message_bytes:
            raise RecordTooLargeError(
                f"batch of {batch.size} bytes exceeds max.message.bytes "
                f"{self.config.max_message_bytes}"
            )
        self._check_fits_segment(batch)
        if not batch.is_valid():
            raise CorruptRecordError(f"batch with base offset {batch.base_offset} fails its CRC")
        if batch.is_control and origin is AppendOrigin.CLIENT:
            raise InvalidRecordError("clients may not write control batches")
        if self.config.compact and not batch.is_control:
            try:
                records = decode_records(batch)
            except CodecCorruptRecordError as exc:
                raise CorruptRecordError(str(exc)) from exc
            keyless = [i for i, record in enumerate(records) if record.key is None]
            if keyless:
                raise self._keyless_records_error(keyless)

    def _keyless_records_error(self, indexes: list[int]) -> InvalidRecordError:
        """Kafka's per-record errors (KIP-467) for keyless records on a compacted topic."""
        why = (
            f"Compacted topic cannot accept message without key in topic partition {self.dir.name}."
        )
        errors = tuple((index, why) for index in indexes)
        shown = ", ".join(f"{index}: {why}" for index, _ in errors[:3])
        return InvalidRecordError(
            f"One or more records have been rejected due to {len(errors)} record errors in "
            f"total, and only showing the first three errors at most: [{shown}]",
            errors,
        )

    def _check_fits_segment(self, batch: RawBatch) -> None:
        if batch.size > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"batch of {batch.size} bytes exceeds segment.bytes {self.config.segment_bytes}"
            )

    def append_as_follower(
        self, batches: Sequence[RawBatch], *, allow_gaps: bool = False, crc_checked: bool = False
    ) -> AppendInfo:
        """Append the leader's batches unchanged (offsets, epochs and bytes).

        A batch below the LEO would rewrite history and is refused; a batch above it
        leaves a gap, which only compacted or retention-trimmed sources produce, so it is
        refused unless ``allow_gaps``. ``crc_checked`` says the caller already verified
        every batch's CRC (the mirror fetcher does, to fail the partition on corruption),
        so the bytes are not hashed twice.

        This is the replication and mirroring hot path: it looks at each batch's header
        once, stages producer state only for batches that carry a producer id or are
        control batches (as recovery does), and touches the epoch cache only where the
        epoch changes.
        """
        staged = self.producer_state.begin(validate=False)
        items: list[AppendItem] = []
        expected = self.log_end_offset
        segment_bytes = self.config.segment_bytes
        epoch_starts: list[tuple[int, int]] = []
        last_epoch = -1
        for batch in batches:
            base_offset = batch.base_offset
            if base_offset != expected and (base_offset < expected or not allow_gaps):
                raise NonContiguousAppendError(
                    f"batch at offset {base_offset} does not continue the log at {expected}"
                )
            size = len(batch.data)
            if size > segment_bytes:
                self._check_fits_segment(batch)
            if not crc_checked and not batch.is_valid():
                raise CorruptRecordError(f"batch at offset {base_offset} fails its CRC")
            if batch.producer_id >= 0 or batch.attributes & ATTR_CONTROL:
                _stage(staged, batch)
            last_offset = base_offset + batch.last_offset_delta
            items.append(
                AppendItem(
                    (batch.data,),
                    size,
                    base_offset,
                    last_offset,
                    batch.max_timestamp,
                    batch.records_count,
                )
            )
            epoch = batch.partition_leader_epoch
            if epoch >= 0 and epoch != last_epoch:
                epoch_starts.append((epoch, base_offset))
                last_epoch = epoch
            expected = last_offset + 1
        if not items:
            return self._empty_append_info()
        for epoch, start_offset in epoch_starts:
            self.epoch_cache.assign(epoch, start_offset)
        info = self._append(items, staged, log_append_time_ms=-1)
        self._maybe_flush(self._now_ms())
        return info

    def _append(
        self,
        items: list[AppendItem],
        staged: ProducerAppend,
        *,
        log_append_time_ms: int,
    ) -> AppendInfo:
        first = items[0].base_offset
        max_timestamp, offset_of_max = -1, first
        records = 0
        size = 0
        for item in items:
            if item.max_timestamp > max_timestamp:
                max_timestamp, offset_of_max = item.max_timestamp, item.last_offset
            records += item.records_count
            size += item.size
        if self._fits_active_segment(items, size, max_timestamp):
            self.active_segment.append(items)
        else:
            self._append_rolling(items)
        last_offset = items[-1].last_offset
        self.log_end_offset = last_offset + 1
        self.producer_state.commit(staged, self.log_end_offset)
        for txn in staged.completed:
            if txn.is_aborted:
                segment = self.segments[self._segment_index(txn.last_offset)]
                lso = self.producer_state.last_stable_offset_after(txn)
                segment.txn_index.append(
                    CompletedAbort(txn.producer_id, txn.first_offset, txn.last_offset, lso)
                )
        self._unflushed_messages += records
        self.on_change()
        return AppendInfo(
            first_offset=first,
            last_offset=last_offset,
            max_timestamp=max_timestamp,
            offset_of_max_timestamp=offset_of_max,
            log_append_time_ms=log_append_time_ms,
            log_start_offset=self.log_start_offset,
            batch_count=len(items),
            record_count=records,
            size_bytes=size,
        )

    def _fits_active_segment(self, items: list[AppendItem], size: int, max_timestamp: int) -> bool:
        """Whether no item of the append can roll the active segment, decided once.

        Every roll condition only grows along the append (bytes, offsets, index entries,
        the newest timestamp), so if the whole append passes them, each batch does.
        """
        segment = self.active_segment
        config = self.config
        rolling = segment.rolling_timestamp
        if rolling is None:
            rolling = items[0].max_timestamp
        return (
            segment.can_hold(items[-1].last_offset)
            and segment.size + size <= config.segment_bytes
            and max_timestamp - rolling <= config.segment_ms - config.segment_jitter_ms
            and len(segment.offset_index) + len(items) < segment.offset_index.max_entries
            and len(segment.time_index) + len(items) < segment.time_index.max_entries
        )

    def _append_rolling(self, items: list[AppendItem]) -> None:
        """Batch by batch, so that each roll decision sees the batches before it in the
        segment (rare: about once per segment)."""
        for item in items:
            if self._should_roll(item):
                self._roll(item.base_offset)
            self.active_segment.append([item])

    def _empty_append_info(self) -> AppendInfo:
        return AppendInfo(
            self.log_end_offset, self.log_end_offset - 1, -1, -1, -1, self.log_start_offset, 0, 0, 0
        )

    def _should_roll(self, item: AppendItem) -> bool:
        segment = self.active_segment
        if not segment.can_hold(item.last_offset):
            return True
        if segment.size == 0:
            return False
        waited = (
            item.max_timestamp - segment.rolling_timestamp
            if segment.rolling_timestamp is not None
            else 0
        )
        return (
            segment.size + item.size > self.config.segment_bytes
            or waited > self.config.segment_ms - self.config.segment_jitter_ms
            or segment.offset_index.is_full
            or segment.time_index.is_full
        )

    def roll(self) -> LogSegment:
        """Start a new active segment at the LEO (an empty active segment is kept)."""
        if self.active_segment.size:
            self._roll(self.log_end_offset)
        return self.active_segment

    def _roll(self, base_offset: int) -> None:
        old = self.active_segment
        if old.size == 0:
            old.delete()
            self.segments.pop()
            self._bases.pop()
        else:
            old.on_become_inactive()
            old.flush()
            self.epoch_cache.flush()
            self.producer_state.take_snapshot()
        self._add_segment(LogSegment.create(self.dir, base_offset, **self._segment_args()))
        if old.size:
            self.recovery_point = max(self.recovery_point, old.next_offset)
            self._write_offset_checkpoints()

    def _maybe_flush(self, now_ms: int) -> None:
        if (
            self._unflushed_messages >= self.config.flush_messages
            or now_ms - self._last_flush_ms >= self.config.flush_ms
        ):
            self.flush()

    def flush(self, deferred: DeferredRenames | None = None) -> None:
        """fsync everything up to the LEO (and pending epoch cache truncations first).

        With ``deferred`` (a clean shutdown) nothing is fsynced here: the files are
        written and ``ShutdownSync`` syncs them all at once before any rename it holds."""
        if self._metadata_unsynced and deferred is None:
            sync_partition_metadata(self.dir)
        self._metadata_unsynced = False
        self.epoch_cache.flush(deferred)
        for segment in self.segments[self._segment_index(self.recovery_point) :]:
            if deferred is None:
                segment.flush()
            else:
                segment.flush_indexes(fsync=False)
        self.recovery_point = self.log_end_offset
        self._unflushed_messages = 0
        self._last_flush_ms = self._now_ms()

    # -- reading -------------------------------------------------------------------------

    def _segment_index(self, offset: int) -> int:
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        if start_offset < self.log_start_offset or start_offset > self.log_end_offset:
            raise OffsetOutOfRangeError(start_offset, self.log_start_offset, self.log_end_offset)
        records, first, next_offset = b"", start_offset, start_offset
        if start_offset < self.log_end_offset and (max_offset is None or start_offset < max_offset):
            for segment in self.segments[self._segment_index(start_offset) :]:
                found = segment.read(
                    start_offset, max_bytes, max_offset=max_offset, min_one_batch=min_one_batch
                )
                if found is not None:
                    records, first, next_offset = found
                    break
                if max_offset is not None and segment.next_offset >= max_offset:
                    break
        return ReadResult(
            records,
            first,
            next_offset,
            self.high_watermark,
            self.last_stable_offset,
            self.log_start_offset,
            self.log_end_offset,
        )

    def batches(self, start_offset: int | None = None) -> Iterator[RawBatch]:
        """Every batch from ``start_offset`` (default: the log start) to the LEO."""
        offset = self.log_start_offset if start_offset is None else start_offset
        for segment in self.segments[self._segment_index(offset) :]:
            first = segment.translate_offset(offset)
            if first is not None:
                yield from segment.batches(first.position)

    def offset_for_timestamp(self, ts_ms: int) -> TimestampOffset | None:
        """The first record at or after ``ts_ms`` (ListOffsets by time)."""
        for segment in self.segments:
            if segment.max_timestamp < ts_ms:
                continue
            start = max(segment.time_index.lookup_before(ts_ms), self.log_start_offset)
            first = segment.translate_offset(start)
            if first is None:
                continue
            for header in segment.headers(first.position):
                if header.max_timestamp < ts_ms:
                    continue
                batch = RawBatch.from_bytes(segment.read_at(header.position, header.size))
                for record in decode_records(batch):
                    if record.timestamp >= ts_ms and record.offset >= self.log_start_offset:
                        return TimestampOffset(
                            record.timestamp, record.offset, _epoch_or_none(header)
                        )
        return None

    def max_timestamp_offset(self) -> TimestampOffset | None:
        """The record with the largest timestamp (ListOffsets MAX_TIMESTAMP, -3)."""
        best: LogSegment | None = None
        for segment in self.segments:
            if segment.size and (best is None or segment.max_timestamp > best.max_timestamp):
                best = segment
        if best is None:
            return None
        header = best.translate_offset(best.offset_of_max_timestamp)
        if header is None:
            return None
        batch = RawBatch.from_bytes(best.read_at(header.position, header.size))
        for record in decode_records(batch):
            if record.timestamp == best.max_timestamp:
                return TimestampOffset(record.timestamp, record.offset, _epoch_or_none(header))
        return TimestampOffset(best.max_timestamp, header.last_offset, _epoch_or_none(header))

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.epoch_cache.end_offset_for(epoch, self.log_end_offset)

    def collect_aborted_transactions(
        self, start_offset: int, upper_offset: int
    ) -> list[AbortedTxn]:
        """The aborted transactions a READ_COMMITTED fetch of [start_offset, upper_offset)
        reports, as Kafka's ``collectAbortedTransactions``.

        Each abort is indexed in the segment of its ABORT marker, so a transaction that
        spans a segment roll is found in a segment after the fetched range: the search
        reads the indexes from the segment holding ``start_offset`` onwards until one
        says no transaction still open at ``upper_offset`` can follow (``search``), or
        the log ends. Stopping at the first segment past the range would hand out the
        aborted records of a transaction whose marker is in a later segment.
        """
        aborted: list[AbortedTxn] = []
        for segment in self.segments[self._segment_index(start_offset) :]:
            found = segment.txn_index.search(start_offset, upper_offset)
            aborted.extend(AbortedTxn(e.producer_id, e.first_offset) for e in found.aborted)
            if found.complete:
                break
        return aborted

    def aborted_transactions_ending_at_or_after(self, offset: int) -> list[CompletedAbort]:
        """The ``.txnindex`` entries whose ABORT marker is at or after ``offset``.

        An entry lives in the segment holding its marker, so only the segments from the
        one holding ``offset`` are looked at; their indexes are in memory, so no batch
        is read. A mirror failover lowers its cut below a straddling abort with these.
        """
        return [
            entry
            for segment in self.segments[self._segment_index(offset) :]
            for entry in segment.txn_index.entries
            if entry.last_offset >= offset
        ]

    # -- truncation and log start --------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Remove everything at and after ``offset`` (a follower diverged from its leader).

        A batch that straddles ``offset`` is removed whole; if that would take the log
        below its log start, the log restarts empty at ``offset``. Returns whether anything
        was removed.

        A cut at the log end still forgets an epoch opened there without records (a leader
        assigns its epoch at its log end): a mirror destination's own epoch must not be
        the last fetched epoch it sends to a source that never had it.
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self.log_end_offset:
            if offset == self.log_end_offset:
                self.epoch_cache.truncate_from_end(offset)
                self.on_change()
            return False
        if offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while len(self.segments) > 1 and self.active_segment.base_offset >= offset:
            self.segments.pop().delete()
            self._bases.pop()
        segment = self.active_segment
        straddling = segment.translate_offset(offset)
        new_end = offset if straddling is None else min(offset, straddling.base_offset)
        if new_end < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        segment.truncate_to(offset)
        self.log_end_offset = max(new_end, segment.base_offset)
        self.cleaner_checkpoint.truncate_to(self.log_end_offset)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.epoch_cache.truncate_from_end(self.log_end_offset)
        self._rebuild_producer_state()
        self._write_offset_checkpoints()
        self.on_change()
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop the whole log and continue empty at ``offset`` (e.g. the leader's log start)."""
        for segment in self.segments:
            segment.delete()
        self.segments, self._bases = [], []
        self._add_segment(LogSegment.create(self.dir, offset, **self._segment_args()))
        self.log_start_offset = self.log_end_offset = self.high_watermark = offset
        self.recovery_point = offset
        self.cleaner_checkpoint.truncate_to(offset)
        self.epoch_cache.clear()
        self.producer_state.truncate_fully_and_start_at(offset)
        self._write_offset_checkpoints()
        self.on_change()

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Move the log start forward (DeleteRecords, or a leader's log start on a follower).

        Segments wholly below it go at the next retention pass, as in Kafka.
        """
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self.high_watermark)
        if offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        self.epoch_cache.truncate_from_start(offset)
        self.producer_state.delete_snapshots_below(offset)
        self._write_offset_checkpoints()
        self.on_change()
        return True

    # -- retention -----------------------------------------------------------------------

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Delete segments below the log start, and by retention.ms / retention.bytes when
        cleanup.policy includes delete. Only data below the high watermark is deleted."""
        now = self._now_ms() if now_ms is None else now_ms
        deleted = self._delete_segments(
            lambda segment, next_base: next_base is not None and next_base <= self.log_start_offset
        )
        if not self.config.delete:
            return deleted
        if self.config.retention_ms >= 0:
            deleted += self._delete_segments(
                lambda segment, _: segment.largest_timestamp() < now - self.config.retention_ms
            )
        if self.config.retention_bytes >= 0:
            excess = self.size_in_bytes - self.config.retention_bytes

            def over_size(segment: LogSegment, _: int | None) -> bool:
                nonlocal excess
                if excess - segment.size < 0:
                    return False
                excess -= segment.size
                return True

            deleted += self._delete_segments(over_size)
        return deleted

    def _delete_segments(self, predicate: Callable[[LogSegment, int | None], bool]) -> int:
        """Delete the oldest segments while ``predicate`` holds; a segment compaction left
        empty always qualifies, so it never blocks retention."""
        doomed: list[LogSegment] = []
        for i, segment in enumerate(self.segments):
            next_base = self._bases[i + 1] if i + 1 < len(self.segments) else None
            upper = next_base if next_base is not None else self.log_end_offset
            if segment is self.active_segment and segment.size == 0:
                break
            emptied = segment.size == 0
            if upper > self.high_watermark or not (emptied or predicate(segment, next_base)):
                break
            doomed.append(segment)
        if not doomed:
            return 0
        if doomed[-1] is self.active_segment:
            self._roll(self.log_end_offset)
        for segment in doomed:
            segment.delete()
        del self.segments[: len(doomed)]
        del self._bases[: len(doomed)]
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        self.epoch_cache.truncate_from_start(self.log_start_offset)
        self.producer_state.delete_snapshots_below(self.log_start_offset)
        self._write_offset_checkpoints()
        self.on_change()
        return len(doomed)

    # -- compaction ----------------------------------------------------------------------

    def compact(self, now_ms: int | None = None) -> CompactionStats:
        """Compact the cleanable segments (see cleaner.py for Kafka's rules)."""
        return compact_log(self, self._now_ms() if now_ms is None else now_ms)

    def plan_cleaning(self, now_ms: int | None = None) -> CleaningPlan | None:
        """The compaction due now, for ``clean_segments`` on a worker thread; None when
        none is due."""
        return plan_cleaning(self, self._now_ms() if now_ms is None else now_ms)

    def commit_cleaning(
        self, plan: CleaningPlan, cleaned: list[LogSegment]
    ) -> CompactionStats | None:
        """Swap in what ``clean_segments`` wrote; None if the log changed meanwhile."""
        return commit_cleaning(self, plan, cleaned)

    def replace_segment(self, old: LogSegment, cleaned: LogSegment) -> None:
        """Swap a cleaned copy (same base offset and offsets) in for ``old``."""
        position = self.segments.index(old)
        self.segments[position] = old.swap_in(cleaned)

    def segment_args(self) -> SegmentArgs:
        return self._segment_args()

    # -- lifecycle -----------------------------------------------------------------------

    def _write_offset_checkpoints(self, deferred: DeferredRenames | None = None) -> None:
        _write_single(self.dir / RECOVERY_POINT_FILE, self.recovery_point, deferred)
        _write_single(self.dir / LOG_START_FILE, self.log_start_offset, deferred)
        _write_single(self.dir / HIGH_WATERMARK_FILE, self.high_watermark, deferred)

    def close(self) -> None:
        if self._closed:
            return
        self.close_deferred(None)
        self.mark_clean_shutdown()

    def close_deferred(self, deferred: DeferredRenames | None) -> None:
        """Write everything a clean close makes durable and close the files, but leave
        the marker: with ``deferred`` the state is durable only once ``ShutdownSync``
        commits, and only then may ``mark_clean_shutdown`` say so."""
        self.flush(deferred)
        self.producer_state.take_snapshot(deferred)
        self._write_offset_checkpoints(deferred)
        for segment in self.segments:
            segment.close()
        self._closed = True

    def mark_clean_shutdown(self) -> None:
        (self.dir / CLEAN_SHUTDOWN_FILE).touch()

    def delete(self) -> None:
        for segment in self.segments:
            segment.close()
        self._closed = True
        shutil.rmtree(self.dir, ignore_errors=True)


def _unobserved() -> None:
    """``on_change`` of a log no replica manager watches (tools, tests, recovery)."""


def _stage(staged: ProducerAppend, batch: RawBatch) -> None:
    if not batch.is_control:
        staged.append(batch)
        return
    control = decode_control_batch(batch)
    if isinstance(control, TransactionMarker):
        staged.append(batch, control.kind, control.coordinator_epoch)
    elif isinstance(control, MirrorPidReset):
        staged.append(batch, 7)
    elif isinstance(control, UnknownControlRecord):
        staged.append(batch, control.type_id)


def _with_log_append_time(batch: RawBatch, offset: int, epoch: int, now_ms: int) -> bytes:
    """Rewrite the batch for LogAppendTime: timestamp type bit, max timestamp, new CRC."""
    buf = bytearray(batch.data)
    _PREFIX.pack_into(buf, 0, offset, batch.batch_length, epoch)
    struct.pack_into(">h", buf, _ATTRIBUTES_AT, batch.attributes | ATTR_TIMESTAMP_TYPE)
    struct.pack_into(">q", buf, _MAX_TIMESTAMP_AT, now_ms)
    struct.pack_into(">I", buf, _CRC_AT, crc32c.crc32c(memoryview(buf)[CRC_START:]))
    return bytes(buf)


def _epoch_or_none(header: BatchHeader) -> int | None:
    return header.partition_leader_epoch if header.partition_leader_epoch >= 0 else None


def _read_single(path: Path) -> int | None:
    try:
        entries = read_checkpoint(path, 1)
    except CheckpointFormatError:
        return None
    return entries[0][0] if entries else None


def _write_single(path: Path, value: int, deferred: DeferredRenames | None = None) -> None:
    write_checkpoint(path, [(value,)], deferred=deferred)
