"""Fetch requests (api key 1, v4..v19) encoded straight from the fetcher's positions.

A fetcher names in each Fetch every partition whose position moved since the last one: a
live mirror, one entry per batch it appended. Built as kio entities and encoded by kio,
those entries were a tenth of a destination's work, so the layout
(``FetchRequest.json``, plus v19's ``MirrorLeaderEpoch``) is written here with
``struct``; the tests hold these bytes equal to kio's for every version and any values.

What the layout holds per version:
- v4: replica id, wait, min and max bytes, isolation level; per partition its fetch
  offset and byte limit; v5 the follower's log start offset;
- v7: the fetch session's id and epoch, and the partitions it forgets;
- v9: each partition's current leader epoch; v11 the rack id;
- v12+ (flexible): compact arrays and strings, a tagged-field section after each entry,
  and each partition's last fetched epoch;
- v13 names each topic by id instead of by name;
- v15 moves the replica id into the tagged ``ReplicaState`` (tag 1) with the broker's
  epoch, left out when both are -1 as kio and Kafka leave a default tag out;
- v19 tags a partition's mirror leader epoch (2) when it is not -1.
The tags a fetcher here never sets (the cluster id, a replica's directory id and high
watermark) are left out, as at their defaults.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Sequence
from typing import ClassVar

from mirrorsim.protocol.messages.encoded_request import VersionedRequest
from mirrorsim.protocol.messages.fetch_versions import (
    FETCH_KEY,
    FIRST_FLEXIBLE,
    FIRST_WITH_LOG_START_OFFSET,
    FIRST_WITH_MIRROR_LEADER_EPOCH,
    FIRST_WITH_SESSIONS,
    FIRST_WITH_TOPIC_ID,
    MAX_VERSION,
    MIN_VERSION,
    UNSET,
)
from mirrorsim.protocol.messages.wire_writing import (
    INT32,
    NO_TAGGED_FIELDS,
    array_length,
    nullable_string,
    topic_reference,
)
from mirrorsim.protocol.records.varint import encode_unsigned_varint

FIRST_WITH_CURRENT_LEADER_EPOCH = 9
FIRST_WITH_RACK = 11
FIRST_WITH_REPLICA_STATE = 15
REPLICA_STATE_TAG = 1
MIRROR_LEADER_EPOCH_TAG = 2
CONSUMER_REPLICA_ID = -1
_HEAD_V4 = struct.Struct(">iiiib")
"""replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level"""
_HEAD_V15 = struct.Struct(">iiib")
"""max_wait_ms, min_bytes, max_bytes, isolation_level"""
_SESSION = struct.Struct(">ii")
_REPLICA_STATE = struct.Struct(">BBiqB")
"""tag 1, size 13, replica_id, replica_epoch, empty tagged fields"""
_PARTITION_V4 = struct.Struct(">iqi")
"""partition, fetch_offset, partition_max_bytes"""
_PARTITION_V5 = struct.Struct(">iqqi")
"""... and log_start_offset before the byte limit"""
_PARTITION_V9 = struct.Struct(">iiqqi")
"""partition, current_leader_epoch, fetch_offset, log_start_offset, partition_max_bytes"""
_PARTITION_V12 = struct.Struct(">iiqiqi")
"""... and last_fetched_epoch after the fetch offset"""
_MIRROR_LEADER_EPOCH = struct.Struct(">BBBi")
"""one tag: tag 2, size 4, the epoch"""


@dataclasses.dataclass(frozen=True, slots=True)
class FetchRequestPartition:
    """One partition to read: where from, and what the fetcher knows of its epochs."""

    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = UNSET
    last_fetched_epoch: int = UNSET
    log_start_offset: int = UNSET
    """The follower's log start offset; -1 for a consumer or a mirror."""
    mirror_leader_epoch: int = UNSET
    """The mirror leader epoch a destination follower knows, from v19."""


@dataclasses.dataclass(frozen=True, slots=True)
class FetchRequestTopic:
    """A topic's partitions, named by ``topic`` up to v12 and by ``topic_id`` after."""

    topic: str
    topic_id: uuid.UUID | None
    partitions: Sequence[FetchRequestPartition]


@dataclasses.dataclass(frozen=True, slots=True)
class ForgottenTopic:
    """Partitions a fetch session stops reading, named as ``FetchRequestTopic``."""

    topic: str
    topic_id: uuid.UUID | None
    partitions: Sequence[int]


