"""The spec's "Exactly-Once Semantics" example, built with real batches on a PartitionLog.

Source log: 0,1 PID 4001 (txn), 2 PID 4002 (txn), 3 COMMIT 4001, 4 ABORT 4002,
5 non-transactional. The mirror received offsets 0..3 when the source failed.
"""

from __future__ import annotations

from pathlib import Path

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.broker.log.results import AppendOrigin
from mirrorsim.broker.txn.truncation_report import (
    DroppedRecord,
    dropped_records,
    truncate_to_last_stable_offset,
)
from mirrorsim.fetcher.truncation import stop_truncation_offset, transaction_spans
from mirrorsim.protocol.records import (
    ControlRecordType,
    RawBatch,
    Record,
    build_batch,
    build_control_batch,
    decode_control_batch,
    decode_records,
    iter_batches,
)

EPOCH = 3
TS = 1_700_000_000_000


def source_batches() -> list[RawBatch]:
    return [
        build_batch(
            [Record(0, TS, b"A", b"1"), Record(1, TS, b"B", b"2")],
            base_offset=0,
            producer_id=4001,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
            partition_leader_epoch=EPOCH,
        ),
        build_batch(
            [Record(2, TS, b"X", b"9")],
            base_offset=2,
            producer_id=4002,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
            partition_leader_epoch=EPOCH,
        ),
        build_control_batch(
            ControlRecordType.COMMIT,
            producer_id=4001,
            producer_epoch=0,
            base_offset=3,
            partition_leader_epoch=EPOCH,
            timestamp=TS,
        ),
        build_control_batch(
            ControlRecordType.ABORT,
            producer_id=4002,
            producer_epoch=0,
            base_offset=4,
            partition_leader_epoch=EPOCH,
            timestamp=TS,
        ),
        build_batch([Record(5, TS, b"Z", b"10")], base_offset=5, partition_leader_epoch=EPOCH),
    ]


def mirror_log(path: Path, batches: list[RawBatch]) -> PartitionLog:
    """A mirror appends the source's batches unchanged; its high watermark follows."""
    log = PartitionLog.open(path, LogConfig())
    log.append_as_follower(batches)
    log.update_high_watermark(log.log_end_offset)
    return log


def spans(log: PartitionLog) -> list:
    rows = []
    for batch in log.batches():
        aborted = None
        if batch.is_control:
            aborted = decode_control_batch(batch).kind is ControlRecordType.ABORT
        rows.append(
            (
                batch.base_offset,
                batch.producer_id,
                batch.is_transactional,
                batch.is_control,
                aborted,
            )
        )
    return transaction_spans(rows)


def test_the_complete_source_log_is_stable_with_4002_aborted(tmp_path: Path) -> None:
    log = mirror_log(tmp_path / "source", source_batches())
    assert log.last_stable_offset == log.high_watermark == 6
    aborted = log.collect_aborted_transactions(0, 6)
    assert [(t.producer_id, t.first_offset) for t in aborted] == [(4002, 2)]
    log.close()


def test_mirror_stopped_at_offset_4(tmp_path: Path) -> None:
    log = mirror_log(tmp_path / "mirror", source_batches()[:3])  # offsets 0..3
    assert (log.log_end_offset, log.high_watermark) == (4, 4)
    # 4001 committed at 3; 4002 began at 2 and has no marker: the LSO is its first offset.
    assert log.producer_state.ongoing_transactions() == {4002: 2}
    assert log.last_stable_offset == 2
    assert stop_truncation_offset(log.last_stable_offset, spans(log)) == 2

    assert dropped_records(log, 2) == [
        DroppedRecord(2, 4002, True, None, b"X"),
        DroppedRecord(3, 4001, True, "COMMIT", None),
    ]
    dropped = truncate_to_last_stable_offset(log)
    assert [d.offset for d in dropped] == [2, 3]
    kept = [r for b in iter_batches(log.read(0, 1 << 20).records) for r in _keys(b)]
    assert kept == [b"A", b"B"]

    # Cutting at the LSO took 4001's COMMIT marker with it, so 4001 reads as open again
    # and holds the LSO at 0 until the MIRROR_PID_RESET barrier forgets every producer.
    assert log.producer_state.ongoing_transactions() == {4001: 0}
    assert log.last_stable_offset == 0
    reset = build_control_batch(
        ControlRecordType.MIRROR_PID_RESET,
        producer_id=-1,
        producer_epoch=-1,
        timestamp=TS,
        source_cluster_id="source-cluster",
    )
    log.append_as_leader([reset], leader_epoch=EPOCH + 1, origin=AppendOrigin.COORDINATOR)
    log.update_high_watermark(log.log_end_offset)
    assert log.producer_state.ongoing_transactions() == {}
    assert log.last_stable_offset == log.high_watermark == 3
    # No abort is indexed for 4001, so read_committed consumers deliver A and B.
    assert log.collect_aborted_transactions(0, 3) == []
    log.close()


def _keys(batch: RawBatch) -> list[bytes | None]:
    return [] if batch.is_control else [r.key for r in decode_records(batch)]
