"""Records of the ``__mirror_state`` topic (KIP-1279 "Metadata Records").

Each record follows Kafka's coordinator-record layout: the key is an int16 record type
followed by the non-flexible key struct; the value is an int16 value version followed by
the flexible value struct. A null value is a tombstone. Record types:

- 1: ``LastMirrorEpochsKey`` → ``LastMirrorEpochsValue``: the last mirror leader epoch of
  every partition of a mirror, written when topics stop mirroring, read back on failback;
- 2: ``MirrorPartitionStateKey`` → ``MirrorPartitionStateValue``: one partition's state;
- 3: ``MirrorPartitionStateKeyV1`` → ``MirrorPartitionStateValue``: the same, keyed by
  mirror name, topic id and partition.

Types 1 and 2 hold only the mirror name, exactly as the spec's schemas (and its
``kafka-dump-log`` sample: keySize 13 for "my-mirror") define them, so compaction keeps
only the latest record of each type per mirror. That is harmless for type 1 (each value
is a snapshot of every LME of the mirror) but would drop partition states, so the broker
writes partition states as type 3 and never type 2, which is decoded for the spec's
sample (see docs/protocol.md).
"""

import enum
import io
import struct
import uuid
from dataclasses import dataclass, field
from typing import ClassVar, TypeAlias

from kio.schema.types import TopicName
from kio.serial import entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32

from mirrorsim.protocol.schema_reader import tolerant_reader

MIRROR_STATE_TOPIC = "__mirror_state"
LAST_MIRROR_EPOCHS_RECORD_TYPE = 1
MIRROR_PARTITION_STATE_RECORD_TYPE = 2
PARTITION_STATE_RECORD_TYPE = 3
VALUE_VERSION = 0
_INT16 = struct.Struct(">h")


class MirrorPartitionStateId(enum.IntEnum):
    """Wire ids of the mirror partition states (``State`` int8 fields and records).

    UNKNOWN is the absence of a stored state; it is never written to ``__mirror_state``
    but may appear in ReadMirrorStates answers.
    """

    PREPARING = 0
    MIRRORING = 1
    PAUSING = 2
    PAUSED = 3
    STOPPING = 4
    STOPPED = 5
    FAILED = 6
    UNKNOWN = 16


class MirrorStateRecordError(ValueError):
    """A ``__mirror_state`` record with an unknown type or version, or malformed bytes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LastMirrorEpochsKey:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    mirror_name: str = field(metadata={"kafka_type": "string"})
    """The cluster mirror name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LastMirrorEpochsPartition:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    """The partition index."""
    last_mirror_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The last mirror leader epoch for this partition."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LastMirrorEpochsTopic:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic name."""
    partitions: tuple[LastMirrorEpochsPartition, ...]
    """Each partition to record the last mirrored epochs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LastMirrorEpochsValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    topics: tuple[LastMirrorEpochsTopic, ...]
    """The mirror topics for which we want to store the last mirrored epochs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MirrorPartitionStateKey:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    mirror_name: str = field(metadata={"kafka_type": "string"})
    """The cluster mirror name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MirrorPartitionStateValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic name."""
    partition: i32 = field(metadata={"kafka_type": "int32"})
    """The partition index."""
    state: i8 = field(metadata={"kafka_type": "int8"})
    """The mirror partition state (a ``MirrorPartitionStateId``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MirrorPartitionStateKeyV1:
    """Key of record type 3: one mirror partition's state (one key per partition)."""

    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    mirror_name: str = field(metadata={"kafka_type": "string"})
    """The cluster mirror name."""
    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    """The mirror topic's id (what survives a delete-and-recreate of the name)."""
    partition: i32 = field(metadata={"kafka_type": "int32"})
    """The partition index."""


MirrorStateKey: TypeAlias = (
    LastMirrorEpochsKey | MirrorPartitionStateKey | MirrorPartitionStateKeyV1
)
MirrorStateValue: TypeAlias = LastMirrorEpochsValue | MirrorPartitionStateValue

