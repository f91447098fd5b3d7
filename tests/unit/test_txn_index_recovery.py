"""The ``.txnindex`` survives a process crash whole: flushed entries are kept, and the
aborts after the recovery point are indexed again while producer state is replayed."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.protocol.records import (
    ControlRecordType,
    RawBatch,
    Record,
    build_batch,
    build_control_batch,
)

TS = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=400)
PIDS = (21, 22, 23)

steps = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["data", "commit", "abort"]), st.sampled_from(PIDS)),
        st.tuples(st.sampled_from(["plain", "flush", "roll"]), st.just(0)),
    ),
    max_size=40,
)


def data(offset: int, pid: int) -> RawBatch:
    return build_batch(
        [Record(offset, TS, b"k", b"v" * 40)],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=0 if pid >= 0 else -1,
        is_transactional=pid >= 0,
    )


def marker(offset: int, pid: int, kind: ControlRecordType) -> RawBatch:
    return build_control_batch(
        kind, producer_id=pid, producer_epoch=0, base_offset=offset, timestamp=TS
    )


def build(log: PartitionLog, history: list[tuple[str, int]]) -> None:
    for kind, pid in history:
        offset = log.log_end_offset
        if kind == "flush":
            log.flush()
        elif kind == "roll":
            log.roll()
        elif kind == "plain":
            log.append_as_follower([data(offset, -1)])
        elif kind == "data":
            log.append_as_follower([data(offset, pid)])
        else:
            kind_ = ControlRecordType.ABORT if kind == "abort" else ControlRecordType.COMMIT
            log.append_as_follower([marker(offset, pid, kind_)])


def crash_and_reopen(log: PartitionLog) -> PartitionLog:
    """The process dies: appended bytes are in the page cache, nothing else is flushed."""
    for segment in log.segments:
        segment.close()
    return PartitionLog.open(log.dir, CONFIG)


def index_of(log: PartitionLog) -> list[tuple[int, int, int, int]]:
    return [
        (e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
        for e in log.aborted_transactions_ending_at_or_after(log.log_start_offset)
    ]


@settings(max_examples=60, deadline=None)
@given(history=steps)
def test_a_crash_keeps_every_abort_in_the_index(history: list[tuple[str, int]]) -> None:
    directory = Path(tempfile.mkdtemp(prefix="txnindex-"))
    try:
        log = PartitionLog.open(directory / "t-0", CONFIG)
        build(log, history)
        before = index_of(log)
        aborted_before = log.collect_aborted_transactions(0, log.log_end_offset)
        log = crash_and_reopen(log)
        assert index_of(log) == before
        assert log.collect_aborted_transactions(0, log.log_end_offset) == aborted_before
        log = crash_and_reopen(log)
        assert index_of(log) == before
        log.close()
        log = PartitionLog.open(directory / "t-0", CONFIG)
        assert index_of(log) == before
        log.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_flushed_and_unflushed_aborts_both_survive(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", CONFIG)
    build(log, [("data", 21), ("abort", 21), ("flush", 0), ("data", 22), ("abort", 22)])
    log = crash_and_reopen(log)
    assert index_of(log) == [(21, 0, 1, 2), (22, 2, 3, 4)]
    log.close()
