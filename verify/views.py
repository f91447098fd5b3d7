"""The views of a partition log as Spark rows: one row per batch, or one per record.

The batch view is what convergence is proven on: mirroring copies batches byte for byte,
so equal fingerprints (a digest of the whole batch, base offset and leader epoch
included) mean equal logs. ``crc_valid`` recomputes the CRC32C so a corrupted byte is
told apart from a batch that was legitimately written differently.

The record view decodes batches (decompressing them) and exists to say which record
differs and to check what a committed consumer offset points at. It comes in two forms:
``records`` carries every key and value as they are, for reading a log; ``record_digests``
carries each key and value as a short digest (``content_digest``), which is what the
record-level check compares. Comparing records means shuffling both logs into a join,
and with 1 KB values that moves every value through Spark; a digest of at most 33 bytes
makes it a few dozen bytes a record while still telling which field differs and showing
the 16-byte prefix a report prints of a value.

Records are decoded straight into Arrow columns, one list per column and no object per
record, because the record view is as many rows as the log has records.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from mirrorsim.protocol.records import HEADER_SIZE, Compression, CorruptRecordError, RawBatch
from mirrorsim.protocol.records.compression import decompress
from mirrorsim.protocol.records.raw_batch import ATTR_COMPRESSION_MASK, ATTR_TIMESTAMP_TYPE
from mirrorsim.protocol.records.varint import read_long_varint

BATCH_SCHEMA = (
    "topic string, partition int, base_offset long, last_offset long, leader_epoch int, "
    "crc long, crc_valid boolean, producer_id long, producer_epoch int, base_sequence int, "
    "is_control boolean, is_transactional boolean, compression string, size int, "
    "first_timestamp long, max_timestamp long, records_count int, fingerprint binary"
)
RECORD_SCHEMA = (
    "topic string, partition int, offset long, timestamp long, key binary, value binary, "
    "headers array<struct<key: string, value: binary>>"
)
RECORD_DIGEST_SCHEMA = (
    "topic string, partition int, offset long, timestamp long, key_digest binary, "
    "value_digest binary, headers array<struct<key: string, value: binary>>"
)
FINGERPRINT_SIZE = 16
# Rows per Arrow batch handed to Spark: big enough to amortize the conversion per call,
# small enough to keep a task's memory flat.
ARROW_BATCH_ROWS = 4096

# A key or value of at most INLINE_DIGEST_BYTES is its own digest. A longer one becomes
# its first SHOWN_PREFIX_BYTES followed by HASH_BYTES of SHA-256: INLINE_DIGEST_BYTES + 1
# bytes in all, so it can never equal an inlined value, and its prefix is what a report
# shows of the value itself. SHA-256 because with the CPU's SHA extensions it hashes 1 KB
# in two thirds of BLAKE2b's time, and collisions would need an adversary, not a bug.
INLINE_DIGEST_BYTES = 32
SHOWN_PREFIX_BYTES = 16
HASH_BYTES = INLINE_DIGEST_BYTES + 1 - SHOWN_PREFIX_BYTES


def fingerprint(data: bytes) -> bytes:
    """A digest of the exact batch bytes; collisions would need an adversary, not a bug."""
    return hashlib.blake2b(data, digest_size=FINGERPRINT_SIZE).digest()


def content_digest(data: bytes | None) -> bytes | None:
    """What ``record_digests`` holds for a key or value: equal exactly when the bytes
    are, and starting with the bytes' first ``SHOWN_PREFIX_BYTES`` and longer than that
    exactly when they are, so a report renders it as it would render the bytes."""
    if data is None or len(data) <= INLINE_DIGEST_BYTES:
        return data
    return _long_digest(data)


def _long_digest(data: bytes | memoryview) -> bytes:
    """The digest of a value longer than ``INLINE_DIGEST_BYTES``; it takes a view so the
    decoder hashes a value without copying it out of its batch first."""
    return bytes(data[:SHOWN_PREFIX_BYTES]) + hashlib.sha256(data).digest()[:HASH_BYTES]


def batch_row(topic: str, partition: int, batch: RawBatch) -> tuple[Any, ...]:
    """One batch as a tuple in ``BATCH_SCHEMA`` order."""
    return (
        topic,
        partition,
        batch.base_offset,
        batch.last_offset,
        batch.partition_leader_epoch,
        batch.crc,
        batch.is_valid(),
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.is_control,
        batch.is_transactional,
        batch.compression.name.lower(),
        batch.size,
        batch.base_timestamp,
        batch.max_timestamp,
        batch.records_count,
        fingerprint(batch.data),
    )


_HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def _record_arrow_schema(key: str, value: str) -> pa.Schema:
    return pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.int64()),
            (key, pa.binary()),
            (value, pa.binary()),
            ("headers", _HEADERS_TYPE),
        ]
    )


_RECORD_ARROW_SCHEMA = _record_arrow_schema("key", "value")
_RECORD_DIGEST_ARROW_SCHEMA = _record_arrow_schema("key_digest", "value_digest")


def record_arrow_batches(
    topic: str,
    partition: int,
    batches: Iterable[RawBatch],
    start_offset: int | None = None,
    end_offset: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """The ``records`` view of ``batches`` in [start_offset, end_offset), as Arrow."""
    return _record_view(
        _RECORD_ARROW_SCHEMA, sys.maxsize, topic, partition, batches, start_offset, end_offset
    )


def record_digest_batches(
    topic: str,
    partition: int,
    batches: Iterable[RawBatch],
    start_offset: int | None = None,
    end_offset: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """The ``record_digests`` view of ``batches`` in [start_offset, end_offset), as Arrow."""
    return _record_view(
        _RECORD_DIGEST_ARROW_SCHEMA,
        INLINE_DIGEST_BYTES,
        topic,
        partition,
        batches,
        start_offset,
        end_offset,
    )


class _RecordColumns:
    """The columns of the records decoded so far; headers are flattened, with the end of
    each record's run of headers in ``header_ends``, which is Arrow's list layout."""

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.header_ends: list[int] = [0]
        self.header_keys: list[str] = []
        self.header_values: list[bytes | None] = []

    def to_arrow(self, schema: pa.Schema, topic: str, partition: int) -> pa.RecordBatch:
        rows = len(self.offsets)
        headers = pa.ListArray.from_arrays(
            pa.array(self.header_ends, pa.int32()),
            pa.StructArray.from_arrays(
                [
                    pa.array(self.header_keys, pa.string()),
                    pa.array(self.header_values, pa.binary()),
                ],
                fields=list(_HEADERS_TYPE.value_type),
            ),
        )
        return pa.RecordBatch.from_arrays(
            [
                pa.repeat(pa.scalar(topic, pa.string()), rows),
                pa.repeat(pa.scalar(partition, pa.int32()), rows),
                pa.array(self.offsets, pa.int64()),
                pa.array(self.timestamps, pa.int64()),
                pa.array(self.keys, pa.binary()),
                pa.array(self.values, pa.binary()),
                headers,
            ],
            schema=schema,
        )


def _record_view(
    schema: pa.Schema,
    inline_bytes: int,
    topic: str,
    partition: int,
    batches: Iterable[RawBatch],
    start_offset: int | None,
    end_offset: int | None,
) -> Iterator[pa.RecordBatch]:
    start = -sys.maxsize - 1 if start_offset is None else start_offset
    end = sys.maxsize if end_offset is None else end_offset
    columns = _RecordColumns()
    for batch in batches:
        _decode_into(columns, batch, inline_bytes, start, end)
        if len(columns.offsets) >= ARROW_BATCH_ROWS:
            yield columns.to_arrow(schema, topic, partition)
            columns = _RecordColumns()
    if columns.offsets:
        yield columns.to_arrow(schema, topic, partition)


def _records_section(batch: RawBatch) -> tuple[bytes, int]:
    """The bytes holding the records of ``batch`` and where in them the first starts."""
    if batch.records_count < 0:
        raise CorruptRecordError(f"negative record count {batch.records_count}")
    codec_id = batch.attributes & ATTR_COMPRESSION_MASK
    if codec_id == Compression.NONE:
        return bytes(batch.data), HEADER_SIZE
    try:
        codec = Compression(codec_id)
    except ValueError:
        raise CorruptRecordError(f"unknown compression codec id {codec_id}") from None
    return decompress(codec, memoryview(batch.data)[HEADER_SIZE:]), 0


def _decode_into(
    columns: _RecordColumns, batch: RawBatch, inline_bytes: int, start: int, end: int
) -> None:
    """Append the records of ``batch`` with offsets in [start, end) to ``columns``, each
    key and value longer than ``inline_bytes`` as its ``content_digest``.

    This is ``decode_records`` (mirrorsim.protocol.records) writing columns instead of
    ``Record`` objects: the same bounds are checked and every one ends in
    CorruptRecordError, and every record of the batch is decoded, in range or not, so a
    batch is refused exactly when ``decode_records`` refuses it.
    """
    buf, pos = _records_section(batch)
    try:
        _read_records(columns, buf, pos, batch, inline_bytes, start, end)
    except IndexError:
        raise CorruptRecordError(
            f"records of batch at offset {batch.base_offset} end prematurely"
        ) from None


def _read_records(
    columns: _RecordColumns,
    buf: bytes,
    pos: int,
    batch: RawBatch,
    inline_bytes: int,
    start: int,
    end: int,
) -> None:
    """The loop of ``_decode_into``, with every name it uses bound locally: it runs once
    per record of the log."""
    view = memoryview(buf)
    long_digest = _long_digest
    buf_end = len(buf)
    base_offset = batch.base_offset
    base_timestamp = batch.base_timestamp
    log_append_time = batch.attributes & ATTR_TIMESTAMP_TYPE
    offsets, timestamps = columns.offsets, columns.timestamps
    keys, values = columns.keys, columns.values
    header_ends, header_keys, header_values = (
        columns.header_ends,
        columns.header_keys,
        columns.header_values,
    )
    for _ in range(batch.records_count):
        z = buf[pos]
        pos += 1
        if z >= 0x80:
            z, pos = read_long_varint(buf, pos, z)
        length = (z >> 1) ^ -(z & 1)
        record_end = pos + length
        if length <= 0 or record_end > buf_end:
            raise CorruptRecordError(f"record length {length} overruns its batch")
        pos += 1  # record attributes: unused in v2

        z = buf[pos]
        pos += 1
        if z >= 0x80:
            z, pos = read_long_varint(buf, pos, z)
        timestamp = base_timestamp + ((z >> 1) ^ -(z & 1))
        if log_append_time:
            timestamp = batch.max_timestamp

        z = buf[pos]
        pos += 1
        if z >= 0x80:
            z, pos = read_long_varint(buf, pos, z)
        offset = base_offset + ((z >> 1) ^ -(z & 1))

        z = buf[pos]
        pos += 1
        if z >= 0x80:
            z, pos = read_long_varint(buf, pos, z)
        size = (z >> 1) ^ -(z & 1)
        if size > inline_bytes:
            key: bytes | None = long_digest(view[pos : pos + size])
            pos += size
        elif size >= 0:
            key = buf[pos : pos + size]
            pos += size
        elif size == -1:
            key = None
        else:
            raise CorruptRecordError(f"negative key length {size}")

        z = buf[pos]
        pos += 1
        if z >= 0x80:
            z, pos = read_long_varint(buf, pos, z)
        size = (z >> 1) ^ -(z & 1)
        if size > inline_bytes:
            value: bytes | None = long_digest(view[pos : pos + size])
            pos += size
        elif size >= 0:
            value = buf[pos : pos + size]
            pos += size
        elif size == -1:
            value = None
        else:
            raise CorruptRecordError(f"negative value length {size}")

        z = buf[pos]
        pos += 1
        if z >= 0x80:
            z, pos = read_long_varint(buf, pos, z)
        header_count = (z >> 1) ^ -(z & 1)
        in_range = start <= offset < end
        if header_count != 0:
            if header_count < 0 or header_count > record_end - pos:
                raise CorruptRecordError(f"invalid header count {header_count}")
            for _ in range(header_count):
                z = buf[pos]
                pos += 1
                if z >= 0x80:
                    z, pos = read_long_varint(buf, pos, z)
                size = (z >> 1) ^ -(z & 1)
                if size < 0 or pos + size > record_end:
                    raise CorruptRecordError(f"invalid header key length {size}")
                try:
                    name = buf[pos : pos + size].decode()
                except UnicodeDecodeError as exc:
                    raise CorruptRecordError(f"header key is not UTF-8: {exc}") from None
                pos += size

                z = buf[pos]
                pos += 1
                if z >= 0x80:
                    z, pos = read_long_varint(buf, pos, z)
                size = (z >> 1) ^ -(z & 1)
                if size >= 0:
                    header_value: bytes | None = buf[pos : pos + size]
                    pos += size
                elif size == -1:
                    header_value = None
                else:
                    raise CorruptRecordError(f"negative header value length {size}")
                if in_range:
                    header_keys.append(name)
                    header_values.append(header_value)

        if pos != record_end:
            raise CorruptRecordError(
                f"record at offset {offset} declares {length} bytes but holds "
                f"{length + pos - record_end}"
            )
        if in_range:
            offsets.append(offset)
            timestamps.append(timestamp)
            keys.append(key)
            values.append(value)
            header_ends.append(len(header_keys))
    if pos != buf_end:
        raise CorruptRecordError(f"{buf_end - pos} bytes follow the last record of the batch")


BATCHES = "batches"
RECORDS = "records"
RECORD_DIGESTS = "record_digests"
VIEW_SCHEMAS = {
    BATCHES: BATCH_SCHEMA,
    RECORDS: RECORD_SCHEMA,
    RECORD_DIGESTS: RECORD_DIGEST_SCHEMA,
}
RECORD_VIEWS = {RECORDS: record_arrow_batches, RECORD_DIGESTS: record_digest_batches}


def chosen_view(options: Any, source_name: str) -> str:
    """The ``view`` option of a mirrorsim data source: ``batches`` (default), ``records``
    or ``record_digests``."""
    view = str(options.get("view", BATCHES)).lower()
    if view not in VIEW_SCHEMAS:
        choices = ", ".join(f"'{name}'" for name in VIEW_SCHEMAS)
        raise ValueError(f"{source_name} view must be one of {choices}, not {view!r}")
    return view
