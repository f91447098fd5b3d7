"""Idempotent and transactional producer state, Kafka's ``ProducerStateManager``.

Theory of operation: for each producer id the log remembers the producer epoch, the
last five appended batches (first/last sequence and offsets) and the first offset of
its ongoing transaction. A leader append stages its batches against a copy of that state
(``ProducerStateManager.begin``), which raises on a fenced epoch, a sequence gap or a
duplicate; only after the bytes are in the log is the staged state committed. Follower
and recovery appends stage without checks: the leader already decided.

COMMIT/ABORT control batches end a producer's transaction; aborted ones are returned so
the log can add them to the segment's ``.txnindex``. A MIRROR_PID_RESET control batch
(type 7) forgets every producer: after a mirror failover, producer ids from the source
cluster mean nothing on this one.

Snapshots (``<offset>.snapshot``, see docs/log.md for the format) hold the state after
every batch below ``offset`` so that opening a log replays only the tail.
"""

from __future__ import annotations

import json
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from mirrorsim.broker.log.checkpoint import replace_file
from mirrorsim.broker.log.errors import (
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
)
from mirrorsim.broker.log.segment import OFFSET_WIDTH
from mirrorsim.broker.log.shutdown_sync import DeferredRenames
from mirrorsim.protocol.records import ControlRecordType, RawBatch
from mirrorsim.protocol.records.raw_batch import NO_PRODUCER_EPOCH, NO_SEQUENCE

RETAINED_BATCHES = 5
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_SNAPSHOT_HEADER = struct.Struct(">hI")
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=RETAINED_BATCHES))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> ProducerEntry:
        return ProducerEntry(
            self.producer_id,
            self.producer_epoch,
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
            deque(self.batches, maxlen=RETAINED_BATCHES),
        )

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for meta in self.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        return None


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


class ProducerAppend:
    """State changes of one append, applied to the manager only by ``commit``."""

    def __init__(self, manager: ProducerStateManager, *, validate: bool) -> None:
        self._manager = manager
        self._validate = validate
        self._entries: dict[int, ProducerEntry] = {}
        self._reset = False
        self.completed: list[CompletedTxn] = []

    def last_stable_offset_after(self, txn: CompletedTxn) -> int:
        """``ProducerStateManager.last_stable_offset_after`` over the state staged so far,
        for the aborts recovery indexes again while it replays."""
        producers = {} if self._reset else dict(self._manager.producers)
        producers.update(self._entries)
        others = [
            e.current_txn_first_offset
            for pid, e in producers.items()
            if pid != txn.producer_id and e.current_txn_first_offset is not None
        ]
        return min(others) if others else txn.last_offset + 1

    def _current(self, producer_id: int) -> ProducerEntry | None:
        if producer_id in self._entries:
            return self._entries[producer_id]
        if self._reset:
            return None
        return self._manager.producers.get(producer_id)

    def check_duplicate(self, batch: RawBatch) -> None:
        """Raise ``DuplicateSequenceError`` when a client retried an appended batch."""
        if not batch.has_producer_id or batch.base_sequence == NO_SEQUENCE or batch.is_control:
            return
        entry = self._current(batch.producer_id)
        if entry is None:
            return
        meta = entry.find_duplicate(batch.producer_epoch, batch.base_sequence, batch.last_sequence)
        if meta is not None:
            raise DuplicateSequenceError(batch.producer_id, meta.first_offset, meta.last_offset)

    def append(
        self,
        batch: RawBatch,
        control_type: int | None = None,
        coordinator_epoch: int = -1,
    ) -> None:
        """Stage one batch already placed at its final offsets."""
        if control_type == ControlRecordType.MIRROR_PID_RESET:
            self._entries.clear()
            self._reset = True
            return
        if not batch.has_producer_id:
            return
        current = self._current(batch.producer_id)
        entry = current.copy() if current else ProducerEntry(batch.producer_id)
        self._check_epoch(entry, batch)
        if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            self._end_transaction(entry, batch, control_type, coordinator_epoch)
        elif not batch.is_control:
            self._append_data(entry, batch)
        entry.last_timestamp = batch.max_timestamp
        self._entries[batch.producer_id] = entry

    def _check_epoch(self, entry: ProducerEntry, batch: RawBatch) -> None:
        if batch.producer_epoch < entry.producer_epoch and self._validate:
            raise InvalidProducerEpochError(
                f"producer {batch.producer_id} epoch {batch.producer_epoch} is older than "
                f"the current epoch {entry.producer_epoch}"
            )

    def _append_data(self, entry: ProducerEntry, batch: RawBatch) -> None:
        if self._validate and batch.base_sequence != NO_SEQUENCE:
            self._check_sequence(entry, batch)
        if batch.producer_epoch != entry.producer_epoch:
            entry.batches.clear()
            entry.producer_epoch = batch.producer_epoch
        if batch.is_transactional:
            if entry.current_txn_first_offset is None:
                entry.current_txn_first_offset = batch.base_offset
        elif entry.current_txn_first_offset is not None and self._validate:
            raise InvalidTxnStateError(
                f"producer {batch.producer_id} wrote outside its ongoing transaction"
            )
        entry.batches.append(
            BatchMetadata(
                batch.base_sequence,
                batch.last_sequence,
                batch.base_offset,
                batch.last_offset,
                batch.max_timestamp,
            )
        )

    def _check_sequence(self, entry: ProducerEntry, batch: RawBatch) -> None:
        first_seq = batch.base_sequence
        if batch.producer_epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"producer {batch.producer_id} started epoch {batch.producer_epoch} "
                    f"at sequence {first_seq}, expected 0"
                )
            return
        if entry.batches and not _in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"producer {batch.producer_id} sent sequence {first_seq} after {entry.last_seq}"
            )

    def _end_transaction(
        self, entry: ProducerEntry, batch: RawBatch, control_type: int, coordinator_epoch: int
    ) -> None:
        if batch.producer_epoch != entry.producer_epoch:
            entry.batches.clear()
            entry.producer_epoch = batch.producer_epoch
        entry.coordinator_epoch = coordinator_epoch
        first = entry.current_txn_first_offset
        if first is None:
            return
        entry.current_txn_first_offset = None
        self.completed.append(
            CompletedTxn(
                batch.producer_id,
                first,
                batch.base_offset,
                control_type == ControlRecordType.ABORT,
            )
        )