_KEY_CLASSES: dict[int, type[MirrorStateKey]] = {
    LAST_MIRROR_EPOCHS_RECORD_TYPE: LastMirrorEpochsKey,
    MIRROR_PARTITION_STATE_RECORD_TYPE: MirrorPartitionStateKey,
    PARTITION_STATE_RECORD_TYPE: MirrorPartitionStateKeyV1,
}
_VALUE_CLASSES: dict[int, type[MirrorStateValue]] = {
    LAST_MIRROR_EPOCHS_RECORD_TYPE: LastMirrorEpochsValue,
    MIRROR_PARTITION_STATE_RECORD_TYPE: MirrorPartitionStateValue,
    PARTITION_STATE_RECORD_TYPE: MirrorPartitionStateValue,
}
_RECORD_TYPES: dict[type, int] = {
    LastMirrorEpochsKey: LAST_MIRROR_EPOCHS_RECORD_TYPE,
    LastMirrorEpochsValue: LAST_MIRROR_EPOCHS_RECORD_TYPE,
    MirrorPartitionStateKey: MIRROR_PARTITION_STATE_RECORD_TYPE,
    MirrorPartitionStateValue: MIRROR_PARTITION_STATE_RECORD_TYPE,
    MirrorPartitionStateKeyV1: PARTITION_STATE_RECORD_TYPE,
}


def record_type_of(entity: MirrorStateKey | MirrorStateValue) -> int:
    """The record type a key belongs to (for a partition-state value: 2, the spec's)."""
    return _RECORD_TYPES[type(entity)]


def _prefixed(prefix: int, entity: MirrorStateKey | MirrorStateValue) -> bytes:
    buf = io.BytesIO()
    buf.write(_INT16.pack(prefix))
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def encode_mirror_state_key(key: MirrorStateKey) -> bytes:
    """The record key bytes: int16 record type, then the key struct."""
    return _prefixed(record_type_of(key), key)


def encode_mirror_state_value(value: MirrorStateValue) -> bytes:
    """The record value bytes: int16 value version, then the value struct."""
    return _prefixed(VALUE_VERSION, value)


def _read_whole(cls: type, data: bytes, offset: int, what: str) -> object:
    try:
        entity, size = tolerant_reader(cls)(data, offset)
    except Exception as exc:  # every decode failure becomes one error type for callers
        raise MirrorStateRecordError(f"malformed {what}: {exc}") from exc
    if offset + size != len(data):
        raise MirrorStateRecordError(f"{len(data) - offset - size} trailing bytes after {what}")
    return entity


def _read_prefix(data: bytes, what: str) -> int:
    if len(data) < _INT16.size:
        raise MirrorStateRecordError(f"{what} of {len(data)} bytes has no type/version prefix")
    return int(_INT16.unpack_from(data, 0)[0])


def decode_mirror_state_key(data: bytes) -> MirrorStateKey:
    record_type = _read_prefix(data, "key")
    cls = _KEY_CLASSES.get(record_type)
    if cls is None:
        raise MirrorStateRecordError(f"unknown __mirror_state record type {record_type}")
    return _read_whole(cls, data, _INT16.size, cls.__name__)  # type: ignore[return-value]


def decode_mirror_state_value(record_type: int, data: bytes) -> MirrorStateValue:
    version = _read_prefix(data, "value")
    cls = _VALUE_CLASSES.get(record_type)
    if cls is None:
        raise MirrorStateRecordError(f"unknown __mirror_state record type {record_type}")
    if version != VALUE_VERSION:
        raise MirrorStateRecordError(f"unsupported {cls.__name__} version {version}")
    return _read_whole(cls, data, _INT16.size, cls.__name__)  # type: ignore[return-value]


def decode_mirror_state_record(
    key: bytes, value: bytes | None
) -> tuple[MirrorStateKey, MirrorStateValue | None]:
    """Key and value of one ``__mirror_state`` record; the value is None for a tombstone."""
    decoded_key = decode_mirror_state_key(key)
    if value is None:
        return decoded_key, None
    return decoded_key, decode_mirror_state_value(record_type_of(decoded_key), value)
