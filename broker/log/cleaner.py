"""Log compaction (cleanup.policy=compact), Kafka's ``LogCleaner`` rules for one log.

What is cleanable: whole segments below the first uncleanable offset, which is the
smallest of the active segment's base, the last stable offset (never clean past an open
transaction or the high watermark) and the first segment younger than
``min.compaction.lag.ms``. Cleaning runs only when the dirty share of that range (bytes
past the cleaner checkpoint) reaches ``min.cleanable.dirty.ratio``, or when a dirty
segment's first batch is older than ``max.compaction.lag.ms``.

What is kept, record by record:
- only the latest record of each key (an offset map built over the cleanable range);
  records without key and records of aborted transactions are dropped;
- a tombstone stays until its batch's delete horizon (KIP-534: set to now +
  ``delete.retention.ms`` by the first cleaning that keeps it, stored in the batch's
  base timestamp with attribute bit 6) has passed;
- a COMMIT/ABORT marker stays while its transaction still has records in the log, and
  after that until its own delete horizon has passed;
- a producer's last batch is kept as an empty batch when all its records go, so
  producer state (sequence numbers) survives compaction.

Offsets never change: the cleaned segment has the same base offset and every retained
record its original offset, leaving gaps. A batch whose records are all retained is
copied byte for byte; others are rebuilt with the same header fields.
"""

from __future__ import annotations

import functools
import struct
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import crc32c

from mirrorsim.broker.log.checkpoint import read_checkpoint, write_checkpoint
from mirrorsim.broker.log.results import CompactionStats
from mirrorsim.broker.log.segment import AppendItem, LogSegment
from mirrorsim.protocol.records import (
    RawBatch,
    Record,
    TransactionMarker,
    build_batch,
    decode_control_batch,
    decode_records,
)
from mirrorsim.protocol.records.raw_batch import (
    ATTR_DELETE_HORIZON,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
)

if TYPE_CHECKING:
    from mirrorsim.broker.log.partition_log import PartitionLog

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
CLEANED_SUFFIX = ".cleaned"
_ATTRIBUTES_AT = 21
_LAST_OFFSET_DELTA_AT = 23
_CRC_AT = 17


class CleanerCheckpoint:
    """How far a log is clean (``cleaner-offset-checkpoint``): read from its file once,
    then held, so that a cleaner pass over a log reads no file to learn it."""

    def __init__(self, directory: Path) -> None:
        self._path = directory / CLEANER_CHECKPOINT
        self._offset: int | None = None

    @property
    def offset(self) -> int:
        if self._offset is None:
            self._offset = (read_checkpoint(self._path, 1) or [(0,)])[0][0]
        return self._offset

    def write(self, offset: int) -> None:
        write_checkpoint(self._path, [(offset,)])
        self._offset = offset

    def truncate_to(self, offset: int) -> None:
        """A truncated log must be cleaned again from where the truncation left it."""
        if self.offset > offset:
            self.write(offset)


@dataclass(slots=True)
class _CleaningState:
    now_ms: int
    delete_retention_ms: int
    offset_map: dict[bytes, int]
    aborted: dict[int, list[tuple[int, int]]]
    last_offset_of_producer: dict[int, int]
    txn_has_data: dict[int, bool] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)

    def count(self, name: str, amount: int = 1) -> None:
        self.stats[name] = self.stats.get(name, 0) + amount

    def is_aborted(self, batch: RawBatch) -> bool:
        return batch.is_transactional and any(
            first <= batch.base_offset <= last
            for first, last in self.aborted.get(batch.producer_id, [])
        )

    def horizon_passed(self, batch: RawBatch) -> bool:
        return batch.has_delete_horizon and self.now_ms >= batch.base_timestamp

    @property
    def new_horizon(self) -> int:
        return self.now_ms + self.delete_retention_ms


@dataclass(slots=True)
class CleaningPlan:
    """One cleaning of a log, taken on the event loop that owns it, so that the work can
    run on a worker thread.

    The planned segments lie below the first uncleanable offset, and appends only ever go
    to the active segment, so nothing writes to them while they stay in the log: a
    worker may read them. Only a truncation, a retention pass or a close can take them
    away, and ``is_current`` finds that before anything is swapped in.
    """

    segments: tuple[LogSegment, ...]
    sizes: tuple[int, ...]
    first_uncleaned: int
    checkpoint: CleanerCheckpoint
    state: _CleaningState
    new_segment: Callable[[int], LogSegment]
    """A ``.cleaned`` segment for a base offset, in the log's directory."""
    abort: threading.Event = field(default_factory=threading.Event)
    """Set by a broker that stops: the worker raises ``CleaningAborted`` at its next batch."""

    def is_current(self, log: PartitionLog) -> bool:
        """Whether ``log`` still holds exactly the planned segments, unchanged, with a
        segment after them (none of them became the active segment)."""
        count = len(self.segments)
        return (
            not log.closed
            and len(log.segments) > count
            and all(
                log.segments[i] is segment and segment.size == size
                for i, (segment, size) in enumerate(zip(self.segments, self.sizes, strict=True))
            )
        )


