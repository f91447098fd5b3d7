"""Writing v2 batches byte for byte as Kafka's ``MemoryRecordsBuilder`` does.

Records are encoded into one list of byte strings and joined once, so a batch costs one
copy of its payload (plus the codec's, when compressed).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import crc32c

from mirrorsim.protocol.records.compression import compress
from mirrorsim.protocol.records.raw_batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Compression,
    RawBatch,
    TimestampType,
)
from mirrorsim.protocol.records.record import Record
from mirrorsim.protocol.records.varint import encode_varint

_NULL = encode_varint(-1)
_NO_HEADERS = encode_varint(0)
_ATTRIBUTES = b"\x00"
_CRC = struct.Struct(">I")
_MAX_OFFSET_DELTA = (1 << 31) - 1


def build_batch(
    records: Iterable[Record],
    *,
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_control: bool = False,
    base_timestamp: int | None = None,
) -> RawBatch:
    """Encode ``records`` as one batch.

    Each record's offset and timestamp become deltas from ``base_offset`` and
    ``base_timestamp`` (default: the first record's timestamp, as Kafka's builder does).
    Offsets must increase but may have gaps, as in a compacted batch. The max timestamp
    is the largest record timestamp.
    """
    records = tuple(records)
    if not records:
        raise ValueError("a record batch needs at least one record")
    if base_timestamp is None:
        base_timestamp = records[0].timestamp

    parts: list[bytes] = []
    previous_delta = -1
    max_timestamp = records[0].timestamp
    for record in records:
        offset_delta = record.offset - base_offset
        if not previous_delta < offset_delta <= _MAX_OFFSET_DELTA:
            raise ValueError(
                f"offset {record.offset} does not follow the previous record's "
                f"within a batch based at {base_offset}"
            )
        previous_delta = offset_delta
        if record.timestamp > max_timestamp:
            max_timestamp = record.timestamp
        _append_record(
            parts,
            offset_delta,
            record.timestamp - base_timestamp,
            record.key,
            record.value,
            record.headers,
        )
    body = compress(compression, b"".join(parts))

    attributes = compression & ATTR_COMPRESSION_MASK
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL

    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(body)
    fields = (
        base_offset,
        batch_length,
        partition_leader_epoch,
        MAGIC_V2,
        0,
        attributes,
        previous_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    data = bytearray(HEADER_SIZE + len(body))
    try:
        HEADER.pack_into(data, 0, *fields)
    except struct.error as exc:
        raise ValueError(f"batch header field out of range: {exc}") from None
    data[HEADER_SIZE:] = body
    crc = crc32c.crc32c(memoryview(data)[CRC_START:])
    _CRC.pack_into(data, CRC_START - _CRC.size, crc)
    return RawBatch(*fields[:4], crc, *fields[5:], bytes(data))


def _append_record(
    parts: list[bytes],
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: tuple[tuple[str, bytes | None], ...],
) -> None:
    fields = [_ATTRIBUTES, encode_varint(timestamp_delta), encode_varint(offset_delta)]
    if key is None:
        fields.append(_NULL)
    else:
        fields.append(encode_varint(len(key)))
        fields.append(key)
    if value is None:
        fields.append(_NULL)
    else:
        fields.append(encode_varint(len(value)))
        fields.append(value)
    if headers:
        fields.append(encode_varint(len(headers)))
        for name, header_value in headers:
            encoded_name = name.encode("utf-8")
            fields.append(encode_varint(len(encoded_name)))
            fields.append(encoded_name)
            if header_value is None:
                fields.append(_NULL)
            else:
                fields.append(encode_varint(len(header_value)))
                fields.append(header_value)
    else:
        fields.append(_NO_HEADERS)
    parts.append(encode_varint(sum(map(len, fields))))
    parts.extend(fields)
