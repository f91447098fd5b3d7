"""Leader epoch → start offset, Kafka's ``LeaderEpochFileCache``.

Followers and mirrors ask "where did epoch N end?" (OffsetForLeaderEpoch) to find the
point where their log diverges from the leader's. The answer comes from this cache, so
it must always agree with the partition leader epochs stamped in the log's batches:
entries only grow in both epoch and start offset, and truncating the log truncates the
cache.

Durability follows Kafka after KAFKA-15046: the batches are the record of where an
epoch began, and ``leader-epoch-checkpoint`` only saves re-reading them. A new epoch is
written to the checkpoint at once but without fsync (temporary file and rename, so a
reader never sees a torn file); truncations only change memory. ``flush`` writes and
fsyncs whatever memory holds that the durable file does not, and the owning log calls it
before it moves its recovery point. So the entries below the persisted recovery point
are always durable and right, and after a crash recovery keeps only those and re-learns
the rest from the batches at and above the recovery point (``relearn_from``). A
checkpoint the crash left torn or missing is rebuilt from the whole log.

An epoch opened with no batch yet (a leader's new term, a failover before its
MIRROR_PID_RESET) lives only in memory and in the unsynced file: no batch records it, so
recovery drops it, as Kafka's log loader does, and whoever opened it opens it again
(the partition leader on its next term, the failover when it resumes STOPPING).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from mirrorsim.broker.log.checkpoint import (
    CheckpointFormatError,
    read_checkpoint,
    write_checkpoint,
)
from mirrorsim.broker.log.shutdown_sync import DeferredRenames

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
CHECKPOINT_NAME = "leader-epoch-checkpoint"


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    def __init__(self, path: Path, entries: list[EpochEntry] | None = None) -> None:
        self._path = path
        self._entries: list[EpochEntry] = list(entries or [])
        self._dirty = False

    @classmethod
    def load(cls, path: Path) -> LeaderEpochFileCache:
        """The cache the checkpoint holds (empty when there is none).

        Raises ``CheckpointFormatError`` when the file is unreadable.
        """
        rows = read_checkpoint(path, 2) or []
        return cls(path, [EpochEntry(epoch, offset) for epoch, offset in rows])

    @classmethod
    def load_if_intact(cls, path: Path) -> LeaderEpochFileCache | None:
        """The checkpoint's cache, or None when the file is missing, cut short, unreadable
        or not increasing in both epoch and start offset: what an unsynced write can leave
        after a machine crash, and then only the log can say where its epochs began."""
        try:
            rows = read_checkpoint(path, 2, whole=True)
        except CheckpointFormatError:
            return None
        if rows is None:
            return None
        entries = [EpochEntry(epoch, offset) for epoch, offset in rows]
        if any(e.epoch < 0 or e.start_offset < 0 for e in entries) or any(
            a.epoch >= b.epoch or a.start_offset >= b.start_offset for a, b in pairwise(entries)
        ):
            return None
        return cls(path, entries)

    @property
    def epoch_entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def dirty(self) -> bool:
        """Whether memory holds changes the durable (fsynced) checkpoint does not."""
        return self._dirty

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset``, written without fsync.

        A repeated epoch is ignored unless it moves the start earlier. Entries at or
        above the new epoch or start offset are dropped first, so the cache stays
        monotonic even when a follower re-learns history after a truncation.
        """
        if self._assign_in_memory(epoch, start_offset):
            self._write(sync=False)

    def _assign_in_memory(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid epoch entry ({epoch}, {start_offset})")
        entries = self._entries
        if entries:
            last = entries[-1]
            if last.epoch == epoch and start_offset >= last.start_offset:
                return False
        while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
            entries.pop()
        entries.append(EpochEntry(epoch, start_offset))
        self._dirty = True
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch ≤ ``epoch``, the offset where it ends), as OffsetForLeaderEpoch.

        The end of the latest epoch is the log end offset; an epoch newer than anything
        known, or an undefined one, yields (-1, -1).
        """
        if epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == self._entries[-1].epoch:
            return epoch, log_end_offset
        epochs = [e.epoch for e in self._entries]
        higher = bisect.bisect_right(epochs, epoch)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return epoch, self._entries[0].start_offset
        return self._entries[higher - 1].epoch, self._entries[higher].start_offset

    def epoch_for_offset(self, offset: int) -> int | None:
        starts = [e.start_offset for e in self._entries]
        index = bisect.bisect_right(starts, offset)
        return self._entries[index - 1].epoch if index else None

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after ``end_offset`` (the log was truncated there).

        Not written until ``flush``: see the module docstring for why that is crash safe.
        """
        if self._entries and self._entries[-1].start_offset >= end_offset:
            while self._entries and self._entries[-1].start_offset >= end_offset:
                self._entries.pop()
            self._dirty = True

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop epochs wholly below the new log start; the epoch covering it now starts there."""
        covered = [e for e in self._entries if e.start_offset <= start_offset]
        if not covered:
            return
        last = covered[-1]
        remaining = self._entries[len(covered) :]
        updated = [EpochEntry(last.epoch, start_offset), *remaining]
        if updated != self._entries:
            self._entries = updated
            self._dirty = True

    def relearn_from(self, offset: int, batches: Iterable[tuple[int, int]]) -> None:
        """Replace the entries from ``offset`` on with what the log's batches say.

        ``batches`` are (partition leader epoch, base offset) of every batch from the one
        holding ``offset`` to the log end; each change of epoch is assigned, exactly as a
        follower appending those batches would. Not written until ``flush``.
        """
        self.truncate_from_end(offset)
        for epoch, base_offset in batches:
            if epoch >= 0 and epoch != self.latest_epoch:
                self._assign_in_memory(epoch, base_offset)

    def clear(self) -> None:
        """Forget every epoch, durably: the log restarts empty, and entries below its new
        start that a stale checkpoint still held would outlive recovery."""
        self._entries = []
        self._write(sync=True)

    def flush(self, deferred: DeferredRenames | None = None) -> None:
        """Make the checkpoint durable; the log calls this before moving its recovery point
        (at a clean shutdown, through ``deferred``)."""
        if self._dirty:
            self._write(sync=True, deferred=deferred)

    def _write(self, *, sync: bool, deferred: DeferredRenames | None = None) -> None:
        write_checkpoint(
            self._path,
            [(e.epoch, e.start_offset) for e in self._entries],
            sync=sync,
            deferred=deferred,
        )
        self._dirty = not sync
