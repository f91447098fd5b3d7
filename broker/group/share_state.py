"""The values a KIP-932 share partition hands out, takes in and keeps durable.

A share partition (one per share group and topic partition, on the partition's leader)
tracks the records between its start offset (SPSO) and its end offset: each is available,
acquired by one member under a time lock, acknowledged or archived. What survives a
restart or a leader move is a `ShareSnapshot`: the start offset and the states of the
records above it, as Kafka's share coordinator keeps them in ``__share_group_state``.
An acquired record is kept as available with its delivery count, so after a crash it is
delivered again and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class RecordState(IntEnum):
    """Kafka's ``RecordState`` ids, which are also the ids stored in a snapshot."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    """The acknowledgement types of ShareFetch and ShareAcknowledge v1."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """A record batch read from the partition's log: its offset range and whether it is a
    control batch (a transaction marker, never delivered to a share consumer)."""

    base_offset: int
    last_offset: int
    is_control: bool = False


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """Records acquired together: ShareFetch's ``AcquiredRecords`` entry."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A run of records above the start offset with one state and delivery count."""

    first_offset: int
    last_offset: int
    delivery_count: int
    state: RecordState


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    """A share partition's durable state: its start offset, and the states of the records
    at or above it that are not simply available with no delivery yet."""

    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    state_epoch: int = 0
