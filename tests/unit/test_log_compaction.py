"""Compaction: latest value per key, offsets and gaps kept, tombstone and marker
horizons, aborted transactions, the active segment and the LSO left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrorsim.broker.log import AppendOrigin, InvalidRecordError, LogConfig, PartitionLog
from mirrorsim.broker.log.cleaner import CLEANER_CHECKPOINT, clean_segments
from mirrorsim.protocol.records import (
    ControlRecordType,
    RawBatch,
    Record,
    build_batch,
    build_control_batch,
    decode_records,
)

DAY = 86_400_000


def compacted_log(path: Path, **overrides: object) -> PartitionLog:
    settings: dict[str, object] = {
        "cleanup_policy": "compact",
        "segment_bytes": 300,
        "min_cleanable_dirty_ratio": 0.0,
        "delete_retention_ms": DAY,
    }
    settings.update(overrides)
    return PartitionLog.open(path, LogConfig(**settings))  # type: ignore[arg-type]


def put(log: PartitionLog, key: bytes, value: bytes | None, **producer: int | bool) -> int:
    batch = build_batch([Record(0, 1_000, key, value)], **producer)  # type: ignore[arg-type]
    offset = log.append_as_leader([batch], leader_epoch=0).first_offset
    log.update_high_watermark(log.log_end_offset)
    return offset


def contents(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [
        (r.offset, r.key, r.value)
        for b in log.batches()
        if not b.is_control
        for r in decode_records(b)
    ]


def test_keeps_latest_value_per_key_and_offsets(tmp_path: Path) -> None:
    log = compacted_log(tmp_path / "c-0")
    for round_ in range(4):
        for key in (b"a", b"b", b"c"):
            put(log, key, b"%s%d" % (key, round_))
    active_before = log.active_segment.base_offset
    stats = log.compact(now_ms=0)
    assert stats.segments_cleaned > 0
    records = contents(log)
    cleaned = [r for r in records if r[0] < active_before]
    latest = {key: value for _, key, value in records}
    assert latest == {b"a": b"a3", b"b": b"b3", b"c": b"c3"}
    keys_below = [key for _, key, _ in cleaned]
    assert len(keys_below) == len(set(keys_below))
    assert [o for o, _, _ in records] == sorted(o for o, _, _ in records)
    assert log.log_end_offset == 12
    assert log.read(0, 10_000).first_offset == records[0][0]


def test_active_segment_and_unstable_data_are_not_cleaned(tmp_path: Path) -> None:
    log = compacted_log(tmp_path / "c-0", segment_bytes=10_000)
    for i in range(5):
        put(log, b"k", b"%d" % i)
    assert log.compact(now_ms=0).segments_cleaned == 0
    assert len(contents(log)) == 5


def test_tombstones_stay_until_delete_horizon(tmp_path: Path) -> None:
    log = compacted_log(tmp_path / "c-0")
    put(log, b"gone", b"value")
    put(log, b"gone", None)
    for i in range(8):
        put(log, b"other", b"%d" % i)
    log.compact(now_ms=1_000)
    assert (b"gone", None) in [(k, v) for _, k, v in contents(log)]
    tombstone_batch = next(
        b for b in log.batches() if any(r.key == b"gone" for r in decode_records(b))
    )
    assert tombstone_batch.has_delete_horizon and tombstone_batch.base_timestamp == 1_000 + DAY
    assert tombstone_batch.is_valid()
    assert [r.timestamp for r in decode_records(tombstone_batch)] == [1_000]
    log.compact(now_ms=1_000 + DAY - 1)
    assert b"gone" in [k for _, k, _ in contents(log)]
    stats = log.compact(now_ms=1_000 + DAY)
    assert stats.tombstones_removed == 1
    assert b"gone" not in [k for _, k, _ in contents(log)]


def test_aborted_records_and_spent_markers_go(tmp_path: Path) -> None:
    log = compacted_log(tmp_path / "c-0")
    txn = {"producer_id": 7, "producer_epoch": 0, "is_transactional": True}
    put(log, b"t", b"aborted", base_sequence=0, **txn)
    abort = build_control_batch(
        ControlRecordType.ABORT, producer_id=7, producer_epoch=0, timestamp=5
    )
    log.append_as_leader([abort], leader_epoch=0, origin=AppendOrigin.COORDINATOR)
    put(log, b"t", b"committed", base_sequence=1, **txn)
    commit = build_control_batch(
        ControlRecordType.COMMIT, producer_id=7, producer_epoch=0, timestamp=5
    )
    log.append_as_leader([commit], leader_epoch=0, origin=AppendOrigin.COORDINATOR)
    for i in range(8):
        put(log, b"filler", b"%d" % i)
    stats = log.compact(now_ms=0)
    assert stats.aborted_records_removed == 1
    assert [v for _, k, v in contents(log) if k == b"t"] == [b"committed"]
    markers = [b for b in log.batches() if b.is_control]
    assert len(markers) == 2
    put(log, b"t", b"newer")
    for i in range(8):
        put(log, b"filler", b"x%d" % i)
    log.compact(now_ms=0)
    log.compact(now_ms=2 * DAY)
    assert not [b for b in log.batches() if b.is_control and b.base_offset < 4]


def test_last_batch_of_a_producer_survives_empty(tmp_path: Path) -> None:
    log = compacted_log(tmp_path / "c-0")
    put(log, b"k", b"from-producer", producer_id=3, producer_epoch=0, base_sequence=0)
    for i in range(8):
        put(log, b"k", b"%d" % i)
    log.compact(now_ms=0)
    first = next(log.batches())
    assert (first.base_offset, first.producer_id, first.records_count) == (0, 3, 0)
    assert first.is_valid()
    log.close()
    reopened = compacted_log(tmp_path / "c-0")
    assert reopened.producer_state.producers[3].last_seq == 0
    reopened.close()


def test_compacted_topic_refuses_keyless_records(tmp_path: Path) -> None:
    log = compacted_log(tmp_path / "c-0")
    with pytest.raises(InvalidRecordError):
        log.append_as_leader([build_batch([Record(0, 1, None, b"v")])], leader_epoch=0)


def test_cleaned_log_survives_reopen_and_crash(tmp_path: Path) -> None:
    log = compacted_log(tmp_path / "c-0")
    for i in range(20):
        put(log, b"k%d" % (i % 3), b"%d" % i)
    log.compact(now_ms=0)
    before: list[RawBatch] = list(log.batches())
    log.close()
    (tmp_path / "c-0" / ".kafka_cleanshutdown").unlink()
    (tmp_path / "c-0" / "recovery-point-offset-checkpoint").unlink()
    reopened = compacted_log(tmp_path / "c-0")
    assert [b.data for b in reopened.batches()] == [b.data for b in before]
    reopened.close()


def test_segment_emptied_by_compaction_does_not_block_retention(tmp_path: Path) -> None:
    log = compacted_log(tmp_path / "c-0", cleanup_policy="compact,delete", retention_ms=-1)
    for i in range(12):
        put(log, b"k", b"%d" % i)
    log.compact(now_ms=0)
    assert log.segments[0].size == 0
    expected_start = log.segments[2].base_offset
    log.update_config(
        LogConfig(
            cleanup_policy="compact,delete",
            segment_bytes=300,
            retention_ms=-1,
            retention_bytes=log.size_in_bytes - log.segments[1].size,
        )
    )
    assert log.delete_old_segments(now_ms=0) == 2
    assert log.log_start_offset == expected_start


def test_truncation_rewinds_the_cleaner_checkpoint(tmp_path: Path) -> None:
    log = compacted_log(tmp_path / "c-0", min_cleanable_dirty_ratio=0.5)
    for i in range(12):
        put(log, b"k%d" % (i % 2), b"%d" % i)
    assert log.compact(now_ms=0).segments_cleaned > 0
    assert log.compact(now_ms=0).segments_cleaned == 0
    log.truncate_to(2)
    for i in range(12):
        put(log, b"k%d" % (i % 2), b"again%d" % i)
    assert log.compact(now_ms=0).segments_cleaned > 0
    assert {k: v for _, k, v in contents(log)} == {b"k0": b"again10", b"k1": b"again11"}


# -- a cleaning spread over the event loop and a worker thread ---------------------------


def filled_log(path: Path) -> PartitionLog:
    log = compacted_log(path)
    for round_ in range(4):
        for key in (b"a", b"b", b"c"):
            put(log, key, b"%s%d" % (key, round_))
    return log


def leftovers(log: PartitionLog) -> list[str]:
    return sorted(p.name for p in log.dir.iterdir() if p.name.endswith(".cleaned"))


def test_appends_between_the_plan_and_the_commit_do_not_stop_a_cleaning(tmp_path: Path) -> None:
    log = filled_log(tmp_path / "c-0")
    plan = log.plan_cleaning(now_ms=0)
    assert plan is not None
    copies = clean_segments(plan)
    for round_ in range(4, 8):
        put(log, b"a", b"a%d" % round_)
    stats = log.commit_cleaning(plan, copies)
    assert stats is not None and stats.segments_cleaned == len(plan.segments)
    assert contents(log)[-1] == (log.log_end_offset - 1, b"a", b"a7")
    assert not leftovers(log)


@pytest.mark.parametrize("change", ["truncate", "delete_records", "close"])
def test_a_log_changed_under_a_cleaning_keeps_its_segments(tmp_path: Path, change: str) -> None:
    """The worker read segments a truncation, a retention pass or a close took away (or
    cut): nothing is swapped in, the copies are deleted, the log is as the change left it."""
    log = filled_log(tmp_path / "c-0")
    plan = log.plan_cleaning(now_ms=0)
    assert plan is not None
    copies = clean_segments(plan)
    assert len(leftovers(log)) >= len(plan.segments)
    if change == "truncate":
        log.truncate_to(plan.segments[-1].base_offset + 1)
    elif change == "delete_records":
        log.maybe_increment_log_start_offset(plan.segments[1].base_offset)
        assert log.delete_old_segments() > 0
    expected = contents(log) if change != "close" else None
    if change == "close":
        log.close()
    assert log.commit_cleaning(plan, copies) is None
    assert not leftovers(log)
    if expected is not None:
        assert contents(log) == expected
        assert not (log.dir / CLEANER_CHECKPOINT).exists()


def test_a_log_below_its_dirty_ratio_is_cleaned_once_past_max_compaction_lag(
    tmp_path: Path,
) -> None:
    """KIP-354: ``max.compaction.lag.ms`` bounds how long a dirty record may wait, whatever
    ``min.cleanable.dirty.ratio`` says."""
    log = compacted_log(
        tmp_path / "c-0", min_cleanable_dirty_ratio=0.9, max_compaction_lag_ms=60_000
    )
    for round_ in range(6):
        for key in (b"a", b"b", b"c", b"d", b"e"):
            put(log, key, b"%s%d" % (key, round_))
    assert log.compact(now_ms=2_000).segments_cleaned > 0
    segments = len(log.segments)
    while len(log.segments) < segments + 1:
        put(log, b"a", b"late")
    # the records are stamped 1,000: dirty for 1 s, then for 199 s
    assert log.compact(now_ms=2_000).segments_cleaned == 0
    assert log.compact(now_ms=200_000).segments_cleaned > 0
