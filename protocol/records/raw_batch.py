"""RecordBatch v2 as it travels: a parsed 61-byte header plus the untouched bytes.

Mirroring and replication move batches without looking inside them, so the data path
never decompresses. Only the header is parsed; the bytes are kept exactly as received so
a follower or a mirror can append them and stay identical to the leader byte for byte.

Layout (Kafka's ``DefaultRecordBatch``)::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
    crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
    maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
    recordsCount int32 | records...

The CRC32C covers everything from ``attributes`` to the end, so the base offset and the
partition leader epoch can be rewritten (as a leader does on append) without touching it.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: bytes not counted by batchLength
CRC_START = 21
MAGIC_V2 = 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_EPOCH = struct.Struct(">i")


class CorruptRecordError(ValueError):
    """A batch that cannot be trusted: bad magic, bad length or CRC mismatch."""


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40


@dataclass(frozen=True, slots=True)
class RawBatch:
    """One v2 record batch: header fields plus the complete batch bytes (header included).

    ``data`` may be a read-only view into a fetched record set, so a mirror fetcher appends
    batches without copying them out of the response first.
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    data: bytes | memoryview

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> RawBatch:
        """Parse exactly one batch; ``data`` must hold the whole batch and nothing more."""
        if len(data) < HEADER_SIZE:
            raise CorruptRecordError(f"batch of {len(data)} bytes is shorter than its header")
        fields = HEADER.unpack_from(data, 0)
        if fields[3] != MAGIC_V2:
            raise CorruptRecordError(f"unsupported record batch magic {fields[3]}")
        if fields[1] + LOG_OVERHEAD != len(data):
            raise CorruptRecordError(
                f"batchLength {fields[1]} does not match {len(data) - LOG_OVERHEAD} bytes"
            )
        return cls(*fields, data)

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & ATTR_COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType(1 if self.attributes & ATTR_TIMESTAMP_TYPE else 0)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    def compute_crc(self) -> int:
        return crc32c.crc32c(memoryview(self.data)[CRC_START:])

    def is_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def ensure_valid(self) -> None:
        actual = self.compute_crc()
        if actual != self.crc:
            raise CorruptRecordError(
                f"CRC mismatch in batch at offset {self.base_offset}: "
                f"stored {self.crc}, computed {actual}"
            )

    def with_base_offset(self, base_offset: int) -> RawBatch:
        """The same batch at another base offset (a leader assigning offsets)."""
        buf = bytearray(self.data)
        struct.pack_into(">q", buf, 0, base_offset)
        return _replace_bytes(self, bytes(buf), base_offset=base_offset)

    def with_partition_leader_epoch(self, epoch: int) -> RawBatch:
        """The same batch stamped with a leader epoch (a leader on append)."""
        buf = bytearray(self.data)
        _EPOCH.pack_into(buf, 12, epoch)
        return _replace_bytes(self, bytes(buf), partition_leader_epoch=epoch)

    def with_offset_and_epoch(self, base_offset: int, epoch: int) -> RawBatch:
        buf = bytearray(self.data)
        struct.pack_into(">q", buf, 0, base_offset)
        _EPOCH.pack_into(buf, 12, epoch)
        return _replace_bytes(
            self, bytes(buf), base_offset=base_offset, partition_leader_epoch=epoch
        )


def _replace_bytes(batch: RawBatch, data: bytes, **changes: int) -> RawBatch:
    values = {name: getattr(batch, name) for name in RawBatch.__slots__}
    values.update(changes)
    values["data"] = data
    return RawBatch(**values)


def peek_batch_size(buf: bytes | memoryview, pos: int = 0) -> int | None:
    """Total size of the batch starting at ``pos``, or None if the length field is not there."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    _, length = _OFFSET_AND_LENGTH.unpack_from(buf, pos)
    return length + LOG_OVERHEAD


def iter_batches(
    buf: bytes | memoryview, *, allow_partial_tail: bool = True, share_memory: bool = False
) -> Iterator[RawBatch]:
    """Split a records blob (Produce/Fetch ``records`` or a segment) into raw batches.

    A Fetch response may end in a partial batch cut by ``max.bytes``; Kafka clients skip it,
    and so does this with ``allow_partial_tail``. Otherwise a short tail is corruption.

    Each batch owns a copy of its bytes unless ``share_memory``: then its ``data`` is a
    read-only view of ``buf``, so a mirror fetcher that checks each CRC and appends the
    batches unchanged does not touch every mirrored byte once more. Control batches are
    copied either way, because decoding their control record (for producer state) wants
    ``bytes``.

    This runs once per fetched batch before a fetcher can ask for more, so each header is
    unpacked once and the batch is built from those fields (see :func:`_from_header`).
    """
    view = memoryview(buf).toreadonly() if share_memory else memoryview(buf)
    unpack = HEADER.unpack_from
    pos = 0
    end = len(view)
    while pos < end:
        fields = unpack(view, pos) if end - pos >= HEADER_SIZE else None
        size = peek_batch_size(view, pos) if fields is None else fields[1] + LOG_OVERHEAD
        if size is None or pos + size > end:
            if allow_partial_tail:
                return
            raise CorruptRecordError(f"truncated batch at byte {pos}")
        if size < HEADER_SIZE or fields is None:  # no fields: too short for a header
            raise CorruptRecordError(f"batch at byte {pos} declares {size} bytes")
        if fields[3] != MAGIC_V2:
            raise CorruptRecordError(f"unsupported record batch magic {fields[3]}")
        piece = view[pos : pos + size]
        if not share_memory or fields[5] & ATTR_CONTROL:
            piece = bytes(piece)
        yield _from_header(fields, piece)
        pos += size


def first_corrupt(batches: Iterable[RawBatch]) -> RawBatch | None:
    """The first of ``batches`` whose CRC does not match its bytes, if any."""
    for batch in batches:
        if not batch.is_valid():
            return batch
    return None


_new_object = object.__new__
_SLOT_SETTERS = tuple(getattr(RawBatch, name).__set__ for name in RawBatch.__slots__)
(
    _set_base_offset,
    _set_batch_length,
    _set_partition_leader_epoch,
    _set_magic,
    _set_crc,
    _set_attributes,
    _set_last_offset_delta,
    _set_base_timestamp,
    _set_max_timestamp,
    _set_producer_id,
    _set_producer_epoch,
    _set_base_sequence,
    _set_records_count,
    _set_data,
) = _SLOT_SETTERS


def _from_header(fields: tuple[int, ...], data: bytes | memoryview) -> RawBatch:
    """``RawBatch(*fields, data)`` for fields already checked, at half the cost.

    A frozen dataclass's ``__init__`` assigns each of the fourteen fields through
    ``object.__setattr__``; writing the slots through their descriptors directly builds
    the same immutable batch, which matters at tens of thousands of batches per second.
    """
    batch = _new_object(RawBatch)
    _set_base_offset(batch, fields[0])
    _set_batch_length(batch, fields[1])
    _set_partition_leader_epoch(batch, fields[2])
    _set_magic(batch, fields[3])
    _set_crc(batch, fields[4])
    _set_attributes(batch, fields[5])
    _set_last_offset_delta(batch, fields[6])
    _set_base_timestamp(batch, fields[7])
    _set_max_timestamp(batch, fields[8])
    _set_producer_id(batch, fields[9])
    _set_producer_epoch(batch, fields[10])
    _set_base_sequence(batch, fields[11])
    _set_records_count(batch, fields[12])
    _set_data(batch, data)
    return batch
