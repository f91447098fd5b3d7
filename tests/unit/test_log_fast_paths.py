"""The log's mirroring hot paths agree with the batch-by-batch rules they shortcut.

A follower append decides segment rolls once for the whole append, and a read finds its
end from the segment end, the offset index and a short walk instead of every header.
Both are checked against a straightforward reference on generated logs.
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.protocol.records import RawBatch, Record, build_batch, iter_batches

SETTINGS = settings(max_examples=40, deadline=None)

# (records, value bytes, timestamp step, leader epoch step) of each generated batch
batch_shapes = st.lists(
    st.tuples(st.integers(1, 4), st.integers(0, 300), st.integers(0, 50), st.integers(0, 1)),
    min_size=1,
    max_size=30,
)


def source_batches(shapes: list[tuple[int, int, int, int]]) -> list[RawBatch]:
    """Batches as a source leader wrote them: contiguous offsets, rising epochs."""
    batches, offset, timestamp, epoch = [], 0, 1_000, 0
    for count, value_bytes, timestamp_step, epoch_step in shapes:
        timestamp += timestamp_step
        epoch += epoch_step
        records = [Record(i, timestamp, b"k", b"v" * value_bytes) for i in range(count)]
        batch = build_batch(records).with_offset_and_epoch(offset, epoch)
        batches.append(batch)
        offset = batch.next_offset
    return batches


def config(segment_bytes: int, segment_ms: int = 60) -> LogConfig:
    return LogConfig(segment_bytes=segment_bytes, index_interval_bytes=200, segment_ms=segment_ms)


Layout = list[tuple[int, int, list[tuple[int, int]], list[tuple[int, int]]]]


def layout(log: PartitionLog) -> Layout:
    return [
        (s.base_offset, s.size, s.offset_index.entries(), s.time_index.entries())
        for s in log.segments
    ]


@SETTINGS
@given(shapes=batch_shapes, segment_bytes=st.integers(1400, 4000), split=st.integers(1, 30))
def test_one_follower_append_lays_out_the_log_as_batch_by_batch_appends(
    shapes: list[tuple[int, int, int, int]], segment_bytes: int, split: int
) -> None:
    batches = source_batches(shapes)
    with tempfile.TemporaryDirectory() as tmp:
        whole = PartitionLog.open(Path(tmp) / "whole", config(segment_bytes))
        single = PartitionLog.open(Path(tmp) / "single", config(segment_bytes))
        for start in range(0, len(batches), split):
            whole.append_as_follower(batches[start : start + split], crc_checked=True)
        for batch in batches:
            single.append_as_follower([batch])
        assert layout(whole) == layout(single)
        assert whole.epoch_cache.epoch_entries == single.epoch_cache.epoch_entries
        assert whole.log_end_offset == single.log_end_offset == batches[-1].next_offset
        stored = [b for s in whole.segments for b in s.batches()]
        assert [b.data for b in stored] == [b.data for b in batches]
        whole.close()
        single.close()


def reference_read(
    batches: list[RawBatch], start: int, max_bytes: int, max_offset: int
) -> tuple[bytes, int]:
    """Whole batches from the one holding ``start``, below ``max_offset``, within
    ``max_bytes`` except that the first batch always goes (one segment)."""
    chosen: list[RawBatch] = []
    size = 0
    for batch in batches:
        if batch.last_offset < start:
            continue
        if batch.last_offset >= max_offset or (chosen and size + batch.size > max_bytes):
            break
        chosen.append(batch)
        size += batch.size
    next_offset = chosen[-1].next_offset if chosen else start
    return b"".join(b.data for b in chosen), next_offset


@SETTINGS
@given(
    shapes=batch_shapes,
    data=st.data(),
)
def test_a_read_ends_where_a_walk_over_every_batch_would(
    shapes: list[tuple[int, int, int, int]], data: st.DataObject
) -> None:
    batches = source_batches(shapes)
    end = batches[-1].next_offset
    start = data.draw(st.integers(0, end - 1), label="start")
    max_offset = data.draw(st.integers(start + 1, end), label="max_offset")
    max_bytes = data.draw(st.integers(1, sum(b.size for b in batches) + 10), label="max_bytes")
    with tempfile.TemporaryDirectory() as tmp:
        log = PartitionLog.open(Path(tmp) / "t-0", config(1 << 20, segment_ms=1 << 30))
        log.append_as_follower(batches)
        assert len(log.segments) == 1
        result = log.read(start, max_bytes, max_offset=max_offset)
        expected, next_offset = reference_read(batches, start, max_bytes, max_offset)
        assert result.records == expected
        assert result.next_offset == next_offset
        read = list(iter_batches(result.records))
        if read:
            assert result.first_offset == read[0].base_offset
        log.close()


@SETTINGS
@given(
    before=batch_shapes,
    after=batch_shapes,
    data=st.data(),
)
def test_a_read_after_a_truncation_sees_the_new_batches_at_a_remembered_offset(
    before: list[tuple[int, int, int, int]],
    after: list[tuple[int, int, int, int]],
    data: st.DataObject,
) -> None:
    """Offset lookups are remembered per segment; cutting the file must forget them."""
    old = source_batches(before)
    cut = data.draw(st.integers(0, old[-1].last_offset), label="cut")
    with tempfile.TemporaryDirectory() as tmp:
        log = PartitionLog.open(Path(tmp) / "t-0", config(1 << 20, segment_ms=1 << 30))
        log.append_as_follower(old)
        for batch in old:
            log.read(batch.base_offset, 1 << 20)
        log.truncate_to(cut)
        kept = [b for b in old if b.last_offset < log.log_end_offset]
        offset = log.log_end_offset
        new = [b.with_base_offset(b.base_offset + offset) for b in source_batches(after)]
        log.append_as_follower(new)
        for start in range(0, log.log_end_offset):
            expected = [b.data for b in kept + new if b.last_offset >= start]
            assert [b.data for b in iter_batches(log.read(start, 1 << 20).records)] == expected
        log.close()


def append_in_pieces(log: PartitionLog, batches: list[RawBatch], cuts: list[int]) -> None:
    """Append ``batches`` as several follower appends, split before each index in ``cuts``."""
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(batches)}), len(batches)]
    for start, stop in itertools.pairwise(bounds):
        log.append_as_follower(batches[start:stop])


@SETTINGS
@given(
    before=batch_shapes,
    after=batch_shapes,
    data=st.data(),
)
def test_reads_at_append_starts_stay_right_across_truncations(
    before: list[tuple[int, int, int, int]],
    after: list[tuple[int, int, int, int]],
    data: st.DataObject,
) -> None:
    """A segment keeps where its latest appends began; a cut must forget them, or a new
    batch at an offset an old append began at would be read from the old position."""
    old = source_batches(before)
    cut = data.draw(st.integers(0, old[-1].last_offset), label="cut")
    cuts = st.lists(st.integers(1, 30), max_size=6)
    with tempfile.TemporaryDirectory() as tmp:
        log = PartitionLog.open(Path(tmp) / "t-0", config(1 << 20, segment_ms=1 << 30))
        append_in_pieces(log, old, data.draw(cuts, label="old cuts"))
        log.truncate_to(cut)
        kept = [b for b in old if b.last_offset < log.log_end_offset]
        for start in range(0, log.log_end_offset + 1):
            expected = [b.data for b in kept if b.last_offset >= start]
            assert [b.data for b in iter_batches(log.read(start, 1 << 20).records)] == expected
        offset = log.log_end_offset
        new = [b.with_base_offset(b.base_offset + offset) for b in source_batches(after)]
        append_in_pieces(log, new, data.draw(cuts, label="new cuts"))
        for start in range(0, log.log_end_offset):
            expected = [b.data for b in kept + new if b.last_offset >= start]
            assert [b.data for b in iter_batches(log.read(start, 1 << 20).records)] == expected
        log.close()


def test_a_read_from_where_the_last_append_began_reads_the_file_once(tmp_path: Path) -> None:
    """A caught-up follower or consumer asks for exactly the first offset of the next
    append; the segment knows where that batch is without a lookup through the index."""
    batches = source_batches([(2, 200, 1, 0)] * 12)
    log = PartitionLog.open(tmp_path / "t-0", config(1 << 20, segment_ms=1 << 30))
    log.append_as_follower(batches[:6])
    log.append_as_leader(
        [b.with_base_offset(0) for b in source_batches([(3, 300, 1, 0)] * 2)], leader_epoch=0
    )
    segment = log.active_segment
    reads: list[tuple[int, int]] = []
    read_at = segment.read_at

    def counted(position: int, size: int) -> bytes:
        reads.append((position, size))
        return read_at(position, size)

    segment.read_at = counted  # type: ignore[method-assign]
    start = batches[5].next_offset
    result = log.read(start, 1 << 20)
    assert [b.last_offset_delta for b in iter_batches(result.records)] == [2, 2]
    assert result.first_offset == start
    assert len(reads) == 1
    log.close()
