"""Version-independent requests and answers of the KIP-932 share group membership APIs.

As for consumer groups (`consumer_messages`), the wire adapter resolves topic ids to names
and back, so the coordinator works on topic names only.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirrorsim.broker.group.offset_store import TopicPartition
from mirrorsim.protocol.errors import ErrorCode

SHARE_GROUP_TYPE = "share"
SHARE_PROTOCOL_TYPE = "share"
"""What ListGroups reports as a share group's protocol type (Kafka's ShareGroup.PROTOCOL_TYPE)."""


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    """ShareGroupHeartbeat; None means "unchanged since the last heartbeat"."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ShareHeartbeatResult:
    error: ErrorCode
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: frozenset[TopicPartition] | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ShareMemberDescription:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[ShareMemberDescription, ...]
