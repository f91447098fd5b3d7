"""Truncations reach ``leader-epoch-checkpoint`` lazily; a crash before that write must
not leave the epoch cache claiming epochs the log no longer holds."""

from __future__ import annotations

from pathlib import Path

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.broker.log.epoch_cache import CHECKPOINT_NAME, EpochEntry, LeaderEpochFileCache
from mirrorsim.protocol.records import Record, build_batch


def append(log: PartitionLog, epoch: int, count: int) -> None:
    for i in range(count):
        log.append_as_leader([build_batch([Record(0, i, b"k", b"v")])], leader_epoch=epoch)


def crash(log: PartitionLog) -> None:
    """The process dies: written bytes stay in the page cache, nothing else happens."""
    for segment in log.segments:
        segment.close()


def test_truncation_is_written_on_flush_not_at_once(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig())
    append(log, 1, 5)
    append(log, 2, 5)
    log.truncate_to(7)
    on_disk = LeaderEpochFileCache.load(tmp_path / "t-0" / CHECKPOINT_NAME)
    assert on_disk.epoch_entries == [EpochEntry(1, 0), EpochEntry(2, 5)]
    log.truncate_to(4)
    assert log.epoch_cache.dirty
    log.flush()
    on_disk = LeaderEpochFileCache.load(tmp_path / "t-0" / CHECKPOINT_NAME)
    assert on_disk.epoch_entries == [EpochEntry(1, 0)]
    log.close()


def test_crash_after_truncation_drops_epochs_the_log_contradicts(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig())
    append(log, 1, 5)
    append(log, 2, 5)
    log.truncate_to(5)
    append(log, 1, 10)
    crash(log)
    stale = LeaderEpochFileCache.load(tmp_path / "t-0" / CHECKPOINT_NAME)
    assert stale.epoch_entries == [EpochEntry(1, 0), EpochEntry(2, 5)]
    reopened = PartitionLog.open(tmp_path / "t-0", LogConfig())
    assert reopened.log_end_offset == 15
    assert reopened.epoch_cache.epoch_entries == [EpochEntry(1, 0)]
    assert reopened.end_offset_for_epoch(2) == (-1, -1)
    reopened.close()


def test_only_entries_a_later_batch_contradicts_are_discarded(tmp_path: Path) -> None:
    entries = [EpochEntry(1, 0), EpochEntry(3, 40), EpochEntry(5, 60)]
    cache = LeaderEpochFileCache(tmp_path / CHECKPOINT_NAME, entries)
    cache.discard_stale(30, [(1, 32), (-1, 41), (3, 50), (3, 58), (3, 65)])
    assert cache.epoch_entries == entries[:2]
    assert cache.dirty
    cache = LeaderEpochFileCache(tmp_path / CHECKPOINT_NAME, entries)
    cache.discard_stale(30, [(3, 45), (5, 70)])
    assert cache.epoch_entries == entries
    assert not cache.dirty