class ProducerStateManager:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}
        self.map_end_offset = 0

    def begin(self, *, validate: bool) -> ProducerAppend:
        return ProducerAppend(self, validate=validate)

    def commit(self, staged: ProducerAppend, end_offset: int) -> None:
        if staged._reset:
            self.producers.clear()
        self.producers.update(staged._entries)
        self.map_end_offset = end_offset

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest ongoing transaction."""
        firsts = [
            e.current_txn_first_offset
            for e in self.producers.values()
            if e.current_txn_first_offset is not None
        ]
        return min(firsts) if firsts else None

    def last_stable_offset_after(self, txn: CompletedTxn) -> int:
        """The LSO recorded with an aborted transaction in the ``.txnindex``."""
        others = [
            e.current_txn_first_offset
            for pid, e in self.producers.items()
            if pid != txn.producer_id and e.current_txn_first_offset is not None
        ]
        return min(others) if others else txn.last_offset + 1

    def ongoing_transactions(self) -> dict[int, int]:
        return {
            pid: e.current_txn_first_offset
            for pid, e in self.producers.items()
            if e.current_txn_first_offset is not None
        }

    # -- snapshots -----------------------------------------------------------------------

    def snapshot_offsets(self) -> list[int]:
        offsets = []
        for path in self.directory.glob("*" + SNAPSHOT_SUFFIX):
            stem = path.name[: -len(SNAPSHOT_SUFFIX)]
            if len(stem) == OFFSET_WIDTH and stem.isdigit():
                offsets.append(int(stem))
        return sorted(offsets)

    def _snapshot_path(self, offset: int) -> Path:
        return self.directory / f"{offset:0{OFFSET_WIDTH}d}{SNAPSHOT_SUFFIX}"

    def take_snapshot(self, deferred: DeferredRenames | None = None) -> None:
        """Persist the state as of ``map_end_offset`` (atomically, fsynced; at a clean
        shutdown the sync and rename are ``deferred``)."""
        body = json.dumps(
            {
                "producers": [
                    {
                        "producer_id": e.producer_id,
                        "producer_epoch": e.producer_epoch,
                        "coordinator_epoch": e.coordinator_epoch,
                        "last_timestamp": e.last_timestamp,
                        "current_txn_first_offset": e.current_txn_first_offset,
                        "batches": [
                            [m.first_seq, m.last_seq, m.first_offset, m.last_offset, m.timestamp]
                            for m in e.batches
                        ],
                    }
                    for e in self.producers.values()
                ]
            },
            separators=(",", ":"),
        ).encode()
        replace_file(
            self._snapshot_path(self.map_end_offset),
            _SNAPSHOT_HEADER.pack(SNAPSHOT_VERSION, crc32c.crc32c(body)) + body,
            deferred=deferred,
        )

    def load_latest_snapshot(self, at_or_below: int) -> bool:
        """Load the newest readable snapshot at or below an offset; False if there is none.

        Unreadable snapshots are deleted: the log tail is replayed from an older one.
        """
        for offset in reversed(self.snapshot_offsets()):
            if offset > at_or_below:
                continue
            producers = _read_snapshot(self._snapshot_path(offset))
            if producers is None:
                self._snapshot_path(offset).unlink(missing_ok=True)
                continue
            self.producers = producers
            self.map_end_offset = offset
            return True
        self.producers = {}
        return False

    def delete_snapshots_above(self, offset: int) -> None:
        for snapshot in self.snapshot_offsets():
            if snapshot > offset:
                self._snapshot_path(snapshot).unlink(missing_ok=True)

    def delete_snapshots_below(self, offset: int) -> None:
        """Snapshots older than the log start are useless, but the latest one is kept."""
        offsets = self.snapshot_offsets()
        for snapshot in offsets[:-1]:
            if snapshot < offset:
                self._snapshot_path(snapshot).unlink(missing_ok=True)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers = {}
        self.map_end_offset = offset
        self.delete_snapshots_above(-1)


def _read_snapshot(path: Path) -> dict[int, ProducerEntry] | None:
    try:
        data = path.read_bytes()
        version, crc = _SNAPSHOT_HEADER.unpack_from(data)
        body = data[_SNAPSHOT_HEADER.size :]
        if version != SNAPSHOT_VERSION or crc32c.crc32c(body) != crc:
            return None
        producers = {}
        for raw in json.loads(body)["producers"]:
            entry = ProducerEntry(
                raw["producer_id"],
                raw["producer_epoch"],
                raw["coordinator_epoch"],
                raw["last_timestamp"],
                raw["current_txn_first_offset"],
                deque((BatchMetadata(*m) for m in raw["batches"]), maxlen=RETAINED_BATCHES),
            )
            producers[entry.producer_id] = entry
        return producers
    except (OSError, struct.error, ValueError, KeyError, TypeError):
        return None
