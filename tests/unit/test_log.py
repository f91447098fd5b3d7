"""PartitionLog: offsets, epochs, reads, rolls, truncation, retention and reopening."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from mirrorsim.broker.log import (
    LogConfig,
    LogManager,
    NonContiguousAppendError,
    OffsetOutOfRangeError,
    PartitionLog,
    RecordBatchTooLargeError,
    RecordTooLargeError,
)
from mirrorsim.broker.log.partition_metadata import InconsistentTopicIdError
from mirrorsim.protocol.records import RawBatch, Record, build_batch, decode_records, iter_batches


def batch(n: int = 1, *, ts: int = 1_000, value: bytes = b"v" * 20, key: bytes = b"k") -> RawBatch:
    return build_batch([Record(i, ts + i, key + b"%d" % i, value) for i in range(n)])


def open_log(path: Path, **config: int | str) -> PartitionLog:
    return PartitionLog.open(path, LogConfig(**config))  # type: ignore[arg-type]


def read_all(log: PartitionLog, start: int = 0) -> list[RawBatch]:
    out: list[RawBatch] = []
    offset = start
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20)
        batches = list(iter_batches(result.records))
        if not batches:
            break
        out.extend(batches)
        offset = batches[-1].next_offset
    return out


def test_leader_append_assigns_offsets_and_stamps_epoch(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    first = log.append_as_leader([batch(3)], leader_epoch=4)
    second = log.append_as_leader([batch(2), batch(1)], leader_epoch=4)
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset, second.batch_count) == (3, 5, 2)
    assert log.log_end_offset == 6
    stored = read_all(log)
    assert [(b.base_offset, b.partition_leader_epoch) for b in stored] == [(0, 4), (3, 4), (5, 4)]
    assert all(b.is_valid() for b in stored)
    assert [r.offset for b in stored for r in decode_records(b)] == list(range(6))
    assert log.latest_epoch == 4
    log.close()


def test_follower_append_keeps_bytes_and_learns_epochs(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    leader.append_as_leader([batch(2)], leader_epoch=1)
    leader.append_as_leader([batch(3)], leader_epoch=3)
    source = read_all(leader)
    follower = open_log(tmp_path / "follower")
    follower.append_as_follower(source)
    assert [b.data for b in read_all(follower)] == [b.data for b in source]
    assert follower.epoch_cache.epoch_entries == leader.epoch_cache.epoch_entries
    assert follower.end_offset_for_epoch(1) == (1, 2)
    with pytest.raises(NonContiguousAppendError):
        follower.append_as_follower(source[-1:])
    leader.close()
    follower.close()


def test_follower_gap_needs_permission(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    later = build_batch([Record(100, 5, b"k", b"v")], base_offset=100, partition_leader_epoch=2)
    with pytest.raises(NonContiguousAppendError):
        log.append_as_follower([later])
    log.append_as_follower([later], allow_gaps=True)
    assert log.log_end_offset == 101
    assert log.read(0, 1000).first_offset == 100
    log.close()


def test_read_bounds(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for _ in range(5):
        log.append_as_leader([batch(2)], leader_epoch=0)
    size = read_all(log)[0].size
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 1000)
    assert log.read(10, 1000).records == b""
    assert [b.base_offset for b in iter_batches(log.read(3, 1000, max_offset=6).records)] == [2, 4]
    assert log.read(0, size * 2 + 1).records.count(b"k0") == 2
    assert len(log.read(0, size - 1).records) == size
    assert log.read(0, size - 1, min_one_batch=False).records == b""
    log.close()


def test_size_limits(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", max_message_bytes=200, segment_bytes=150)
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader([batch(1, value=b"x" * 300)], leader_epoch=0)
    with pytest.raises(RecordBatchTooLargeError):
        log.append_as_leader([batch(1, value=b"x" * 120)], leader_epoch=0)
    assert log.log_end_offset == 0
    log.close()


def test_rolls_by_size_and_time(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=250, segment_ms=1_000)
    for _ in range(6):
        log.append_as_leader([batch(1)], leader_epoch=0)
    size = read_all(log)[0].size
    per_segment = 250 // size
    assert [s.size for s in log.segments[:-1]] == [per_segment * size] * (len(log.segments) - 1)
    assert len(log.segments) == -(-6 // per_segment)
    bases = [s.base_offset for s in log.segments]
    log.append_as_leader([batch(1, ts=50_000)], leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [*bases, 6]
    log.close()


def test_log_append_time_rewrites_max_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", message_timestamp_type="LogAppendTime")
    info = log.append_as_leader([batch(2, ts=5)], leader_epoch=0, now_ms=123_456)
    (stored,) = read_all(log)
    assert info.log_append_time_ms == 123_456
    assert stored.is_valid() and stored.max_timestamp == 123_456
    assert [r.timestamp for r in decode_records(stored)] == [123_456, 123_456]
    log.close()


def test_truncate_to_removes_whole_batches_and_epochs(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=250)
    for epoch in range(6):
        log.append_as_leader([batch(2)], leader_epoch=epoch)
    log.update_high_watermark(12)
    assert log.truncate_to(5)
    assert log.log_end_offset == 4
    assert log.high_watermark == 4
    assert [e.epoch for e in log.epoch_cache.epoch_entries] == [0, 1]
    assert [b.base_offset for b in read_all(log)] == [0, 2]
    assert not log.truncate_to(10)
    log.append_as_leader([batch(1)], leader_epoch=7)
    assert log.end_offset_for_epoch(1) == (1, 4)
    log.close()


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader([batch(3)], leader_epoch=0)
    log.truncate_fully_and_start_at(1_000)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (1_000, 1_000, 1_000)
    assert log.latest_epoch is None
    assert log.append_as_leader([batch(1)], leader_epoch=2).first_offset == 1_000
    log.close()
    reopened = open_log(tmp_path / "t-0")
    assert (reopened.log_start_offset, reopened.log_end_offset) == (1_000, 1_001)
    reopened.close()


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", index_interval_bytes=1)
    for i in range(10):
        log.append_as_leader([batch(2, ts=1_000 * i)], leader_epoch=i % 3)
    found = log.offset_for_timestamp(4_001)
    assert found is not None and (found.offset, found.timestamp) == (9, 4_001)
    found = log.offset_for_timestamp(4_002)
    assert found is not None and (found.offset, found.timestamp) == (10, 5_000)
    assert log.offset_for_timestamp(100_000) is None
    latest = log.max_timestamp_offset()
    assert latest is not None and (latest.offset, latest.timestamp) == (19, 9_001)
    log.close()


def test_retention_by_log_start_time_and_size(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=250, retention_ms=10_000, retention_bytes=-1)
    for i in range(8):
        log.append_as_leader([batch(1, ts=1_000 * i)], leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    segments = len(log.segments)
    assert log.delete_old_segments(now_ms=12_500) == 1
    assert log.log_start_offset == log.segments[0].base_offset
    assert len(log.segments) == segments - 1
    log.maybe_increment_log_start_offset(log.segments[1].base_offset + 1)
    start = log.log_start_offset
    assert log.delete_old_segments(now_ms=0) == 1
    assert log.log_start_offset == start
    with pytest.raises(OffsetOutOfRangeError):
        log.read(start - 1, 100)
    log.update_config(LogConfig(segment_bytes=250, retention_ms=-1, retention_bytes=0))
    log.delete_old_segments(now_ms=0)
    assert log.log_start_offset == log.log_end_offset == 8
    assert log.segments[-1].size == 0
    log.close()


def test_retention_never_passes_high_watermark(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=250, retention_ms=0)
    for _ in range(6):
        log.append_as_leader([batch(1)], leader_epoch=0)
    log.update_high_watermark(1)
    assert log.delete_old_segments(now_ms=10**12) == 0
    log.close()


def test_reopen_restores_offsets_and_metadata(tmp_path: Path) -> None:
    topic_id = uuid.uuid4()
    path = tmp_path / "orders-3"
    log = PartitionLog.open(path, LogConfig(segment_bytes=250), topic_id=topic_id)
    for epoch in range(4):
        log.append_as_leader([batch(2)], leader_epoch=epoch)
    log.update_high_watermark(5)
    before = [b.data for b in read_all(log)]
    log.close()
    text = (path / "partition.metadata").read_text()
    assert text.startswith("version: 0\ntopic_id: ")
    reopened = PartitionLog.open(path, LogConfig(segment_bytes=250))
    assert reopened.topic_id == topic_id
    assert (reopened.log_end_offset, reopened.high_watermark) == (8, 5)
    assert [b.data for b in read_all(reopened)] == before
    assert reopened.epoch_cache.epoch_entries == log.epoch_cache.epoch_entries
    reopened.close()
    with pytest.raises(InconsistentTopicIdError):
        PartitionLog.open(path, LogConfig(), topic_id=uuid.uuid4())


def test_an_empty_partition_metadata_file_is_written_again_at_open(tmp_path: Path) -> None:
    """``partition.metadata`` is written without fsync (synced with the log's next flush),
    so a machine crash may leave it empty: the next open writes the topic id again."""
    topic_id = uuid.uuid4()
    path = tmp_path / "orders-0"
    PartitionLog.open(path, LogConfig(), topic_id=topic_id).close()
    (path / "partition.metadata").write_text("")
    reopened = PartitionLog.open(path, LogConfig(), topic_id=topic_id)
    assert reopened.topic_id == topic_id
    reopened.close()
    assert PartitionLog.open(path, LogConfig()).topic_id == topic_id


def test_reopen_rebuilds_missing_indexes(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    log = open_log(path, segment_bytes=400, index_interval_bytes=1)
    for _ in range(8):
        log.append_as_leader([batch(1)], leader_epoch=0)
    entries = [s.offset_index.entries() for s in log.segments]
    log.close()
    for index in path.glob("*.index"):
        index.unlink()
    reopened = open_log(path, segment_bytes=400, index_interval_bytes=1)
    assert [s.offset_index.entries() for s in reopened.segments] == entries
    assert reopened.log_end_offset == 8
    reopened.close()


def test_log_manager(tmp_path: Path) -> None:
    manager = LogManager(tmp_path)
    log = manager.get_or_create("my-topic", 2, LogConfig())
    assert manager.get_or_create("my-topic", 2, LogConfig()) is log
    log.append_as_leader([batch(1)], leader_epoch=0)
    assert (tmp_path / "my-topic-2").is_dir()
    assert manager.on_disk_partitions() == [("my-topic", 2)]
    manager.close()
    again = LogManager(tmp_path)
    assert again.get("my-topic", 2) is None
    assert again.get_or_create("my-topic", 2, LogConfig()).log_end_offset == 1
    again.delete("my-topic", 2)
    assert not (tmp_path / "my-topic-2").exists()
    again.close()


def test_config_from_topic_config() -> None:
    config = LogConfig.from_topic_config(
        {"retention.ms": "5", "cleanup.policy": "delete,compact", "min.insync.replicas": "2"}
    )
    assert config.retention_ms == 5
    assert config.cleanup_policy == "compact,delete"
    assert config.compact and config.delete
    assert config.segment_bytes == 1073741824
    with pytest.raises(ValueError):
        LogConfig.from_topic_config({"cleanup.policy": "forever"})


def _segment_files(directory: Path) -> list[str]:
    return sorted(
        p.name for p in directory.iterdir() if p.suffix in (".log", ".index", ".timeindex")
    )


def test_every_segment_gets_its_index_files_when_created(tmp_path: Path) -> None:
    """Kafka creates ``.index`` and ``.timeindex`` with the segment, not with its first
    index entry: a small partition has them too, before and after a clean close."""
    directory = tmp_path / "t-0"
    log = open_log(directory, segment_bytes=250)
    assert _segment_files(directory) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
    ]
    while len(log.segments) < 2:
        log.append_as_leader([batch(1)], leader_epoch=0)
    second = f"{log.segments[1].base_offset:020d}"
    log.close()
    assert {f"{second}.index", f"{second}.log", f"{second}.timeindex"} <= set(
        _segment_files(directory)
    )
    reopened = open_log(directory, segment_bytes=250)
    assert len(read_all(reopened)) == reopened.log_end_offset
    reopened.close()
