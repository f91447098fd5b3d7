"""Plain records the metadata store returns; they carry no database handles."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    rack: str | None
    registered_at: int
    heartbeat_at: int
    broker_epoch: int = 0
    """This incarnation's epoch (Kafka's broker epoch): new at every registration."""
    fenced: bool = False
    """Registered, but not yet cleared by the controller to lead or be in an ISR."""


@dataclass(frozen=True, slots=True)
class PartitionAssignment:
    partition: int
    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicRecord:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str] = field(default_factory=dict)
    partitions: tuple[PartitionAssignment, ...] = ()


@dataclass(frozen=True, slots=True)
class MirrorRecord:
    name: str
    configs: dict[str, str]
    created_at: int


class TopicExistsError(Exception):
    """CreateTopics for a name (or a topic id) that is already taken."""


class UnknownTopicError(Exception):
    """An operation on a topic the store does not know."""


class TopicConfigsChangedError(Exception):
    """A conditional config write found the topic's configs changed since they were read."""
