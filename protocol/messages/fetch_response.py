"""Fetch responses (api key 1, v4..v19) encoded straight from each partition's read.

A live mirror or consumer fetches many partitions with a batch or two each: built as kio
entities and encoded by kio, each partition's entry cost as much as reading its records.
The layout (``FetchResponse.json``, plus v19's ``MirrorLeaderEpoch``) is written here
with ``struct``, the record sets passed on as the very buffers the log read, never
copied; the tests hold these bytes equal to kio's for every version and any values.

What the layout holds per version:
- v4: last stable offset and aborted transactions; v5 the log start offset;
- v7: the body's error code and fetch session id; v11 the preferred read replica;
- v12+ (flexible): compact arrays, strings and bytes, a tagged-field section after each
  entry; a partition may tag its diverging epoch (0), current leader (1) and snapshot
  id (2), v19 its mirror leader epoch (3); v16+ the body may tag node endpoints (0). A
  tagged field at its default is not written, as kio and Kafka leave it out;
- v13 names each topic by id instead of by name.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import ClassVar

from mirrorsim.protocol.messages.encoded_response import VersionedResponse
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
    topic_reference,
)
from mirrorsim.protocol.records.varint import encode_unsigned_varint

FIRST_WITH_PREFERRED_READ_REPLICA = 11
DIVERGING_EPOCH_TAG = 0
CURRENT_LEADER_TAG = 1
MIRROR_LEADER_EPOCH_TAG = 3
NO_DIVERGENCE = (UNSET, UNSET)
"""The diverging epoch of a partition whose log does not diverge: not written."""
NO_LEADER = (UNSET, UNSET)
"""The current leader when none is named: not written."""
_HEAD_V4 = struct.Struct(">ihqq")
"""partition_index, error_code, high_watermark, last_stable_offset"""
_HEAD_V5 = struct.Struct(">ihqqq")
"""... and log_start_offset"""
_BODY_HEAD_V7 = struct.Struct(">ihi")
"""throttle_time_ms, error_code, session_id"""
_ABORTED = struct.Struct(">qq")
_EPOCH_END_OFFSET = struct.Struct(">iqB")
"""epoch, end_offset, empty tagged fields"""
_LEADER_ID_AND_EPOCH = struct.Struct(">iiB")
"""leader_id, leader_epoch, empty tagged fields"""


@dataclasses.dataclass(frozen=True, slots=True)
class FetchPartitionData:
    """One partition's entry: its read, or its error with the -1s Kafka sends with one."""

    partition_index: int
    error_code: int
    high_watermark: int = UNSET
    last_stable_offset: int = UNSET
    log_start_offset: int = UNSET
    aborted_transactions: Sequence[tuple[int, int]] | None = None
    """(producer id, first offset) of each aborted transaction, for read_committed."""
    preferred_read_replica: int = UNSET
    records: bytes | bytearray | memoryview = b""
    diverging_epoch: tuple[int, int] = NO_DIVERGENCE
    """(epoch, end offset) where the fetcher's log diverges, from v12."""
    current_leader: tuple[int, int] = NO_LEADER
    """(leader id, leader epoch), sent with leadership errors from v12."""
    mirror_leader_epoch: int = UNSET


@dataclasses.dataclass(frozen=True, slots=True)
class FetchTopicData:
    """A topic's partitions, named as the request named the topic (by id from v13)."""

    topic: str | None
    topic_id: uuid.UUID | None
    partitions: Sequence[FetchPartitionData]


@dataclasses.dataclass(frozen=True, slots=True)
class FetchResponseBody(VersionedResponse):
    """A Fetch response of ``version``; ``throttle_ms`` as the quotas set it."""

    API_KEY: ClassVar[int] = FETCH_KEY
    VERSIONS: ClassVar[range] = range(MIN_VERSION, MAX_VERSION + 1)
    FIRST_FLEXIBLE: ClassVar[int] = FIRST_FLEXIBLE

    topics: Sequence[FetchTopicData]
    error_code: int = 0
    session_id: int = 0

    def error_code_counts(self) -> Iterable[tuple[int, int]]:
        counts = Counter(p.error_code for topic in self.topics for p in topic.partitions)
        if self.version >= FIRST_WITH_SESSIONS:
            counts[self.error_code] += 1
        return counts.items()

    def encoded_body(self) -> list[bytes | bytearray | memoryview]:
        """The entries as one run of bytes between record sets, which go out as they are."""
        version = self.version
        flexible = version >= FIRST_FLEXIBLE
        head = _HEAD_V5 if version >= FIRST_WITH_LOG_START_OFFSET else _HEAD_V4
        with_replica = version >= FIRST_WITH_PREFERRED_READ_REPLICA
        by_id = version >= FIRST_WITH_TOPIC_ID
        parts: list[bytes | bytearray | memoryview] = []
        if version >= FIRST_WITH_SESSIONS:
            out = bytearray(_BODY_HEAD_V7.pack(self.throttle_ms, self.error_code, self.session_id))
        else:
            out = bytearray(INT32.pack(self.throttle_ms))
        out += array_length(len(self.topics), flexible)
        for topic in self.topics:
            out += topic_reference(topic.topic or "", topic.topic_id, by_id, flexible)
            out += array_length(len(topic.partitions), flexible)
            for p in topic.partitions:
                if head is _HEAD_V5:
                    out += head.pack(
                        p.partition_index,
                        p.error_code,
                        p.high_watermark,
                        p.last_stable_offset,
                        p.log_start_offset,
                    )
                else:
                    out += head.pack(
                        p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset
                    )
                aborted = p.aborted_transactions
                if aborted is None:
                    out += array_length(-1, flexible)
                else:
                    out += array_length(len(aborted), flexible)
                    for producer_id, first_offset in aborted:
                        out += _ABORTED.pack(producer_id, first_offset)
                        if flexible:
                            out += NO_TAGGED_FIELDS
                if with_replica:
                    out += INT32.pack(p.preferred_read_replica)
                records = p.records
                size = len(records)
                out += encode_unsigned_varint(size + 1) if flexible else INT32.pack(size)
                if size:
                    parts.append(out)
                    parts.append(records)
                    out = bytearray()
                if flexible:
                    out += _partition_tags(p, version)
            if flexible:
                out += NO_TAGGED_FIELDS
        if flexible:
            out += NO_TAGGED_FIELDS
        parts.append(out)
        return parts


def _partition_tags(p: FetchPartitionData, version: int) -> bytes:
    """The partition's tagged-field section: the tags not at their default, in order."""
    tags: list[bytes] = []
    if p.diverging_epoch != NO_DIVERGENCE:
        tags.append(_tagged(DIVERGING_EPOCH_TAG, _EPOCH_END_OFFSET.pack(*p.diverging_epoch, 0)))
    if p.current_leader != NO_LEADER:
        tags.append(_tagged(CURRENT_LEADER_TAG, _LEADER_ID_AND_EPOCH.pack(*p.current_leader, 0)))
    if version >= FIRST_WITH_MIRROR_LEADER_EPOCH and p.mirror_leader_epoch != UNSET:
        tags.append(_tagged(MIRROR_LEADER_EPOCH_TAG, INT32.pack(p.mirror_leader_epoch)))
    return encode_unsigned_varint(len(tags)) + b"".join(tags)


def _tagged(tag: int, value: bytes) -> bytes:
    return encode_unsigned_varint(tag) + encode_unsigned_varint(len(value)) + value
