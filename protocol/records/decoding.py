"""Reading the records out of a v2 batch.

The record loop runs once per record on every consumer-style read (verification, log
dumps, the mirror state topic), so the one-byte varint case is inlined and the loop works
on ``bytes`` directly: indexing yields ints and slicing yields the key and value without
a second copy. Every bound a corrupt batch could break ends in CorruptRecordError, never
IndexError or struct.error.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirrorsim.protocol.records.compression import decompress
from mirrorsim.protocol.records.raw_batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE,
    Compression,
    CorruptRecordError,
    RawBatch,
)
from mirrorsim.protocol.records.record import Header, Record
from mirrorsim.protocol.records.varint import read_long_varint


@dataclass(frozen=True, slots=True)
class DecodedBatch(RawBatch):
    """A raw batch whose records are also decoded; it is still appendable as raw bytes."""

    records: tuple[Record, ...]

    @classmethod
    def from_bytes(cls, data: bytes) -> DecodedBatch:
        """Parse, CRC-check and decode exactly one batch."""
        return decode_batch(RawBatch.from_bytes(data))


def decode_batch(batch: RawBatch, *, verify_crc: bool = True) -> DecodedBatch:
    """Decode ``batch`` (checking its CRC32C first unless told not to)."""
    if verify_crc:
        batch.ensure_valid()
    return DecodedBatch(
        batch.base_offset,
        batch.batch_length,
        batch.partition_leader_epoch,
        batch.magic,
        batch.crc,
        batch.attributes,
        batch.last_offset_delta,
        batch.base_timestamp,
        batch.max_timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.records_count,
        batch.data,
        tuple(decode_records(batch)),
    )


def decode_records(batch: RawBatch) -> list[Record]:
    """The records of ``batch``, decompressed if needed. The CRC is not checked here."""
    if batch.records_count < 0:
        raise CorruptRecordError(f"negative record count {batch.records_count}")
    codec_id = batch.attributes & ATTR_COMPRESSION_MASK
    if codec_id == Compression.NONE:
        buf, pos = batch.data, HEADER_SIZE
    else:
        try:
            codec = Compression(codec_id)
        except ValueError:
            raise CorruptRecordError(f"unknown compression codec id {codec_id}") from None
        buf, pos = decompress(codec, memoryview(batch.data)[HEADER_SIZE:]), 0
    log_append_time = batch.max_timestamp if batch.attributes & ATTR_TIMESTAMP_TYPE else None
    try:
        return _read_records(
            buf,
            pos,
            batch.records_count,
            batch.base_offset,
            batch.base_timestamp,
            log_append_time,
        )
    except IndexError:
        raise CorruptRecordError(
            f"records of batch at offset {batch.base_offset} end prematurely"
        ) from None


def _read_records(
    buf: bytes,
    pos: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
) -> list[Record]:
    end = len(buf)
    records: list[Record] = []
    append = records.append
    for _ in range(count):
        z = buf[pos]
        pos += 1
        if z >= 0x80:
            z, pos = read_long_varint(buf, pos, z)
        length = (z >> 1) ^ -(z & 1)
        record_end = pos + length
        if length <= 0 or record_end > end:
            raise CorruptRecordError(f"record length {length} overruns its batch")
        pos += 1  # record attributes: unused in v2

        z = buf[pos]
        pos += 1
        if z >= 0x80:
            z, pos = read_long_varint(buf, pos, z)
        timestamp = base_timestamp + ((z >> 1) ^ -(z & 1))
        if log_append_time is not None:
            timestamp = log_append_time

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
        if size >= 0:
            key: bytes | None = buf[pos : pos + size]
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
        if size >= 0:
            value: bytes | None = buf[pos : pos + size]
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
        if header_count == 0:
            headers: tuple[Header, ...] = ()
        else:
            if header_count < 0 or header_count > record_end - pos:
                raise CorruptRecordError(f"invalid header count {header_count}")
            header_list: list[Header] = []
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
                    header_list.append((name, buf[pos : pos + size]))
                    pos += size
                elif size == -1:
                    header_list.append((name, None))
                else:
                    raise CorruptRecordError(f"negative header value length {size}")
            headers = tuple(header_list)

        if pos != record_end:
            raise CorruptRecordError(
                f"record at offset {offset} declares {length} bytes but holds "
                f"{length + pos - record_end}"
            )
        append(Record(offset, timestamp, key, value, headers))
    if pos != end:
        raise CorruptRecordError(f"{end - pos} bytes follow the last record of the batch")
    return records
