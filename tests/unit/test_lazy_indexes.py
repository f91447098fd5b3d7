"""The indexes of a reopened segment are read on first use, not when the log opens."""

from __future__ import annotations

from pathlib import Path

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.protocol.records import Record, build_batch, decode_records, iter_batches

SEGMENT_BYTES = 2_000
INDEX_INTERVAL = 100


def filled_log(path: Path) -> PartitionLog:
    log = PartitionLog.open(
        path, LogConfig(segment_bytes=SEGMENT_BYTES, index_interval_bytes=INDEX_INTERVAL)
    )
    for i in range(60):
        batch = build_batch([Record(0, 1_000 + i, b"k", b"value-%03d" % i + b"." * 40)])
        log.append_as_leader([batch], leader_epoch=0)
    log.close()
    return PartitionLog.open(path, log.config)


def values_from(log: PartitionLog, offset: int) -> list[bytes]:
    values = []
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20)
        values += [r.value for b in iter_batches(result.records) for r in decode_records(b)]
        offset = result.next_offset
    return values


def test_a_reopened_log_reads_only_the_indexes_it_uses(tmp_path: Path) -> None:
    log = filled_log(tmp_path / "t-0")
    assert len(log.segments) >= 4
    closed = log.segments[:-1]
    assert not any(s.offset_index.is_loaded or s.time_index.is_loaded for s in closed)
    assert all(len(s.offset_index) > 0 for s in log.segments[:-1])
    assert log.log_end_offset == 60
    assert values_from(log, 45) == [b"value-%03d" % i + b"." * 40 for i in range(45, 60)]
    used = [s for s in log.segments if s.offset_index.is_loaded]
    assert used and log.segments[0] not in used
    assert log.offset_for_timestamp(1_010) is not None
    log.close()


def test_an_index_found_corrupt_on_first_use_is_rebuilt_empty(tmp_path: Path) -> None:
    log = filled_log(tmp_path / "t-0")
    first = log.segments[0]
    path = first.offset_index.path
    entries = path.read_bytes()
    assert len(entries) >= 16
    swapped = entries[8:16] + entries[:8] + entries[16:]
    log.close()
    path.write_bytes(swapped)
    reopened = PartitionLog.open(tmp_path / "t-0", log.config)
    assert values_from(reopened, 0) == [b"value-%03d" % i + b"." * 40 for i in range(60)]
    assert reopened.segments[0].offset_index.entries() == []
    assert path.read_bytes() == b""
    reopened.close()
