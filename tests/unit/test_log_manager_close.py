"""A broker's clean shutdown closes every log with two file-system syncs in all.

Each log writes what it makes durable (segments, indexes, producer snapshot, epoch and
offset checkpoints) without an fsync of its own; one sync makes the data durable, the
checkpoints are renamed into place, a second sync makes the renames durable, and only
then does each log get its clean-shutdown marker.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mirrorsim.broker.log import LogConfig
from mirrorsim.broker.log.checkpoint import read_checkpoint
from mirrorsim.broker.log.log_manager import LogManager
from mirrorsim.broker.log.partition_log import (
    CLEAN_SHUTDOWN_FILE,
    HIGH_WATERMARK_FILE,
    LOG_START_FILE,
    RECOVERY_POINT_FILE,
)
from mirrorsim.protocol.records import Record, build_batch

PARTITIONS = 40


def filled(data_dir: Path) -> LogManager:
    """``PARTITIONS`` logs of 3 records each, the last one's log start moved to 1."""
    manager = LogManager(data_dir)
    for partition in range(PARTITIONS):
        log = manager.get_or_create("t", partition, LogConfig())
        for value in (b"a", b"b", b"c"):
            log.append_as_leader([build_batch([Record(0, 1_000, b"k", value)])], leader_epoch=3)
        log.update_high_watermark(3)
    last = manager.get("t", PARTITIONS - 1)
    assert last is not None
    last.maybe_increment_log_start_offset(1)
    return manager


def checkpoint(path: Path) -> int:
    entries = read_checkpoint(path, 1)
    assert entries is not None
    return entries[0][0]


def test_closing_many_logs_takes_two_syncs_and_no_fsync_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = filled(tmp_path)
    calls = {"fsync": 0, "sync": 0}
    fsync, sync = os.fsync, os.sync

    def counted_fsync(fd: int) -> None:
        calls["fsync"] += 1
        fsync(fd)

    def counted_sync() -> None:
        calls["sync"] += 1
        sync()

    monkeypatch.setattr(os, "fsync", counted_fsync)
    monkeypatch.setattr(os, "sync", counted_sync)
    manager.close()
    assert calls == {"fsync": 0, "sync": 2}
    for partition in range(PARTITIONS):
        directory = tmp_path / f"t-{partition}"
        assert (directory / CLEAN_SHUTDOWN_FILE).exists()
        assert checkpoint(directory / RECOVERY_POINT_FILE) == 3
        assert checkpoint(directory / HIGH_WATERMARK_FILE) == 3
        assert not list(directory.glob("*.tmp"))
    assert checkpoint(tmp_path / f"t-{PARTITIONS - 1}" / LOG_START_FILE) == 1

    reopened = LogManager(tmp_path)
    log = reopened.get_or_create("t", PARTITIONS - 1, LogConfig())
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (1, 3, 3)
    assert log.latest_epoch == 3
    reopened.close()


def test_a_log_whose_checkpoint_cannot_be_renamed_is_left_without_its_marker(
    tmp_path: Path,
) -> None:
    """A rename that fails at the shutdown's commit (here the checkpoint's name is taken
    by a directory) leaves that log to be recovered at the next start; the others close
    cleanly."""
    manager = filled(tmp_path)
    blocked = tmp_path / "t-7" / LOG_START_FILE
    blocked.unlink(missing_ok=True)
    blocked.mkdir()
    (blocked / "in-the-way").touch()
    manager.close()
    assert not (tmp_path / "t-7" / CLEAN_SHUTDOWN_FILE).exists()
    others = [p for p in range(PARTITIONS) if p != 7]
    assert all((tmp_path / f"t-{p}" / CLEAN_SHUTDOWN_FILE).exists() for p in others)
