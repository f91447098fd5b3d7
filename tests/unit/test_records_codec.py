"""Round trips and corruption handling of the RecordBatch v2 codec."""

from __future__ import annotations

import struct
from dataclasses import replace

import cramjam
import crc32c
import pytest
import zstandard
from helpers.record_batches import (
    BatchSpec,
    batch_specs,
    expected_records,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrorsim.protocol.records import (
    HEADER_SIZE,
    Compression,
    CorruptRecordError,
    RawBatch,
    Record,
    TimestampType,
    build_batch,
    decode_batch,
    decode_records,
    iter_batches,
)
from mirrorsim.protocol.records.compression import XERIAL_MAGIC, compress, decompress
from mirrorsim.protocol.records.raw_batch import CRC_START, HEADER
from mirrorsim.protocol.records.varint import encode_varint, read_unsigned_varint

INT64 = st.integers(-(2**63), 2**63 - 1)


CODEC_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@CODEC_SETTINGS
@given(batch_specs())
def test_build_then_decode_round_trips_every_field(spec: BatchSpec) -> None:
    batch = spec.build()
    reparsed = RawBatch.from_bytes(batch.data)
    assert reparsed == batch
    reparsed.ensure_valid()
    assert reparsed.compression is spec.compression
    assert reparsed.timestamp_type is spec.timestamp_type
    assert reparsed.is_transactional is spec.is_transactional
    assert not reparsed.is_control
    assert (reparsed.producer_id, reparsed.producer_epoch, reparsed.base_sequence) == (
        spec.producer_id,
        spec.producer_epoch,
        spec.base_sequence,
    )
    assert reparsed.partition_leader_epoch == spec.partition_leader_epoch
    assert reparsed.base_offset == spec.base_offset
    assert reparsed.last_offset == spec.records[-1].offset
    assert reparsed.records_count == len(spec.records)
    assert reparsed.base_timestamp == spec.records[0].timestamp
    assert reparsed.max_timestamp == max(r.timestamp for r in spec.records)
    decoded = decode_batch(reparsed)
    assert list(decoded.records) == expected_records(spec)
    assert decoded.data == batch.data


@CODEC_SETTINGS
@given(batch_specs(codecs=st.just(Compression.NONE)))
def test_uncompressed_rebuild_is_byte_exact(spec: BatchSpec) -> None:
    """Decoding and building again reproduces the bytes: the codec loses nothing."""
    if spec.timestamp_type is TimestampType.LOG_APPEND_TIME:
        spec = replace(spec, timestamp_type=TimestampType.CREATE_TIME)
    batch = spec.build()
    rebuilt = build_batch(
        decode_records(batch),
        base_offset=batch.base_offset,
        timestamp_type=batch.timestamp_type,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        partition_leader_epoch=batch.partition_leader_epoch,
        base_timestamp=batch.base_timestamp,
    )
    assert rebuilt.data == batch.data


def test_explicit_base_timestamp_stores_negative_deltas() -> None:
    records = [Record(0, 1_000, b"k", b"v"), Record(1, 990, None, None)]
    batch = build_batch(records, base_timestamp=1_005)
    assert batch.base_timestamp == 1_005
    assert batch.max_timestamp == 1_000
    assert decode_records(batch) == records


def test_known_bytes_of_a_single_record_batch() -> None:
    """The record section matches the layout Kafka documents, byte for byte."""
    batch = build_batch([Record(0, 1_700_000_000_123, b"k", None, (("h", b"v"),))])
    record = batch.data[HEADER_SIZE:]
    # length 11 (zig-zag 22), attributes, ts delta 0, offset delta 0, key len 1 'k',
    # value null (-1 -> 1), 1 header: key len 1 'h', value len 1 'v'
    assert record == bytes([22, 0, 0, 0, 2]) + b"k" + bytes([1, 2, 2]) + b"h" + bytes([2]) + b"v"
    assert batch.base_timestamp == batch.max_timestamp == 1_700_000_000_123


@pytest.mark.parametrize("codec", list(Compression))
def test_compressible_batches_really_shrink(codec: Compression) -> None:
    records = [Record(i, 1_000 + i, b"key", b"value " * 200) for i in range(50)]
    batch = build_batch(records, compression=codec)
    plain = build_batch(records)
    if codec is not Compression.NONE:
        assert batch.size < plain.size // 5
    assert decode_records(batch) == records


def test_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        build_batch([])


@pytest.mark.parametrize("offsets", [[0, 0], [3, 2], [-1], [0, 2**31]])
def test_offsets_must_increase_within_int32_deltas(offsets: list[int]) -> None:
    with pytest.raises(ValueError, match="does not follow"):
        build_batch([Record(offset, 0, None, None) for offset in offsets])


def test_header_field_out_of_range_is_value_error() -> None:
    with pytest.raises(ValueError, match="out of range"):
        build_batch([Record(0, 0, None, None)], producer_epoch=2**15)


@given(INT64)
def test_varint_matches_kafka_zigzag(value: int) -> None:
    encoded = encode_varint(value)
    zigzag, end = read_unsigned_varint(encoded, 0)
    assert end == len(encoded) <= 10
    assert (zigzag >> 1) ^ -(zigzag & 1) == value
    assert zigzag == (value << 1) ^ (value >> 63)


# --- compression framing -------------------------------------------------------------


@given(st.binary(max_size=100_000))
@settings(max_examples=30, deadline=None)
def test_snappy_is_written_xerial_framed_in_32k_blocks(data: bytes) -> None:
    framed = compress(Compression.SNAPPY, data)
    assert framed.startswith(XERIAL_MAGIC)
    blocks = 0
    pos = 16
    while pos < len(framed):
        (length,) = struct.unpack_from(">i", framed, pos)
        pos += 4 + length
        blocks += 1
    assert blocks == -(-len(data) // (32 * 1024))
    assert decompress(Compression.SNAPPY, framed) == data


@given(st.binary(max_size=5_000))
@settings(max_examples=30, deadline=None)
def test_raw_snappy_as_librdkafka_writes_it_decodes(data: bytes) -> None:
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(Compression.SNAPPY, raw) == data


def test_lz4_frames_have_independent_blocks() -> None:
    framed = compress(Compression.LZ4, b"x" * 200_000)
    assert framed[:4] == b"\x04\x22\x4d\x18"
    frame_flags = framed[4]
    assert frame_flags >> 6 == 0b01
    assert frame_flags & 0x20, "block independence flag must be set (KIP-57)"


def test_zstd_frame_without_content_size_decodes() -> None:
    data = b"streamed by a producer " * 1000
    compressor = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    frame = compressor.compress(data) + compressor.flush()
    assert decompress(Compression.ZSTD, frame) == data


def test_gzip_with_several_members_decodes() -> None:
    members = bytes(cramjam.gzip.compress(b"first ")) + bytes(cramjam.gzip.compress(b"second"))
    assert decompress(Compression.GZIP, members) == b"first second"


# --- corruption ----------------------------------------------------------------------


@CODEC_SETTINGS
@given(batch_specs(), st.data())
def test_any_flipped_byte_after_the_epoch_is_detected(spec: BatchSpec, data: st.DataObject) -> None:
    """baseOffset and partitionLeaderEpoch are deliberately outside the CRC; every other
    byte is covered by the length, the magic or the CRC32C."""
    batch = spec.build()
    position = data.draw(st.integers(16, batch.size - 1))
    flip = data.draw(st.integers(1, 255))
    corrupted = bytearray(batch.data)
    corrupted[position] ^= flip
    with pytest.raises(CorruptRecordError):
        RawBatch.from_bytes(bytes(corrupted)).ensure_valid()


@CODEC_SETTINGS
@given(batch_specs(), st.data())
def test_truncated_batches_raise_corrupt_record_error(spec: BatchSpec, data: st.DataObject) -> None:
    batch = spec.build()
    cut = data.draw(st.integers(1, batch.size - 1))
    with pytest.raises(CorruptRecordError):
        RawBatch.from_bytes(batch.data[:cut])
    with pytest.raises(CorruptRecordError):
        list(iter_batches(batch.data + batch.data[:cut], allow_partial_tail=False))
    assert list(iter_batches(batch.data + batch.data[:cut])) == [batch]


def _with_records_section(batch: RawBatch, section: bytes, records_count: int) -> RawBatch:
    """A batch whose header agrees with a (possibly broken) records section and whose CRC
    is recomputed, so only the record decoder can notice the damage."""
    fields = list(HEADER.unpack_from(batch.data))
    fields[1] = HEADER_SIZE - 12 + len(section)
    fields[12] = records_count
    data = bytearray(HEADER.pack(*fields) + section)
    struct.pack_into(">I", data, CRC_START - 4, crc32c.crc32c(bytes(data[CRC_START:])))
    return RawBatch.from_bytes(bytes(data))


@CODEC_SETTINGS
@given(batch_specs(codecs=st.just(Compression.NONE)), st.data())
def test_mangled_records_with_a_valid_crc_fail_cleanly(
    spec: BatchSpec, data: st.DataObject
) -> None:
    batch = spec.build()
    section = bytearray(batch.data[HEADER_SIZE:])
    edit = data.draw(st.sampled_from(["truncate", "flip", "extend", "count"]))
    count = batch.records_count
    if edit == "truncate":
        section = section[: data.draw(st.integers(0, len(section) - 1))]
    elif edit == "flip":
        position = data.draw(st.integers(0, len(section) - 1))
        section[position] ^= data.draw(st.integers(1, 255))
    elif edit == "extend":
        section += data.draw(st.binary(min_size=1, max_size=12))
    else:
        count = data.draw(st.integers(-(2**31), 2**31 - 1).filter(lambda n: n != count))
    mangled = _with_records_section(batch, bytes(section), count)
    mangled.ensure_valid()
    try:
        decoded = decode_records(mangled)
    except CorruptRecordError:
        return
    assert edit == "flip", "only a flip inside a key, value or header can go unnoticed"
    assert len(decoded) == count


@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
@given(garbage=st.binary(max_size=64))
@settings(max_examples=40, deadline=None)
def test_garbage_compressed_sections_raise_corrupt_record_error(
    codec: Compression, garbage: bytes
) -> None:
    template = build_batch([Record(0, 0, b"k", b"v")], compression=codec)
    mangled = _with_records_section(template, garbage, 1)
    with pytest.raises(CorruptRecordError):
        decode_records(mangled)


def test_unknown_codec_id_is_corrupt() -> None:
    template = build_batch([Record(0, 0, b"k", b"v")])
    fields = list(HEADER.unpack_from(template.data))
    fields[5] = 6
    data = HEADER.pack(*fields) + template.data[HEADER_SIZE:]
    with pytest.raises(CorruptRecordError, match="codec"):
        decode_records(RawBatch.from_bytes(data))


def test_decode_batch_checks_the_crc_unless_told_not_to() -> None:
    batch = build_batch([Record(0, 0, b"k", b"value")])
    corrupted = bytearray(batch.data)
    corrupted[-2] ^= 0xFF  # the last byte of the value; the header count follows it
    broken = RawBatch.from_bytes(bytes(corrupted))
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_batch(broken)
    assert decode_batch(broken, verify_crc=False).records[0].value == b"valu" + bytes(
        [ord("e") ^ 0xFF]
    )
