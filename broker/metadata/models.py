"""Plain records the metadata store returns; they carry no database handles."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

NO_LEADER = -1
"""A partition's leader when it has none."""


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

    @property
    def preferred_replica(self) -> int:
        """The first replica, the one that should lead (Kafka's preferred leader)."""
        return self.replicas[0] if self.replicas else NO_LEADER

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def led_by_preferred(self) -> bool:
        """Led, and by its preferred replica: a partition not so is what Kafka's
        controller counts as imbalanced, an offline one included."""
        return self.has_leader and self.leader == self.preferred_replica


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