class CleaningAborted(Exception):
    """The cleaning was asked to stop (``CleaningPlan.abort``); its copies are deleted."""


def compact_log(log: PartitionLog, now_ms: int) -> CompactionStats:
    """Plan, clean and commit in one go (tools, tests): ``plan_cleaning``,
    ``clean_segments`` and ``commit_cleaning`` are the steps a broker spreads over its
    event loop and a worker thread."""
    plan = plan_cleaning(log, now_ms)
    if plan is None:
        return CompactionStats()
    stats = commit_cleaning(log, plan, clean_segments(plan))
    return CompactionStats() if stats is None else stats


def plan_cleaning(log: PartitionLog, now_ms: int) -> CleaningPlan | None:
    """The cleaning ``log`` is due, or None: not compacted, nothing cleanable, or a
    dirty share below ``min.cleanable.dirty.ratio``."""
    if not log.config.compact:
        return None
    cleanable = _cleanable_segments(log, now_ms)
    if not cleanable:
        return None
    first_dirty = log.cleaner_checkpoint.offset
    total = sum(s.size for s in cleanable)
    dirty_segments = [s for s in cleanable if s.next_offset > first_dirty]
    dirty = sum(s.size for s in dirty_segments)
    if total == 0:
        return None
    overdue = _compaction_overdue(dirty_segments, log.config.max_compaction_lag_ms, now_ms)
    if dirty / total < log.config.min_cleanable_dirty_ratio and not overdue:
        return None
    state = _CleaningState(
        now_ms=now_ms,
        delete_retention_ms=log.config.delete_retention_ms,
        offset_map={},
        aborted=_aborted_ranges(log),
        last_offset_of_producer={
            pid: entry.last_offset for pid, entry in log.producer_state.producers.items()
        },
    )
    return CleaningPlan(
        segments=tuple(cleanable),
        sizes=tuple(s.size for s in cleanable),
        first_uncleaned=log.segments[len(cleanable)].base_offset,
        checkpoint=log.cleaner_checkpoint,
        state=state,
        new_segment=functools.partial(
            LogSegment.create, log.dir, suffix=CLEANED_SUFFIX, **log.segment_args()
        ),
    )


def clean_segments(plan: CleaningPlan) -> list[LogSegment]:
    """Write a cleaned copy of each planned segment (``.cleaned`` files, flushed to disk),
    reading only the planned segments: safe on a worker thread. On failure the copies
    written so far are deleted."""
    state = plan.state
    for batch in _batches(plan.segments):
        _check_abort(plan)
        if batch.is_control or state.is_aborted(batch):
            continue
        for record in decode_records(batch):
            if record.key is not None:
                state.offset_map[record.key] = record.offset
    state.count("bytes_read", sum(plan.sizes))
    cleaned: list[LogSegment] = []
    try:
        for segment in plan.segments:
            cleaned.append(_clean_segment(plan, segment))
    except BaseException:
        discard_cleaned(cleaned)
        raise
    return cleaned


def commit_cleaning(
    log: PartitionLog, plan: CleaningPlan, cleaned: list[LogSegment]
) -> CompactionStats | None:
    """Swap the cleaned copies in and record how far the log is clean; None, with the
    copies deleted, when the log changed since the plan (``CleaningPlan.is_current``)."""
    if not plan.is_current(log):
        discard_cleaned(cleaned)
        return None
    for segment, copy in zip(plan.segments, cleaned, strict=True):
        log.replace_segment(segment, copy)
    plan.checkpoint.write(plan.first_uncleaned)
    stats = plan.state.stats
    return CompactionStats(
        segments_cleaned=len(cleaned),
        bytes_read=stats.get("bytes_read", 0),
        bytes_written=stats.get("bytes_written", 0),
        records_read=stats.get("records_read", 0),
        records_retained=stats.get("records_retained", 0),
        tombstones_removed=stats.get("tombstones_removed", 0),
        aborted_records_removed=stats.get("aborted_records_removed", 0),
        markers_removed=stats.get("markers_removed", 0),
    )


def discard_cleaned(cleaned: list[LogSegment]) -> None:
    for segment in cleaned:
        segment.delete()


def _check_abort(plan: CleaningPlan) -> None:
    if plan.abort.is_set():
        raise CleaningAborted


def _cleanable_segments(log: PartitionLog, now_ms: int) -> list[LogSegment]:
    first_uncleanable = min(log.active_segment.base_offset, log.last_stable_offset)
    lag = log.config.min_compaction_lag_ms
    for segment in log.segments:
        if lag > 0 and segment.size and segment.largest_timestamp() > now_ms - lag:
            first_uncleanable = min(first_uncleanable, segment.base_offset)
            break
    cleanable = []
    for segment, following in zip(log.segments, log.segments[1:], strict=False):
        if following.base_offset > first_uncleanable:
            break
        cleanable.append(segment)
    return cleanable


def _compaction_overdue(dirty: list[LogSegment], max_lag_ms: int, now_ms: int) -> bool:
    """Kafka's ``max.compaction.lag.ms`` (KIP-354): a dirty segment whose first batch is
    older than that is cleaned whatever the dirty ratio."""
    firsts = [s.rolling_timestamp for s in dirty if s.rolling_timestamp and s.rolling_timestamp > 0]
    return bool(firsts) and min(firsts) < now_ms - max(max_lag_ms, 0)


