"""The coordinator's in-memory view of one ``__mirror_state`` partition, rebuilt by replay.

``__mirror_state`` is compacted, so whatever is replayed must give the same answer before
and after compaction: every record is last-writer-wins on its key bytes, and a null value
(tombstone) deletes the key. That rules out the spec's partition-state key, which holds
only the mirror name: compaction would keep one partition's state per mirror and drop the
rest. Partition states are therefore written under record type 3,
``MirrorPartitionStateKeyV1`` ``{MirrorName, TopicId, Partition}`` (defined with the
other record schemas in ``protocol.messages.mirror_state_records``), with the spec's
``MirrorPartitionStateValue``. Last mirrored epochs keep the spec's type 1 key (mirror
name); each value is a *snapshot* of every LME this partition holds for the mirror, which
is compaction-safe because a writer always merges into the current snapshot.

A key lives in ``__mirror_state`` partition ``murmur2(mirror, topic id, partition) %
mirror.topic.num.partitions`` (:func:`mirror_state_partition`); the mirror's metadata
coordinator is ``murmur2(mirror) % mirror.topic.num.partitions``
(:func:`metadata_coordinator_partition`). murmur2 is Kafka's default-partitioner hash, so
any Kafka tool can reproduce the placement.
"""

import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Self

from kio.static.primitive import i8, i32

from mirrorsim.coordinator.state_machine import MirrorPartitionKey, MirrorPartitionState
from mirrorsim.protocol.messages.last_mirror_epochs import (
    decode_last_mirror_epochs,
    encode_last_mirror_epochs,
)
from mirrorsim.protocol.messages.mirror_state_records import (
    LAST_MIRROR_EPOCHS_RECORD_TYPE,
    MIRROR_PARTITION_STATE_RECORD_TYPE,
    PARTITION_STATE_RECORD_TYPE,
    LastMirrorEpochsKey,
    MirrorPartitionStateKeyV1,
    MirrorPartitionStateValue,
    MirrorStateRecordError,
    decode_mirror_state_key,
    decode_mirror_state_value,
    encode_mirror_state_key,
    encode_mirror_state_value,
)

NO_LAST_MIRRORED_EPOCH = -1
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_MURMUR_SEED = 0x9747B28C
_MURMUR_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class MirrorStateRecord:
    """A ``__mirror_state`` record as appended: key bytes and value bytes (None = tombstone)."""

    key: bytes
    value: bytes | None


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (``Utils.murmur2``) as an unsigned 32-bit value."""
    length = len(data)
    h = (_MURMUR_SEED ^ length) & _MASK32
    body = length - length % 4
    for i in range(0, body, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _MURMUR_M) & _MASK32
        k ^= k >> 24
        k = (k * _MURMUR_M) & _MASK32
        h = ((h * _MURMUR_M) & _MASK32) ^ k
    tail = length % 4
    if tail:
        if tail == 3:
            h ^= data[body + 2] << 16
        if tail >= 2:
            h ^= data[body + 1] << 8
        h ^= data[body]
        h = (h * _MURMUR_M) & _MASK32
    h ^= h >> 13
    h = (h * _MURMUR_M) & _MASK32
    h ^= h >> 15
    return h


def _positive_mod(hash_value: int, num_partitions: int) -> int:
    if num_partitions <= 0:
        raise ValueError(f"mirror.topic.num.partitions must be positive, not {num_partitions}")
    return (hash_value & 0x7FFFFFFF) % num_partitions


def mirror_state_partition(
    mirror: str, topic_id: uuid.UUID, partition: int, num_partitions: int
) -> int:
    """The ``__mirror_state`` partition (and so the coordinator) of one mirror partition."""
    data = mirror.encode("utf-8") + topic_id.bytes + _INT32.pack(partition)
    return _positive_mod(murmur2(data), num_partitions)


def metadata_coordinator_partition(mirror: str, num_partitions: int) -> int:
    """The ``__mirror_state`` partition whose leader syncs the mirror's metadata."""
    return _positive_mod(murmur2(mirror.encode("utf-8")), num_partitions)


