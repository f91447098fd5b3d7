"""Control records: transaction markers and the mirror's MIRROR_PID_RESET barrier.

A control batch holds one record whose key is ``(version int16, type int16)``.

- ABORT (0) / COMMIT (1): value ``(version int16, coordinator_epoch int32)``; written in a
  transactional control batch carrying the transaction's producer id and epoch.
- MIRROR_PID_RESET (7): value is the flexible-versions struct ``MirrorPidResetRecord``:
  ``Version int16, SourceClusterId compact string, tagged fields``. It is a barrier, not
  part of a transaction, so its batch is not transactional (like Kafka's LEADER_CHANGE).

Types Kafka defines for KRaft (2..6) and any future type decode as
:class:`UnknownControlRecord` so a log holding them can still be read.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from mirrorsim.protocol.records.building import build_batch
from mirrorsim.protocol.records.decoding import decode_records
from mirrorsim.protocol.records.raw_batch import (
    NO_PARTITION_LEADER_EPOCH,
    CorruptRecordError,
    RawBatch,
)
from mirrorsim.protocol.records.record import Record
from mirrorsim.protocol.records.varint import encode_unsigned_varint, read_unsigned_varint


class ControlRecordType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    MIRROR_PID_RESET = 7


CONTROL_KEY = struct.Struct(">hh")
CONTROL_KEY_VERSION = 0
TRANSACTION_MARKER_VALUE = struct.Struct(">hi")
TRANSACTION_MARKER_VERSION = 0
MIRROR_PID_RESET_VERSION = 0
_INT16 = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class TransactionMarker:
    kind: ControlRecordType
    coordinator_epoch: int
    version: int = TRANSACTION_MARKER_VERSION

    @property
    def is_commit(self) -> bool:
        return self.kind is ControlRecordType.COMMIT


@dataclass(frozen=True, slots=True)
class MirrorPidReset:
    source_cluster_id: str
    version: int = MIRROR_PID_RESET_VERSION


@dataclass(frozen=True, slots=True)
class UnknownControlRecord:
    type_id: int
    key_version: int
    value: bytes | None


ControlRecord = TransactionMarker | MirrorPidReset | UnknownControlRecord


def build_control_batch(
    kind: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp: int,
    coordinator_epoch: int = 0,
    source_cluster_id: str | None = None,
) -> RawBatch:
    """A one-record control batch of ``kind`` (ABORT, COMMIT or MIRROR_PID_RESET)."""
    if kind in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        value = TRANSACTION_MARKER_VALUE.pack(TRANSACTION_MARKER_VERSION, coordinator_epoch)
        transactional = True
    elif kind is ControlRecordType.MIRROR_PID_RESET:
        if source_cluster_id is None:
            raise ValueError("MIRROR_PID_RESET needs the source cluster id")
        value = encode_mirror_pid_reset(MirrorPidReset(source_cluster_id))
        transactional = False
    else:
        raise ValueError(f"cannot build a {kind.name} control batch")
    key = CONTROL_KEY.pack(CONTROL_KEY_VERSION, kind)
    return build_batch(
        [Record(base_offset, timestamp, key, value)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=transactional,
        partition_leader_epoch=partition_leader_epoch,
        is_control=True,
    )


def encode_mirror_pid_reset(reset: MirrorPidReset) -> bytes:
    cluster_id = reset.source_cluster_id.encode("utf-8")
    return b"".join(
        (
            _INT16.pack(reset.version),
            encode_unsigned_varint(len(cluster_id) + 1),
            cluster_id,
            encode_unsigned_varint(0),
        )
    )


def decode_control_record(record: Record) -> ControlRecord:
    key = record.key
    if key is None or len(key) < CONTROL_KEY.size:
        raise CorruptRecordError(f"control record at offset {record.offset} has no valid key")
    key_version, type_id = CONTROL_KEY.unpack_from(key)
    value = record.value
    if type_id in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        if value is None or len(value) < TRANSACTION_MARKER_VALUE.size:
            raise CorruptRecordError(
                f"transaction marker at offset {record.offset} has a short value"
            )
        version, coordinator_epoch = TRANSACTION_MARKER_VALUE.unpack_from(value)
        return TransactionMarker(ControlRecordType(type_id), coordinator_epoch, version)
    if type_id == ControlRecordType.MIRROR_PID_RESET:
        if value is None:
            raise CorruptRecordError(f"MIRROR_PID_RESET at offset {record.offset} has no value")
        return decode_mirror_pid_reset(value)
    return UnknownControlRecord(type_id, key_version, value)


def decode_mirror_pid_reset(value: bytes) -> MirrorPidReset:
    """Parse the flexible struct, skipping tagged fields this version does not know."""
    try:
        (version,) = _INT16.unpack_from(value, 0)
        length, pos = read_unsigned_varint(value, _INT16.size)
        if length == 0:
            raise CorruptRecordError("MIRROR_PID_RESET has a null SourceClusterId")
        end = pos + length - 1
        if end > len(value):
            raise CorruptRecordError("MIRROR_PID_RESET SourceClusterId overruns the value")
        source_cluster_id = value[pos:end].decode("utf-8")
        tag_count, pos = read_unsigned_varint(value, end)
        for _ in range(tag_count):
            _, pos = read_unsigned_varint(value, pos)
            size, pos = read_unsigned_varint(value, pos)
            pos += size
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise CorruptRecordError(f"malformed MIRROR_PID_RESET value: {exc}") from None
    if pos > len(value):
        raise CorruptRecordError("MIRROR_PID_RESET tagged fields overrun the value")
    if pos != len(value) and version == MIRROR_PID_RESET_VERSION:
        raise CorruptRecordError(f"{len(value) - pos} stray bytes after MIRROR_PID_RESET")
    return MirrorPidReset(source_cluster_id, version)


def decode_control_batch(batch: RawBatch) -> ControlRecord:
    """The control record of a control batch (Kafka writes exactly one per batch)."""
    if not batch.is_control:
        raise ValueError(f"batch at offset {batch.base_offset} is not a control batch")
    records = decode_records(batch)
    if not records:
        raise CorruptRecordError(f"control batch at offset {batch.base_offset} is empty")
    return decode_control_record(records[0])
