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
is exactly the part ``discard_stale`` checks against the log's batches after a crash.

A failover opens a new epoch in a thousand partitions at once, and a thousand fsyncs one
after the other on the event loop take seconds. ``prepare_assign`` / ``complete_assign``
split ``assign`` so the checkpoint writes of many partitions run in parallel on worker
threads (``PendingAssign.write`` touches only files) while memory changes only on the
log's owner; the write still precedes the batches that start the epoch.
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


@dataclass(frozen=True, slots=True)
class PendingAssign:
    """The checkpoint an ``assign`` would write, written by ``write`` on any thread."""

    path: Path
    epoch: int
    start_offset: int
    before: tuple[EpochEntry, ...]
    entries: tuple[EpochEntry, ...]
    writes_before: int

    def write(self) -> None:
        write_checkpoint(
            self.path,
            [(e.epoch, e.start_offset) for e in self.entries],
            tmp_suffix=".assign.tmp",
        )


class LeaderEpochFileCache:
    def __init__(self, path: Path, entries: list[EpochEntry] | None = None) -> None:
        self._path = path
        self._entries: list[EpochEntry] = list(entries or [])
        self._dirty = False
        self._writes = 0

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
        entries = self._assigned(epoch, start_offset)
        if entries is not None:
            self._entries = entries
            self._write()

    def _assigned(self, epoch: int, start_offset: int) -> list[EpochEntry] | None:
        """The entries after ``assign``; None when it changes nothing."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid epoch entry ({epoch}, {start_offset})")
        entries = list(self._entries)
        if entries:
            last = entries[-1]
            if last.epoch == epoch and start_offset >= last.start_offset:
                return None
        while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
            entries.pop()
        entries.append(EpochEntry(epoch, start_offset))
        return entries

    def prepare_assign(self, epoch: int, start_offset: int) -> PendingAssign | None:
        """``assign`` minus its write, for ``complete_assign`` after ``write``; None when
        the assign would change nothing."""
        entries = self._assigned(epoch, start_offset)
        if entries is None:
            return None
        return PendingAssign(
            self._path, epoch, start_offset, tuple(self._entries), tuple(entries), self._writes
        )

    def complete_assign(self, pending: PendingAssign) -> None:
        """Take the entries ``pending`` wrote. If the cache changed or was written since
        ``prepare_assign``, the file may not hold them: assign (and write) once more."""
        if tuple(self._entries) == pending.before and self._writes == pending.writes_before:
            self._entries = list(pending.entries)
            self._dirty = False
            self._writes += 1
        else:
            self.assign(pending.epoch, pending.start_offset)

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

    def discard_stale(self, offset: int, batches: Iterable[tuple[int, int]]) -> None:
        """Drop the entries from ``offset`` on that the log's batches contradict.

        ``batches`` are (partition leader epoch, next offset) of every batch from the one
        holding ``offset`` to the log end. A new epoch is always written before its
        batches, so a checkpoint can only be stale by a suffix a truncation removed, and
        the batches appended after that truncation carry lower epochs than that suffix:
        an entry is stale exactly when the first batch reaching past its start has a
        lower epoch.
        """
        entries = self._entries
        index = next((i for i, e in enumerate(entries) if e.start_offset >= offset), len(entries))
        for epoch, next_offset in batches:
            if index == len(entries):
                return
            if epoch < 0:
                continue
            while index < len(entries) and entries[index].start_offset < next_offset:
                if epoch < entries[index].epoch:
                    del entries[index:]
                    self._dirty = True
                    return
                index += 1

    def _write(self) -> None:
        write_checkpoint(self._path, [(e.epoch, e.start_offset) for e in self._entries])
        self._dirty = False
        self._writes += 1
