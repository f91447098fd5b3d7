"""Leader epoch → start offset, Kafka's ``LeaderEpochFileCache``.

Followers and mirrors ask "where did epoch N end?" (OffsetForLeaderEpoch) to find the
point where their log diverges from the leader's. The answer comes from this cache, so
it must always agree with the partition leader epochs stamped in the log's batches:
entries only grow in both epoch and start offset, and truncating the log truncates the
cache.

Durability follows Kafka (KAFKA-16541). A new epoch is written to
``leader-epoch-checkpoint`` (fsync) before the batches that start it, because nothing
else records where an epoch began. Truncations only change memory and mark the cache
dirty; the owning log writes them with ``flush`` before it advances its recovery point,
so a stale checkpoint only ever differs at or above the persisted recovery point, which
is exactly the part ``rebuild_from`` repairs from the log's batches after a crash.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mirrorsim.broker.log.checkpoint import read_checkpoint, write_checkpoint

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
        rows = read_checkpoint(path, 2) or []
        return cls(path, [EpochEntry(epoch, offset) for epoch, offset in rows])

    @property
    def epoch_entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def dirty(self) -> bool:
        """Whether memory holds a truncation the checkpoint file does not have yet."""
        return self._dirty

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset``.

        A repeated epoch is ignored unless it moves the start earlier. Entries at or
        above the new epoch or start offset are dropped first, so the cache stays
        monotonic even when a follower re-learns history after a truncation.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid epoch entry ({epoch}, {start_offset})")
        if self._entries:
            last = self._entries[-1]
            if last.epoch == epoch and start_offset >= last.start_offset:
                return
        while self._entries and (
            self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset
        ):
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        self._write()

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

    def clear(self) -> None:
        """Forget every epoch, durably: recovery could not tell a cleared cache from a
        stale one, because no batch remains to contradict the old entries."""
        self._entries = []
        self._write()

    def flush(self) -> None:
        """Write pending truncations; the log calls this before moving its recovery point."""
        if self._dirty:
            self._write()

    def rebuild_from(self, offset: int, batches: Iterable[tuple[int, int, int]]) -> None:
        """Re-derive the entries starting at or after ``offset`` from the log's batches.

        ``batches`` are (partition leader epoch, base offset, next offset) of every batch
        from the one holding ``offset`` to the log end. An entry the checkpoint had for an
        epoch is kept when it fits between the previous batch and the epoch's first batch
        (compaction may have removed the batches that began the epoch); otherwise the
        epoch starts at its first batch. Entries of epochs no batch carries any more (a
        truncation that crashed before its checkpoint write) disappear.
        """
        candidates = {e.epoch: e.start_offset for e in self._entries if e.start_offset >= offset}
        self._entries = [e for e in self._entries if e.start_offset < offset]
        previous_end = offset
        for epoch, base_offset, next_offset in batches:
            if epoch >= 0 and (not self._entries or epoch > self._entries[-1].epoch):
                start = candidates.get(epoch, base_offset)
                if not previous_end <= start <= base_offset:
                    start = base_offset
                self._entries.append(EpochEntry(epoch, start))
            previous_end = next_offset
        self._dirty = True

    def _write(self) -> None:
        write_checkpoint(self._path, [(e.epoch, e.start_offset) for e in self._entries])
        self._dirty = False