def _record_type(key: bytes) -> int:
    if len(key) < _INT16.size:
        raise MirrorStateRecordError(f"key of {len(key)} bytes has no record type")
    return int(_INT16.unpack_from(key, 0)[0])


@dataclass(slots=True)
class _PartitionEntry:
    key: MirrorPartitionKey
    state: MirrorPartitionState


class MirrorStateStore:
    """States and last mirrored epochs held by one ``__mirror_state`` partition.

    Writers build a record with :meth:`state_record` / :meth:`last_mirrored_epochs_record`
    / :meth:`mirror_tombstones`, append it to the log, and only then :meth:`apply` it, so
    memory never runs ahead of what a new leader would replay.
    """

    def __init__(self) -> None:
        self._states: dict[tuple[str, uuid.UUID, int], _PartitionEntry] = {}
        self._by_name: dict[tuple[str, str, int], tuple[str, uuid.UUID, int]] = {}
        self._epochs: dict[str, dict[tuple[str, int], int]] = {}

    @classmethod
    def replayed(cls, records: Iterable[tuple[bytes, bytes | None]]) -> Self:
        store = cls()
        for key, value in records:
            store.apply(MirrorStateRecord(key, value))
        return store

    # -- reading -------------------------------------------------------------------------

    def state_of(self, mirror: str, topic: str, partition: int) -> MirrorPartitionState:
        """The stored state, or UNKNOWN when nothing is stored for the partition."""
        ident = self._by_name.get((mirror, topic, partition))
        if ident is None:
            return MirrorPartitionState.UNKNOWN
        return self._states[ident].state

    def last_mirrored_epoch(self, mirror: str, topic: str, partition: int) -> int:
        return self._epochs.get(mirror, {}).get((topic, partition), NO_LAST_MIRRORED_EPOCH)

    def partitions(self, mirror: str) -> dict[MirrorPartitionKey, MirrorPartitionState]:
        return {e.key: e.state for e in self._states.values() if e.key.mirror == mirror}

    def mirrors(self) -> set[str]:
        return {ident[0] for ident in self._states} | set(self._epochs)

    # -- building records ----------------------------------------------------------------

    def state_record(
        self, key: MirrorPartitionKey, state: MirrorPartitionState
    ) -> MirrorStateRecord:
        if state is MirrorPartitionState.UNKNOWN:
            raise ValueError("UNKNOWN is the absence of a state and is never stored")
        record_key = MirrorPartitionStateKeyV1(
            mirror_name=key.mirror, topic_id=key.topic_id, partition=i32(key.partition)
        )
        value = MirrorPartitionStateValue(
            topic_name=key.topic,
            partition=i32(key.partition),
            state=i8(int(state)),  # type: ignore[arg-type]
        )
        return MirrorStateRecord(
            encode_mirror_state_key(record_key), encode_mirror_state_value(value)
        )

    def last_mirrored_epochs_record(
        self, mirror: str, updates: Mapping[tuple[str, int], int]
    ) -> MirrorStateRecord:
        """The mirror's LME snapshot for this partition with ``updates`` merged in.

        ``updates`` maps (topic, partition) to its last mirrored epoch.
        """
        return _epochs_snapshot(mirror, {**self._epochs.get(mirror, {}), **updates})

    def mirror_tombstones(self, mirror: str) -> list[MirrorStateRecord]:
        """Tombstones for every record of ``mirror`` here (DeleteMirror)."""
        tombstones = [
            MirrorStateRecord(
                encode_mirror_state_key(
                    MirrorPartitionStateKeyV1(
                        mirror_name=m, topic_id=topic_id, partition=i32(partition)
                    )
                ),
                None,
            )
            for (m, topic_id, partition) in sorted(self._states, key=str)
            if m == mirror
        ]
        if mirror in self._epochs:
            tombstones.append(
                MirrorStateRecord(
                    encode_mirror_state_key(LastMirrorEpochsKey(mirror_name=mirror)), None
                )
            )
        return tombstones

    def topic_tombstones(self, mirror: str, topics: set[str]) -> list[MirrorStateRecord]:
        """Tombstones for ``topics`` of ``mirror`` (WriteMirrorStates' RemovedTopics): their
        state records, and the LME snapshot rewritten without them (a tombstone if empty)."""
        records = [
            MirrorStateRecord(
                encode_mirror_state_key(
                    MirrorPartitionStateKeyV1(
                        mirror_name=entry.key.mirror,
                        topic_id=entry.key.topic_id,
                        partition=i32(entry.key.partition),
                    )
                ),
                None,
            )
            for entry in sorted(self._states.values(), key=lambda e: str(e.key))
            if entry.key.mirror == mirror and entry.key.topic in topics
        ]
        epochs = self._epochs.get(mirror)
        if epochs is not None and any(topic in topics for topic, _ in epochs):
            kept = {k: e for k, e in epochs.items() if k[0] not in topics}
            if kept:
                records.append(_epochs_snapshot(mirror, kept))
            else:
                records.append(
                    MirrorStateRecord(
                        encode_mirror_state_key(LastMirrorEpochsKey(mirror_name=mirror)), None
                    )
                )
        return records

    # -- replay --------------------------------------------------------------------------

    def apply(self, record: MirrorStateRecord) -> None:
        """Apply one record of the log (replay, or after a successful append)."""
        record_type = _record_type(record.key)
        if record_type == PARTITION_STATE_RECORD_TYPE:
            key = decode_mirror_state_key(record.key)
            assert isinstance(key, MirrorPartitionStateKeyV1)
            self._apply_partition_state(key, record.value)
        elif record_type == LAST_MIRROR_EPOCHS_RECORD_TYPE:
            key = decode_mirror_state_key(record.key)
            self._apply_last_mirrored_epochs(key.mirror_name, record.value)
        elif record_type == MIRROR_PARTITION_STATE_RECORD_TYPE:
            raise MirrorStateRecordError(
                "record type 2 (state keyed by mirror name only) is not compaction-safe "
                "and is never written; partition states use record type 3"
            )
        else:
            raise MirrorStateRecordError(f"unknown __mirror_state record type {record_type}")

    def _apply_partition_state(self, key: MirrorPartitionStateKeyV1, value: bytes | None) -> None:
        ident = (key.mirror_name, key.topic_id, int(key.partition))
        previous = self._states.pop(ident, None)
        if previous is not None:
            name = (previous.key.mirror, previous.key.topic, previous.key.partition)
            if self._by_name.get(name) == ident:
                del self._by_name[name]
        if value is None:
            return
        decoded = decode_mirror_state_value(MIRROR_PARTITION_STATE_RECORD_TYPE, value)
        assert isinstance(decoded, MirrorPartitionStateValue)
        if decoded.partition != key.partition:
            raise MirrorStateRecordError(
                f"state value for partition {decoded.partition} under key partition {key.partition}"
            )
        partition_key = MirrorPartitionKey(
            key.mirror_name, key.topic_id, decoded.topic_name, int(key.partition)
        )
        self._states[ident] = _PartitionEntry(
            partition_key, MirrorPartitionState(int(decoded.state))
        )
        self._by_name[(key.mirror_name, decoded.topic_name, int(key.partition))] = ident

    def _apply_last_mirrored_epochs(self, mirror: str, value: bytes | None) -> None:
        if value is None:
            self._epochs.pop(mirror, None)
            return
        self._epochs[mirror] = decode_last_mirror_epochs(value)


def _epochs_snapshot(mirror: str, epochs: Mapping[tuple[str, int], int]) -> MirrorStateRecord:
    """The LME snapshot record of ``mirror`` holding exactly ``epochs``."""
    return MirrorStateRecord(
        encode_mirror_state_key(LastMirrorEpochsKey(mirror_name=mirror)),
        encode_last_mirror_epochs(epochs),
    )
