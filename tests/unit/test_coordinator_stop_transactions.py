"""The failover's stop cut from producer state and ``.txnindex``, never from the batches."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.broker.log.segment import LogSegment
from mirrorsim.broker.log.txn_index import CompletedAbort
from mirrorsim.coordinator.stop_transactions import transactions_deciding_stop_cut
from mirrorsim.fetcher.truncation import TxnSpan, stop_truncation_offset, transaction_spans
from mirrorsim.protocol.records import (
    ControlRecordType,
    RawBatch,
    Record,
    build_batch,
    build_control_batch,
    decode_control_batch,
)

TS = 1_700_000_000_000
PIDS = (11, 12, 13)

# One event per offset: a transactional data batch, its producer's COMMIT or ABORT, or a
# plain record.
Event = tuple[str, int]
events = st.lists(
    st.tuples(st.sampled_from(["data", "commit", "abort", "plain"]), st.sampled_from(PIDS)),
    max_size=40,
)


def facts(history: list[Event]) -> list[tuple[int, int, bool, bool, bool | None]]:
    """``transaction_spans`` input; a marker for a producer with no open transaction is a
    stray marker, which Kafka's coordinator can write after a timeout."""
    rows: list[tuple[int, int, bool, bool, bool | None]] = []
    for offset, (kind, pid) in enumerate(history):
        if kind == "plain":
            rows.append((offset, -1, False, False, None))
        elif kind == "data":
            rows.append((offset, pid, True, False, None))
        else:
            rows.append((offset, pid, True, True, kind == "abort"))
    return rows


def full_scan(history: list[Event]) -> list[TxnSpan]:
    return transaction_spans(facts(history))


@given(history=events, high_watermark_fraction=st.floats(0, 1))
def test_the_cut_equals_the_full_scan_and_reads_no_index_below_it(
    history: list[Event], high_watermark_fraction: float
) -> None:
    spans = full_scan(history)
    open_transactions = {s.producer_id: s.first_offset for s in spans if s.marker_offset is None}
    index = [
        CompletedAbort(s.producer_id, s.first_offset, s.marker_offset, s.marker_offset + 1)
        for s in spans
        if s.aborted and s.marker_offset is not None
    ]
    high_watermark = round(len(history) * high_watermark_fraction)
    first_unstable = min(open_transactions.values(), default=None)
    lso = high_watermark
    if first_unstable is not None and first_unstable < high_watermark:
        lso = first_unstable
    asked: list[int] = []

    def aborted_ending_at_or_after(offset: int) -> list[CompletedAbort]:
        asked.append(offset)
        return [e for e in index if e.last_offset >= offset]

    deciding = transactions_deciding_stop_cut(
        last_stable_offset=lso,
        log_start_offset=0,
        open_transactions=open_transactions,
        aborted_ending_at_or_after=aborted_ending_at_or_after,
    )
    cut = stop_truncation_offset(lso, spans)
    assert stop_truncation_offset(lso, deciding) == cut
    assert asked[0] == lso
    assert all(offset >= cut for offset in asked)
    assert asked == sorted(asked, reverse=True)


def test_a_chain_of_straddling_aborts_widens_the_window_each_time() -> None:
    # 13 aborts (marker 9) from 5; 12 aborts (marker 6) from 2; the LSO (high watermark)
    # is 7: the first read finds only 13, whose cut exposes 12's marker at 6.
    history: list[Event] = [
        ("plain", 0),
        ("plain", 0),
        ("data", 12),
        ("plain", 0),
        ("plain", 0),
        ("data", 13),
        ("abort", 12),
        ("plain", 0),
        ("plain", 0),
        ("abort", 13),
    ]
    spans = full_scan(history)
    index = [
        CompletedAbort(s.producer_id, s.first_offset, s.marker_offset, 0)
        for s in spans
        if s.aborted and s.marker_offset is not None
    ]
    asked: list[int] = []

    def aborted_ending_at_or_after(offset: int) -> list[CompletedAbort]:
        asked.append(offset)
        return [e for e in index if e.last_offset >= offset]

    deciding = transactions_deciding_stop_cut(
        last_stable_offset=7,
        log_start_offset=0,
        open_transactions={},
        aborted_ending_at_or_after=aborted_ending_at_or_after,
    )
    assert stop_truncation_offset(7, deciding) == 2
    assert asked == [7, 5, 2]