@dataclasses.dataclass(frozen=True, slots=True)
class FetchRequestBody(VersionedRequest):
    """A Fetch request of ``version``."""

    API_KEY: ClassVar[int] = FETCH_KEY
    VERSIONS: ClassVar[range] = range(MIN_VERSION, MAX_VERSION + 1)
    FIRST_FLEXIBLE: ClassVar[int] = FIRST_FLEXIBLE

    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    topics: Sequence[FetchRequestTopic]
    isolation_level: int = 0
    session_id: int = 0
    session_epoch: int = UNSET
    forgotten: Sequence[ForgottenTopic] = ()
    replica_id: int = CONSUMER_REPLICA_ID
    replica_epoch: int = UNSET
    """The follower broker's epoch, sent from v15."""
    rack_id: str = ""

    def encoded_body(self) -> bytes:
        version = self.version
        flexible = version >= FIRST_FLEXIBLE
        by_id = version >= FIRST_WITH_TOPIC_ID
        out = bytearray()
        if version >= FIRST_WITH_REPLICA_STATE:
            out += _HEAD_V15.pack(
                self.max_wait_ms, self.min_bytes, self.max_bytes, self.isolation_level
            )
        else:
            out += _HEAD_V4.pack(
                self.replica_id,
                self.max_wait_ms,
                self.min_bytes,
                self.max_bytes,
                self.isolation_level,
            )
        if version >= FIRST_WITH_SESSIONS:
            out += _SESSION.pack(self.session_id, self.session_epoch)
        out += array_length(len(self.topics), flexible)
        for topic in self.topics:
            out += topic_reference(topic.topic, topic.topic_id, by_id, flexible)
            out += array_length(len(topic.partitions), flexible)
            for p in topic.partitions:
                out += _partition(p, version)
            if flexible:
                out += NO_TAGGED_FIELDS
        if version >= FIRST_WITH_SESSIONS:
            out += array_length(len(self.forgotten), flexible)
            for forgotten in self.forgotten:
                out += topic_reference(forgotten.topic, forgotten.topic_id, by_id, flexible)
                out += array_length(len(forgotten.partitions), flexible)
                out += struct.pack(f">{len(forgotten.partitions)}i", *forgotten.partitions)
                if flexible:
                    out += NO_TAGGED_FIELDS
        if version >= FIRST_WITH_RACK:
            out += nullable_string(self.rack_id, flexible)
        if flexible:
            out += self._tags()
        return bytes(out)

    def _tags(self) -> bytes:
        """The body's tagged-field section: the replica state from v15 unless unset."""
        if self.version < FIRST_WITH_REPLICA_STATE or (self.replica_id, self.replica_epoch) == (
            CONSUMER_REPLICA_ID,
            UNSET,
        ):
            return NO_TAGGED_FIELDS
        state = _REPLICA_STATE.pack(
            REPLICA_STATE_TAG, _REPLICA_STATE.size - 2, self.replica_id, self.replica_epoch, 0
        )
        return encode_unsigned_varint(1) + state


def _partition(p: FetchRequestPartition, version: int) -> bytes:
    if version >= FIRST_FLEXIBLE:
        entry = _PARTITION_V12.pack(
            p.partition,
            p.current_leader_epoch,
            p.fetch_offset,
            p.last_fetched_epoch,
            p.log_start_offset,
            p.partition_max_bytes,
        )
        if version >= FIRST_WITH_MIRROR_LEADER_EPOCH and p.mirror_leader_epoch != UNSET:
            return entry + _MIRROR_LEADER_EPOCH.pack(
                1, MIRROR_LEADER_EPOCH_TAG, INT32.size, p.mirror_leader_epoch
            )
        return entry + NO_TAGGED_FIELDS
    if version >= FIRST_WITH_CURRENT_LEADER_EPOCH:
        return _PARTITION_V9.pack(
            p.partition,
            p.current_leader_epoch,
            p.fetch_offset,
            p.log_start_offset,
            p.partition_max_bytes,
        )
    if version >= FIRST_WITH_LOG_START_OFFSET:
        return _PARTITION_V5.pack(
            p.partition, p.fetch_offset, p.log_start_offset, p.partition_max_bytes
        )
    return _PARTITION_V4.pack(p.partition, p.fetch_offset, p.partition_max_bytes)
