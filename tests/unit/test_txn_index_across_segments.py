"""Aborted transactions that span segment rolls: what a READ_COMMITTED fetch reports and
where a failover's stop cut lands.

An abort is indexed in the segment of its ABORT marker. A transaction that began in an
earlier segment must still be reported to a fetch of that earlier segment alone, or a
read_committed consumer delivers its records.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.log import AbortedTxn, LogConfig, PartitionLog
from mirrorsim.coordinator.stop_transactions import transactions_deciding_stop_cut
from mirrorsim.fetcher.truncation import stop_truncation_offset, transaction_spans
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
SMALL_SEGMENTS = LogConfig(segment_bytes=200)

EXAMPLE_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else None
"""Every batch here rolls a segment, and a roll fsyncs the producer snapshot and the
checkpoints: on a RAM-backed directory an example costs milliseconds instead of seconds."""

Event = tuple[str, int]
"""One batch per event: a transactional data batch of the producer, its COMMIT or ABORT
marker (only while it has a transaction open), or a plain record."""


def data(offset: int, pid: int = -1, *, txn: bool = False) -> RawBatch:
    return build_batch(
        [Record(offset, TS, b"k", b"v" * 64)],
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


def write(log: PartitionLog, history: list[Event]) -> list[tuple[int, int, int]]:
    """Appends ``history`` one batch per offset; returns the aborted transactions as
    (producer id, first offset, marker offset)."""
    open_since: dict[int, int] = {}
    aborted = []
    for offset, (kind, pid) in enumerate(history):
        if kind == "plain":
            log.append_as_follower([data(offset)])
        elif kind == "data":
            log.append_as_follower([data(offset, pid, txn=True)])
            open_since.setdefault(pid, offset)
        elif pid in open_since:
            is_abort = kind == "abort"
            log.append_as_follower(
                [
                    marker(
                        offset,
                        pid,
                        ControlRecordType.ABORT if is_abort else ControlRecordType.COMMIT,
                    )
                ]
            )
            first = open_since.pop(pid)
            if is_abort:
                aborted.append((pid, first, offset))
        else:
            log.append_as_follower([data(offset)])
    return aborted


def scanned_spans(log: PartitionLog) -> list:
    rows = []
    for batch in log.batches():
        is_abort = None
        if batch.is_control:
            is_abort = decode_control_batch(batch).kind is ControlRecordType.ABORT
        rows.append(
            (
                batch.base_offset,
                batch.producer_id,
                batch.is_transactional,
                batch.is_control,
                is_abort,
            )
        )
    return transaction_spans(rows)


histories = st.lists(
    st.tuples(st.sampled_from(["data", "data", "commit", "abort", "plain"]), st.sampled_from(PIDS)),
    min_size=1,
    max_size=60,
)


@settings(max_examples=100, deadline=None)
@given(history=histories, fraction=st.floats(0, 1))
def test_fetch_reports_every_abort_overlapping_its_range_whatever_the_segments(
    history: list[Event], fraction: float
) -> None:
    with tempfile.TemporaryDirectory(dir=EXAMPLE_DIR) as directory:
        log = PartitionLog.open(Path(directory) / "t-0", SMALL_SEGMENTS, clock=lambda: 1.0)
        try:
            aborted = write(log, history)
            end = log.log_end_offset
            for start in range(end):
                upper = start + 1 + int(fraction * (end - start - 1))
                expected = {
                    AbortedTxn(pid, first)
                    for pid, first, last in aborted
                    if last >= start and first < upper
                }
                reported = log.collect_aborted_transactions(start, upper)
                assert set(reported) == expected, (start, upper)
                assert len(reported) == len(expected)
        finally:
            log.close()


@settings(max_examples=100, deadline=None)
@given(history=histories, fraction=st.floats(0, 1))
def test_stop_cut_from_the_indexes_equals_a_full_scan_across_segments(
    history: list[Event], fraction: float
) -> None:
    with tempfile.TemporaryDirectory(dir=EXAMPLE_DIR) as directory:
        log = PartitionLog.open(Path(directory) / "t-0", SMALL_SEGMENTS, clock=lambda: 1.0)
        try:
            write(log, history)
            log.update_high_watermark(int(fraction * log.log_end_offset))
            lso = log.last_stable_offset
            deciding = transactions_deciding_stop_cut(
                last_stable_offset=lso,
                log_start_offset=log.log_start_offset,
                open_transactions=log.producer_state.ongoing_transactions(),
                aborted_ending_at_or_after=log.aborted_transactions_ending_at_or_after,
            )
            assert stop_truncation_offset(lso, deciding) == stop_truncation_offset(
                lso, scanned_spans(log)
            )
        finally:
            log.close()


def test_a_fetch_of_the_first_segment_reports_an_abort_indexed_in_a_later_one(
    tmp_path: Path,
) -> None:
    """The reported case: one transaction over several segments, aborted; a fetch that
    ends at the first segment roll must report it."""
    log = PartitionLog.open(tmp_path / "t-0", SMALL_SEGMENTS, clock=lambda: 1.0)
    try:
        aborted = write(log, [("data", 11)] * 12 + [("abort", 11)])
        assert aborted == [(11, 0, 12)]
        assert len(log.segments) > 2
        second = log.segments[1].base_offset
        assert log.segments[0].txn_index.entries == []
        assert log.collect_aborted_transactions(0, second) == [AbortedTxn(11, 0)]
        third = log.segments[2].base_offset
        assert log.collect_aborted_transactions(second, third) == [AbortedTxn(11, 0)]
        assert log.collect_aborted_transactions(13, 14) == []
    finally:
        log.close()


def test_a_reopened_log_still_reports_the_abort_to_the_first_segment(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    log = PartitionLog.open(path, SMALL_SEGMENTS, clock=lambda: 1.0)
    write(log, [("data", 11)] * 12 + [("abort", 11), ("plain", -1)])
    second = log.segments[1].base_offset
    log.close()
    reopened = PartitionLog.open(path, SMALL_SEGMENTS, clock=lambda: 1.0)
    try:
        assert reopened.collect_aborted_transactions(0, second) == [AbortedTxn(11, 0)]
    finally:
        reopened.close()