def test_first_offsets_below_the_log_start_are_raised_to_it() -> None:
    deciding = transactions_deciding_stop_cut(
        last_stable_offset=50,
        log_start_offset=40,
        open_transactions={},
        aborted_ending_at_or_after=lambda _: [CompletedAbort(11, 10, 60, 61)],
    )
    assert deciding == [TxnSpan(11, 40, 60, aborted=True)]
    assert stop_truncation_offset(50, deciding) == 40


# -- on a real log -------------------------------------------------------------------------


def data(offset: int, pid: int = -1, *, txn: bool = False, n: int = 1) -> RawBatch:
    return build_batch(
        [Record(offset + i, TS, b"k", b"v" * 64) for i in range(n)],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=0 if pid >= 0 else -1,
        is_transactional=txn,
    )


def marker(offset: int, pid: int, kind: ControlRecordType) -> RawBatch:
    return build_control_batch(
        kind, producer_id=pid, producer_epoch=0, base_offset=offset, timestamp=TS
    )


def large_log(path: Path) -> tuple[PartitionLog, int]:
    """Hundreds of segments with committed and aborted transactions throughout, then a
    transaction aborted across the high watermark and one left open: what a mirror holds
    when the source fails mid-transaction. Returns the log and its high watermark."""
    log = PartitionLog.open(path, LogConfig(segment_bytes=1024), clock=lambda: 1.0)
    offset = 0
    for round_ in range(300):
        pid = 100 + round_ % 7
        kind = ControlRecordType.ABORT if round_ % 3 == 0 else ControlRecordType.COMMIT
        log.append_as_follower([data(offset, pid, txn=True, n=3), data(offset + 3)])
        log.append_as_follower([marker(offset + 4, pid, kind)])
        offset += 5
    straddling_first = offset
    log.append_as_follower([data(offset, 7, txn=True, n=2), data(offset + 2)])
    log.append_as_follower([data(offset + 3, 8, txn=True)])
    log.append_as_follower([marker(offset + 4, 7, ControlRecordType.ABORT)])
    high_watermark = straddling_first + 3
    log.update_high_watermark(high_watermark)
    assert len(log.segments) > 100
    return log, straddling_first


def scanned_spans(log: PartitionLog) -> list[TxnSpan]:
    rows: list[tuple[int, int, bool, bool, bool | None]] = []
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


def test_the_stop_cut_of_a_large_log_reads_no_batch(tmp_path: Path) -> None:
    log, straddling_first = large_log(tmp_path / "mirror")
    expected = stop_truncation_offset(log.last_stable_offset, scanned_spans(log))
    assert expected == straddling_first
    lso, log_start = log.last_stable_offset, log.log_start_offset
    open_transactions = log.producer_state.ongoing_transactions()

    with pytest.MonkeyPatch.context() as patch:
        no_batch_reads_here(patch)
        deciding = transactions_deciding_stop_cut(
            last_stable_offset=lso,
            log_start_offset=log_start,
            open_transactions=open_transactions,
            aborted_ending_at_or_after=log.aborted_transactions_ending_at_or_after,
        )
    assert stop_truncation_offset(lso, deciding) == expected
    assert deciding == [
        TxnSpan(7, straddling_first, straddling_first + 4, aborted=True),
        TxnSpan(8, straddling_first + 3, None, aborted=False),
    ]
    log.close()


def no_batch_reads_here(patch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the stop cut read a batch")

    for method in ("read_at", "headers", "batches", "translate_offset"):
        patch.setattr(LogSegment, method, refuse)
