"""Version-independent requests and answers of the KIP-848 consumer group APIs.

The wire adapter resolves topic ids to names before the coordinator sees a request, and
back again for the answer, so the coordinator works on topic names only.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from mirrorsim.broker.group.offset_store import TopicPartition
from mirrorsim.protocol.errors import ErrorCode

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
CONSUMER_GROUP_TYPE = "consumer"


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """What the coordinator needs of a topic: its id (the wire names topics by id) and
    its partition count (what the assignors divide)."""

    topic_id: uuid.UUID
    partitions: int


@dataclass(frozen=True, slots=True)
class ConsumerHeartbeat:
    """ConsumerGroupHeartbeat; None means "unchanged since the last heartbeat"."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: frozenset[TopicPartition] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ConsumerHeartbeatResult:
    error: ErrorCode
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: frozenset[TopicPartition] | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ConsumerMemberDescription:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: frozenset[TopicPartition]
    target_assignment: frozenset[TopicPartition]
    uses_classic_protocol: bool = False


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[ConsumerMemberDescription, ...]
