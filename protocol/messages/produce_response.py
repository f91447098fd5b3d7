"""Produce responses (api key 0, v3..v13) encoded straight from each partition's outcome.

A Produce request carries one batch per partition, and its answer one short entry per
partition: built as kio entities and encoded by kio, a 16-partition answer cost about
340 µs, some 20 µs per batch, more than appending the batch to its log. The layout is
small and fixed (``ProduceResponse.json``), so it is written here with ``struct``; the
tests hold these bytes equal to kio's for every version and any field values.

What the layout holds per version:
- v3-v8: arrays and strings with int32/int16 lengths; v9+ (flexible) compact arrays and
  strings and an empty tagged-field section after each entry and the body;
- ``log_start_offset`` from v5; ``record_errors`` and ``error_message`` from v8;
- v10+ may tag a partition's current leader and the body's node endpoints; a broker that
  leaves them at their defaults writes neither, as kio and Kafka do;
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
from mirrorsim.protocol.messages.wire_writing import (
    INT32,
    NO_TAGGED_FIELDS,
    array_length,
    nullable_string,
    topic_reference,
)

PRODUCE_KEY = 0
MIN_VERSION = 3
MAX_VERSION = 13
FIRST_FLEXIBLE = 9
FIRST_WITH_LOG_START_OFFSET = 5
FIRST_WITH_RECORD_ERRORS = 8
FIRST_WITH_TOPIC_ID = 13
NO_TIMESTAMP = -1
_ENTRY_V3 = struct.Struct(">ihqq")
"""index, error_code, base_offset, log_append_time"""
_ENTRY_V5 = struct.Struct(">ihqqq")
"""... and log_start_offset"""


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionProduceOutcome:
    """What one partition of a Produce request came to."""

    index: int
    error_code: int
    base_offset: int = -1
    log_append_time_ms: int = NO_TIMESTAMP
    log_start_offset: int = -1
    record_errors: tuple[tuple[int, str | None], ...] = ()
    """(batch index, message) of each record that had the batch refused."""
    error_message: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class TopicProduceOutcome:
    """A topic's partitions, named as the request named the topic (by id from v13)."""

    name: str | None
    topic_id: uuid.UUID | None
    partitions: Sequence[PartitionProduceOutcome]


@dataclasses.dataclass(frozen=True, slots=True)
class ProduceResponseBody(VersionedResponse):
    """A Produce response of ``version``; ``throttle_ms`` as the quotas set it."""

    API_KEY: ClassVar[int] = PRODUCE_KEY
    VERSIONS: ClassVar[range] = range(MIN_VERSION, MAX_VERSION + 1)
    FIRST_FLEXIBLE: ClassVar[int] = FIRST_FLEXIBLE

    topics: Sequence[TopicProduceOutcome]

    def error_code_counts(self) -> Iterable[tuple[int, int]]:
        return Counter(p.error_code for topic in self.topics for p in topic.partitions).items()

    def encoded_body(self) -> list[bytes | bytearray]:
        version = self.version
        flexible = version >= FIRST_FLEXIBLE
        entry = _ENTRY_V5 if version >= FIRST_WITH_LOG_START_OFFSET else _ENTRY_V3
        with_errors = version >= FIRST_WITH_RECORD_ERRORS
        out = bytearray(array_length(len(self.topics), flexible))
        for topic in self.topics:
            out += topic_reference(
                topic.name, topic.topic_id, version >= FIRST_WITH_TOPIC_ID, flexible
            )
            out += array_length(len(topic.partitions), flexible)
            for p in topic.partitions:
                if entry is _ENTRY_V5:
                    out += entry.pack(
                        p.index,
                        p.error_code,
                        p.base_offset,
                        p.log_append_time_ms,
                        p.log_start_offset,
                    )
                else:
                    out += entry.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms)
                if with_errors:
                    out += array_length(len(p.record_errors), flexible)
                    for batch_index, message in p.record_errors:
                        out += INT32.pack(batch_index)
                        out += nullable_string(message, flexible)
                        if flexible:
                            out += NO_TAGGED_FIELDS
                    out += nullable_string(p.error_message, flexible)
                if flexible:
                    out += NO_TAGGED_FIELDS
            if flexible:
                out += NO_TAGGED_FIELDS
        out += INT32.pack(self.throttle_ms)
        if flexible:
            out += NO_TAGGED_FIELDS
        return [out]
