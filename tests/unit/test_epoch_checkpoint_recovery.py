"""Truncations reach ``leader-epoch-checkpoint`` lazily and new epochs without fsync; a
crash before either is durable must not leave the epoch cache disagreeing with the log."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

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
    assert not log.epoch_cache.dirty
    on_disk = LeaderEpochFileCache.load(tmp_path / "t-0" / CHECKPOINT_NAME)
    assert on_disk.epoch_entries == [EpochEntry(1, 0)]
    log.close()


def test_a_new_epoch_is_written_at_once_and_made_durable_by_flush(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig())
    append(log, 1, 2)
    log.flush()
    append(log, 3, 1)
    on_disk = LeaderEpochFileCache.load(tmp_path / "t-0" / CHECKPOINT_NAME)
    assert on_disk.epoch_entries == [EpochEntry(1, 0), EpochEntry(3, 2)]
    assert log.epoch_cache.dirty
    log.roll()
    assert not log.epoch_cache.dirty
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


def test_crash_relearns_an_epoch_the_checkpoint_never_got(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig())
    append(log, 1, 3)
    log.roll()
    durable = (tmp_path / "t-0" / CHECKPOINT_NAME).read_bytes()
    append(log, 4, 2)
    crash(log)
    (tmp_path / "t-0" / CHECKPOINT_NAME).write_bytes(durable)
    reopened = PartitionLog.open(tmp_path / "t-0", LogConfig())
    assert reopened.epoch_cache.epoch_entries == [EpochEntry(1, 0), EpochEntry(4, 3)]
    assert reopened.end_offset_for_epoch(1) == (1, 3)
    reopened.close()


def test_an_epoch_with_no_batch_does_not_survive_a_reopen(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig())
    append(log, 1, 3)
    log.epoch_cache.assign(2, log.log_end_offset)
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", LogConfig())
    assert reopened.epoch_cache.epoch_entries == [EpochEntry(1, 0)]
    reopened.close()


def test_relearning_keeps_entries_below_the_offset_and_follows_the_batches_above(
    tmp_path: Path,
) -> None:
    entries = [EpochEntry(1, 0), EpochEntry(3, 40), EpochEntry(5, 60)]
    cache = LeaderEpochFileCache(tmp_path / CHECKPOINT_NAME, entries)
    cache.relearn_from(30, [(1, 25), (-1, 32), (2, 41), (2, 50), (4, 58)])
    assert cache.epoch_entries == [EpochEntry(1, 0), EpochEntry(2, 41), EpochEntry(4, 58)]
    assert cache.dirty
    assert not (tmp_path / CHECKPOINT_NAME).exists()


def test_a_checkpoint_out_of_order_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / CHECKPOINT_NAME
    path.write_text("0\n2\n3 10\n2 20\n")
    assert LeaderEpochFileCache.load_if_intact(path) is None
    path.write_text("0\n2\n2 10\n3 20\n")
    intact = LeaderEpochFileCache.load_if_intact(path)
    assert intact is not None
    assert intact.epoch_entries == [EpochEntry(2, 10), EpochEntry(3, 20)]


@given(
    steps=st.lists(st.tuples(st.integers(1, 30), st.integers(1, 10**9)), min_size=1, max_size=8),
    cut=st.floats(0, 1, exclude_max=True),
)
def test_a_checkpoint_cut_short_anywhere_is_not_trusted(
    steps: list[tuple[int, int]], cut: float
) -> None:
    epoch, offset, entries = 0, 0, []
    for epoch_step, offset_step in steps:
        epoch, offset = epoch + epoch_step, offset + offset_step
        entries.append(EpochEntry(epoch, offset))
    with tempfile.TemporaryDirectory(prefix="epoch-cut-") as tmp:
        path = Path(tmp) / CHECKPOINT_NAME
        written = LeaderEpochFileCache(path)
        for entry in entries:
            written.assign(entry.epoch, entry.start_offset)
        whole = path.read_bytes()
        intact = LeaderEpochFileCache.load_if_intact(path)
        assert intact is not None
        assert intact.epoch_entries == entries
        path.write_bytes(whole[: int(cut * len(whole))])
        assert LeaderEpochFileCache.load_if_intact(path) is None
