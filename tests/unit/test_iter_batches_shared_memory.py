"""Splitting a fetched record set into batches that share its memory (iter_batches share_memory)."""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.protocol.records import Compression, Record, build_batch
from mirrorsim.protocol.records.control import ControlRecordType, build_control_batch
from mirrorsim.protocol.records.raw_batch import CorruptRecordError, RawBatch, iter_batches


def _data_batch(offset: int, values: list[bytes], compression: Compression) -> RawBatch:
    records = [Record(offset + i, 1_000 + i, None, value) for i, value in enumerate(values)]
    return build_batch(records, base_offset=offset, compression=compression)


def _control_batch(offset: int) -> RawBatch:
    return build_control_batch(
        ControlRecordType.COMMIT, producer_id=7, producer_epoch=0, base_offset=offset, timestamp=5
    )


batch_specs = st.lists(
    st.one_of(
        st.tuples(
            st.just("data"),
            st.lists(st.binary(max_size=50), min_size=1, max_size=5),
            st.sampled_from([Compression.NONE, Compression.LZ4, Compression.GZIP]),
        ),
        st.tuples(st.just("control"), st.just([]), st.just(Compression.NONE)),
    ),
    min_size=1,
    max_size=8,
)


def _record_set(specs: list[tuple[str, list[bytes], Compression]]) -> bytes:
    parts, offset = [], 0
    for kind, values, compression in specs:
        batch = (
            _control_batch(offset)
            if kind == "control"
            else _data_batch(offset, values, compression)
        )
        parts.append(batch.data)
        offset = batch.next_offset
    return b"".join(parts)


@settings(max_examples=100)
@given(specs=batch_specs, cut=st.integers(0, 60))
def test_the_same_batches_as_iter_batches_with_a_partial_tail_left_out(
    specs: list[tuple[str, list[bytes], Compression]], cut: int
) -> None:
    records = _record_set(specs)
    records = records[: max(0, len(records) - cut)]
    assert tuple(iter_batches(records, share_memory=True)) == tuple(iter_batches(records))


@settings(max_examples=50)
@given(specs=batch_specs)
def test_data_batches_are_views_of_the_record_set_and_control_batches_are_bytes(
    specs: list[tuple[str, list[bytes], Compression]],
) -> None:
    records = _record_set(specs)
    batches = tuple(iter_batches(records, share_memory=True))
    for batch in batches:
        if batch.is_control:
            assert isinstance(batch.data, bytes)
        else:
            assert isinstance(batch.data, memoryview)
            assert batch.data.readonly and batch.data.obj is records
        assert batch.is_valid()


def test_a_batch_shorter_than_its_header_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError):
        list(iter_batches(struct.pack(">qi", 0, 10) + bytes(10), share_memory=True))


@settings(max_examples=50)
@given(specs=batch_specs)
def test_each_batch_is_the_one_parsed_from_its_bytes(
    specs: list[tuple[str, list[bytes], Compression]],
) -> None:
    records = _record_set(specs)
    for batch in iter_batches(records, share_memory=True):
        assert batch == RawBatch.from_bytes(bytes(batch.data))


def test_a_batch_of_another_magic_is_refused() -> None:
    data = bytearray(_data_batch(0, [b"v"], Compression.NONE).data)
    data[16] = 1
    with pytest.raises(CorruptRecordError, match="magic 1"):
        list(iter_batches(bytes(data), share_memory=True))
