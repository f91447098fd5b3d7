"""The `consumer` protocol type's embedded formats: a member's subscription (JoinGroup
protocol metadata) and its assignment (SyncGroup bytes).

The coordinator reads them where it has to look inside a classic group: OffsetDelete
refuses topics the live group consumes, and online migration turns classic members into
consumer-group members (subscription, owned partitions, last assignment) and back
(an assignment encoded for each member). Layouts, all big-endian and non-flexible:

- ConsumerProtocolSubscription v0: topics [string], user_data nullable bytes; v1 adds
  owned_partitions [topic string, partitions [int32]]; v2 generation_id int32; v3
  rack_id nullable string;
- ConsumerProtocolAssignment v0-v3: assigned_partitions [topic string, partitions
  [int32]], user_data nullable bytes.

Each starts with its version (int16). A version newer than these is read as the newest
known one and trailing bytes are ignored, as Kafka's ConsumerProtocol does, so a newer
client stays readable.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from mirrorsim.broker.group.offset_store import TopicPartition

CONSUMER_PROTOCOL_TYPE = "consumer"
HIGHEST_VERSION = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class MalformedProtocol(ValueError):
    """The bytes are not a ConsumerProtocol subscription or assignment."""


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: frozenset[TopicPartition] = frozenset()
    rack_id: str | None = None


def decode_subscription(metadata: bytes) -> Subscription:
    reader = _Reader(metadata)
    version = reader.version()
    topics = tuple(reader.string() for _ in range(reader.count()))
    reader.nullable_bytes()
    owned = reader.partitions() if version >= 1 else frozenset()
    if version >= 2:
        reader.int32()
    rack_id = reader.nullable_string() if version >= 3 else None
    return Subscription(version, topics, owned, rack_id)


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The subscription's topics, or None when the bytes are not a valid subscription."""
    try:
        return frozenset(decode_subscription(metadata).topics)
    except MalformedProtocol:
        return None


def subscription_version(metadata: bytes) -> int:
    """The version an answer to this member is encoded in (0 when unreadable)."""
    try:
        return _Reader(metadata).version()
    except MalformedProtocol:
        return 0


def decode_assignment(data: bytes) -> frozenset[TopicPartition]:
    reader = _Reader(data)
    reader.version()
    return reader.partitions()


def encode_assignment(partitions: frozenset[TopicPartition], version: int) -> bytes:
    """An assignment without user data, in `version` (clamped to the known versions)."""
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = bytearray(_INT16.pack(max(0, min(version, HIGHEST_VERSION))))
    out += _INT32.pack(len(by_topic))
    for topic, numbers in by_topic.items():
        name = topic.encode()
        out += _INT16.pack(len(name)) + name + _INT32.pack(len(numbers))
        out += b"".join(_INT32.pack(p) for p in numbers)
    out += _INT32.pack(-1)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._offset = 0

    def _unpack(self, codec: struct.Struct) -> int:
        try:
            (value,) = codec.unpack_from(self._data, self._offset)
        except struct.error as error:
            raise MalformedProtocol(str(error)) from None
        self._offset += codec.size
        return int(value)

    def _take(self, length: int) -> bytes:
        if self._offset + length > len(self._data):
            raise MalformedProtocol("truncated")
        chunk = self._data[self._offset : self._offset + length]
        self._offset += length
        return chunk

    def version(self) -> int:
        version = self._unpack(_INT16)
        if version < 0:
            raise MalformedProtocol(f"version {version}")
        return min(version, HIGHEST_VERSION)

    def int32(self) -> int:
        return self._unpack(_INT32)

    def count(self) -> int:
        count = self._unpack(_INT32)
        if count < 0:
            raise MalformedProtocol("null array")
        return count

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise MalformedProtocol("null string")
        return value

    def nullable_string(self) -> str | None:
        length = self._unpack(_INT16)
        if length < 0:
            return None
        try:
            return self._take(length).decode()
        except UnicodeDecodeError as error:
            raise MalformedProtocol(str(error)) from None

    def nullable_bytes(self) -> None:
        length = self._unpack(_INT32)
        if length >= 0:
            self._take(length)

    def partitions(self) -> frozenset[TopicPartition]:
        partitions: set[TopicPartition] = set()
        for _ in range(self.count()):
            topic = self.string()
            partitions.update(TopicPartition(topic, self.int32()) for _ in range(self.count()))
        return frozenset(partitions)
