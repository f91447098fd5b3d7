"""Idempotent producers, transactions, MIRROR_PID_RESET and producer snapshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrorsim.broker.log import (
    AbortedTxn,
    AppendOrigin,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    LogConfig,
    OutOfOrderSequenceError,
    PartitionLog,
)
from mirrorsim.protocol.records import (
    ControlRecordType,
    RawBatch,
    Record,
    build_batch,
    build_control_batch,
)

PID = 4242


def produce(seq: int, n: int = 1, *, pid: int = PID, epoch: int = 0, txn: bool = False) -> RawBatch:
    return build_batch(
        [Record(i, 1_000, b"k", b"v") for i in range(n)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=txn,
    )


def marker(kind: ControlRecordType, *, pid: int = PID, epoch: int = 0) -> RawBatch:
    if kind is ControlRecordType.MIRROR_PID_RESET:
        return build_control_batch(
            kind, producer_id=-1, producer_epoch=-1, timestamp=1_000, source_cluster_id="src"
        )
    return build_control_batch(kind, producer_id=pid, producer_epoch=epoch, timestamp=1_000)


def append_marker(log: PartitionLog, batch: RawBatch) -> None:
    log.append_as_leader([batch], leader_epoch=0, origin=AppendOrigin.COORDINATOR)


@pytest.fixture
def log(tmp_path: Path) -> PartitionLog:
    opened = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=400))
    yield opened
    opened.close()


def test_duplicate_batch_reports_original_offsets(log: PartitionLog) -> None:
    log.append_as_leader([produce(0, 3)], leader_epoch=0)
    log.append_as_leader([produce(3, 2)], leader_epoch=0)
    with pytest.raises(DuplicateSequenceError) as caught:
        log.append_as_leader([produce(0, 3)], leader_epoch=0)
    assert (caught.value.first_offset, caught.value.last_offset) == (0, 2)
    assert log.log_end_offset == 5


def test_sequence_gap_and_fenced_epoch(log: PartitionLog) -> None:
    log.append_as_leader([produce(0, 2, epoch=1)], leader_epoch=0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader([produce(5, epoch=1)], leader_epoch=0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader([produce(3, epoch=2)], leader_epoch=0)
    log.append_as_leader([produce(0, epoch=2)], leader_epoch=0)
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader([produce(2, epoch=1)], leader_epoch=0)
    assert log.log_end_offset == 3


def test_refused_append_leaves_no_trace(log: PartitionLog) -> None:
    log.append_as_leader([produce(0)], leader_epoch=0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader([produce(1), produce(7)], leader_epoch=0)
    assert log.log_end_offset == 1
    log.append_as_leader([produce(1)], leader_epoch=0)


def test_clients_may_not_write_control_batches(log: PartitionLog) -> None:
    with pytest.raises(InvalidRecordError):
        log.append_as_leader([marker(ControlRecordType.COMMIT)], leader_epoch=0)


def test_transactions_hold_back_lso_and_index_aborts(log: PartitionLog) -> None:
    log.append_as_leader([produce(0, 2, txn=True)], leader_epoch=0)
    log.append_as_leader([produce(0, pid=7)], leader_epoch=0)
    log.append_as_leader([produce(2, txn=True)], leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 0
    append_marker(log, marker(ControlRecordType.ABORT))
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == log.high_watermark == 5
    assert log.collect_aborted_transactions(0, 5) == [AbortedTxn(PID, 0)]
    assert log.collect_aborted_transactions(5, 10) == []
    log.append_as_leader([produce(3, txn=True)], leader_epoch=0)
    append_marker(log, marker(ControlRecordType.COMMIT))
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 7
    assert log.collect_aborted_transactions(0, 7) == [AbortedTxn(PID, 0)]


def test_mirror_pid_reset_forgets_producers(log: PartitionLog) -> None:
    log.append_as_leader([produce(0, 2)], leader_epoch=0)
    log.append_as_leader([produce(0, pid=9, txn=True)], leader_epoch=0)
    append_marker(log, marker(ControlRecordType.MIRROR_PID_RESET))
    assert log.producer_state.producers == {}
    assert log.producer_state.first_unstable_offset is None
    log.append_as_leader([produce(40)], leader_epoch=0)


def test_follower_applies_reset_and_skips_checks(tmp_path: Path) -> None:
    follower = PartitionLog.open(tmp_path / "f-0", LogConfig())
    batches = [
        produce(0).with_base_offset(0),
        produce(9).with_base_offset(1),
        marker(ControlRecordType.MIRROR_PID_RESET).with_base_offset(2),
    ]
    follower.append_as_follower(batches[:2])
    assert follower.producer_state.producers[PID].last_seq == 9
    follower.append_as_follower(batches[2:])
    assert follower.producer_state.producers == {}
    follower.close()


def test_state_survives_reopen_with_and_without_snapshots(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    log = PartitionLog.open(path, LogConfig(segment_bytes=300))
    for seq in range(0, 12, 2):
        log.append_as_leader([produce(seq, 2)], leader_epoch=0)
    log.append_as_leader([produce(0, pid=5, txn=True)], leader_epoch=0)
    log.close()
    assert list(path.glob("*.snapshot"))
    for clean_restart in (True, False):
        if not clean_restart:
            for snapshot in path.glob("*.snapshot"):
                snapshot.unlink()
        reopened = PartitionLog.open(path, LogConfig(segment_bytes=300))
        with pytest.raises(DuplicateSequenceError):
            reopened.append_as_leader([produce(10, 2)], leader_epoch=0)
        assert reopened.producer_state.ongoing_transactions() == {5: 12}
        reopened.close()


def test_truncation_rewinds_producer_state(log: PartitionLog) -> None:
    for seq in range(0, 10, 2):
        log.append_as_leader([produce(seq, 2)], leader_epoch=0)
    log.truncate_to(6)
    assert log.producer_state.producers[PID].last_seq == 5
    log.append_as_leader([produce(6, 2)], leader_epoch=0)