def _aborted_ranges(log: PartitionLog) -> dict[int, list[tuple[int, int]]]:
    ranges: dict[int, list[tuple[int, int]]] = {}
    for segment in log.segments:
        for entry in segment.txn_index.entries:
            ranges.setdefault(entry.producer_id, []).append((entry.first_offset, entry.last_offset))
    return ranges


def _batches(segments: Iterable[LogSegment]) -> Iterator[RawBatch]:
    for segment in segments:
        yield from segment.batches()


def _clean_segment(plan: CleaningPlan, segment: LogSegment) -> LogSegment:
    cleaned = plan.new_segment(segment.base_offset)
    try:
        items: list[AppendItem] = []
        for batch in segment.batches():
            _check_abort(plan)
            kept = _clean_batch(batch, plan.state)
            if kept is not None:
                items.append(
                    AppendItem(
                        (kept.data,),
                        kept.size,
                        kept.base_offset,
                        kept.last_offset,
                        kept.max_timestamp,
                        kept.records_count,
                    )
                )
                plan.state.count("bytes_written", kept.size)
        if items:
            cleaned.append(items)
        cleaned.flush()
    except BaseException:
        cleaned.delete()
        raise
    return cleaned


def _clean_batch(batch: RawBatch, state: _CleaningState) -> RawBatch | None:
    if batch.is_control:
        return _clean_marker(batch, state)
    records = decode_records(batch)
    state.count("records_read", len(records))
    if state.is_aborted(batch):
        state.count("aborted_records_removed", len(records))
        return _empty_if_last_of_producer(batch, state)
    retained: list[Record] = []
    tombstone_kept = False
    for record in records:
        if record.key is None or state.offset_map.get(record.key, -1) > record.offset:
            continue
        if record.value is None:
            if state.horizon_passed(batch):
                state.count("tombstones_removed")
                continue
            tombstone_kept = True
        retained.append(record)
    state.count("records_retained", len(retained))
    if retained and batch.is_transactional:
        state.txn_has_data[batch.producer_id] = True
    if not retained:
        return _empty_if_last_of_producer(batch, state)
    needs_horizon = tombstone_kept and not batch.has_delete_horizon
    if len(retained) == len(records) and not needs_horizon:
        return batch
    horizon = state.new_horizon if needs_horizon else None
    if horizon is None and batch.has_delete_horizon:
        horizon = batch.base_timestamp
    return _rebuild(batch, retained, horizon)


def _clean_marker(batch: RawBatch, state: _CleaningState) -> RawBatch | None:
    control = decode_control_batch(batch)
    if not isinstance(control, TransactionMarker):
        return batch
    if state.txn_has_data.pop(batch.producer_id, False):
        return batch
    if state.horizon_passed(batch):
        state.count("markers_removed")
        return None
    if batch.has_delete_horizon:
        return batch
    return _rebuild(batch, decode_records(batch), state.new_horizon)


def _rebuild(batch: RawBatch, records: list[Record], delete_horizon: int | None) -> RawBatch:
    rebuilt = build_batch(
        records,
        base_offset=batch.base_offset,
        compression=batch.compression,
        timestamp_type=batch.timestamp_type,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        partition_leader_epoch=batch.partition_leader_epoch,
        is_control=batch.is_control,
        base_timestamp=delete_horizon,
    )
    attributes = rebuilt.attributes
    if delete_horizon is not None:
        attributes |= ATTR_DELETE_HORIZON
    return _patched(rebuilt, attributes, batch.last_offset_delta)


def _empty_if_last_of_producer(batch: RawBatch, state: _CleaningState) -> RawBatch | None:
    """Kafka keeps an empty copy of a producer's last batch so its sequence survives."""
    if not batch.has_producer_id or state.last_offset_of_producer.get(batch.producer_id) != (
        batch.last_offset
    ):
        return None
    fields = list(HEADER.unpack_from(batch.data))
    fields[1] = HEADER_SIZE - LOG_OVERHEAD
    fields[12] = 0
    data = bytearray(HEADER.pack(*fields))
    struct.pack_into(">I", data, _CRC_AT, crc32c.crc32c(memoryview(data)[CRC_START:]))
    return RawBatch.from_bytes(bytes(data))


def _patched(batch: RawBatch, attributes: int, last_offset_delta: int) -> RawBatch:
    """The rebuilt batch keeps the original's last offset, as Kafka's cleaner does: the
    producer's last sequence and the log end offset must not move back when the batch's
    last records are cleaned away."""
    data = bytearray(batch.data)
    struct.pack_into(">h", data, _ATTRIBUTES_AT, attributes)
    struct.pack_into(">i", data, _LAST_OFFSET_DELTA_AT, last_offset_delta)
    struct.pack_into(">I", data, _CRC_AT, crc32c.crc32c(memoryview(data)[CRC_START:]))
    return RawBatch.from_bytes(bytes(data))
