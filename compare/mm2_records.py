"""Keys and values of MM2's internal topics, in its binary layouts (Kafka ``Struct`` style:
strings as int16 length + UTF-8, big-endian integers), so MM2 tooling could read them."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from mirrorsim.compare.offset_sync import OffsetSync

_CHECKPOINT_VERSION = 0
_HEARTBEAT_VERSION = 0


def _string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _read_string(data: bytes, pos: int) -> tuple[str, int]:
    (length,) = struct.unpack_from(">h", data, pos)
    start = pos + 2
    return data[start : start + length].decode(), start + length


@dataclass(frozen=True, slots=True)
class Checkpoint:
    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""


def offset_sync_record(topic: str, partition: int, sync: OffsetSync) -> tuple[bytes, bytes]:
    key = _string(topic) + struct.pack(">i", partition)
    return key, struct.pack(">qq", sync.upstream_offset, sync.downstream_offset)


def decode_offset_sync(key: bytes, value: bytes) -> tuple[str, int, OffsetSync]:
    topic, pos = _read_string(key, 0)
    (partition,) = struct.unpack_from(">i", key, pos)
    upstream, downstream = struct.unpack(">qq", value)
    return topic, partition, OffsetSync(upstream, downstream)


def checkpoint_record(checkpoint: Checkpoint) -> tuple[bytes, bytes]:
    key = _string(checkpoint.group) + _string(checkpoint.topic)
    key += struct.pack(">i", checkpoint.partition)
    value = struct.pack(
        ">hqq", _CHECKPOINT_VERSION, checkpoint.upstream_offset, checkpoint.downstream_offset
    )
    return key, value + _string(checkpoint.metadata)


def decode_checkpoint(key: bytes, value: bytes) -> Checkpoint:
    group, pos = _read_string(key, 0)
    topic, pos = _read_string(key, pos)
    (partition,) = struct.unpack_from(">i", key, pos)
    _, upstream, downstream = struct.unpack_from(">hqq", value, 0)
    metadata, _ = _read_string(value, struct.calcsize(">hqq"))
    return Checkpoint(group, topic, partition, upstream, downstream, metadata)


def heartbeat_record(
    source_alias: str, target_alias: str, timestamp_ms: int
) -> tuple[bytes, bytes]:
    key = _string(source_alias) + _string(target_alias)
    return key, struct.pack(">hq", _HEARTBEAT_VERSION, timestamp_ms)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    source_alias: str
    target_alias: str
    timestamp_ms: int


def decode_heartbeat(key: bytes, value: bytes) -> Heartbeat:
    source_alias, pos = _read_string(key, 0)
    target_alias, _ = _read_string(key, pos)
    _, timestamp_ms = struct.unpack(">hq", value)
    return Heartbeat(source_alias, target_alias, timestamp_ms)
