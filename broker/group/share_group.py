"""The membership of one KIP-932 share group: members, epochs and target assignment.

Bookkeeping only: `ShareGroupCoordinator` decides when the group epoch moves and owns the
timers. Unlike a consumer group there is no reconciliation: records of a partition are
shared between the members it is assigned to, so a member takes its new target as soon as
it heartbeats.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from mirrorsim.broker.group.clock import TimerHandle
from mirrorsim.broker.group.consumer_messages import TopicInfo
from mirrorsim.broker.group.offset_store import TopicPartition


class ShareGroupState(enum.Enum):
    """Kafka's ShareGroupState as DescribeGroups, ListGroups and ShareGroupDescribe show it."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True, eq=False)
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None = None
    subscribed_topic_names: frozenset[str] = frozenset()
    epoch: int = 0
    previous_epoch: int = -1
    """Accepted in a heartbeat too: the answer that moved the member on may have been lost."""
    assignment: frozenset[TopicPartition] = frozenset()
    """What the member was last given (its target as of `epoch`)."""
    session_expiry: TimerHandle | None = field(default=None, repr=False)

    def cancel_timers(self) -> None:
        if self.session_expiry is not None:
            self.session_expiry.cancel()
            self.session_expiry = None


@dataclass(slots=True, eq=False)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, frozenset[TopicPartition]] = field(default_factory=dict)
    subscription: dict[str, int] = field(default_factory=dict)
    """Partition count of every subscribed topic, as of the last group epoch bump."""
    subscription_source: tuple[Mapping[str, TopicInfo] | None, int] = (None, -1)
    """The topics view and `members_version` `subscription` was computed from."""
    members_version: int = 0
    """Moves whenever a member joins, leaves or changes its subscription."""
    dead: bool = False

    @property
    def state(self) -> ShareGroupState:
        if self.dead:
            return ShareGroupState.DEAD
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def add(self, member: ShareMember) -> None:
        self.members_version += 1
        self.members[member.member_id] = member

    def remove(self, member: ShareMember) -> None:
        member.cancel_timers()
        self.members_version += 1
        del self.members[member.member_id]
        self.target.pop(member.member_id, None)

    def subscribed_topics(self, topics: Mapping[str, TopicInfo]) -> dict[str, int]:
        """Every member's subscribed topics that exist, with their partition counts."""
        names = set().union(*(m.subscribed_topic_names for m in self.members.values()))
        return {name: topics[name].partitions for name in sorted(names) if name in topics}
