"""The membership of one KIP-848 consumer group: members, epochs and target assignment.

Bookkeeping only: `ConsumerGroupCoordinator` decides when the group epoch moves and
owns the timers; the reconciliation rules are in `consumer_states`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from mirrorsim.broker.group.clock import TimerHandle
from mirrorsim.broker.group.consumer_messages import STATIC_LEAVE_EPOCH, TopicInfo
from mirrorsim.broker.group.consumer_states import (
    ConsumerGroupState,
    MemberAssignment,
    MemberState,
    group_state,
)
from mirrorsim.broker.group.offset_store import TopicPartition


@dataclass(slots=True, eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assignment: MemberAssignment = field(default_factory=MemberAssignment)
    session_expiry: TimerHandle | None = field(default=None, repr=False)
    revocation_expiry: TimerHandle | None = field(default=None, repr=False)

    @property
    def epoch(self) -> int:
        return self.assignment.epoch

    @property
    def left_temporarily(self) -> bool:
        """A static member that said it will come back (epoch -2) keeps its assignment."""
        return self.assignment.epoch == STATIC_LEAVE_EPOCH

    def subscribed_topics(self, topics: Mapping[str, TopicInfo]) -> frozenset[str]:
        """Named topics that exist, plus every topic the regex matches in full (Python
        `re`, where Kafka uses RE2)."""
        names = {t for t in self.subscribed_topic_names if t in topics}
        if self.subscribed_topic_regex:
            pattern = re.compile(self.subscribed_topic_regex)
            names |= {t for t in topics if pattern.fullmatch(t)}
        return frozenset(names)

    def cancel_timers(self) -> None:
        for timer in (self.session_expiry, self.revocation_expiry):
            if timer is not None:
                timer.cancel()
        self.session_expiry = self.revocation_expiry = None


@dataclass(slots=True, eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    """Instance id to the member id that currently uses it."""
    target: dict[str, frozenset[TopicPartition]] = field(default_factory=dict)
    subscription: dict[str, int] = field(default_factory=dict)
    """Partition count of every subscribed topic, as of the last group epoch bump."""
    dead: bool = False
    held_back_until_ms: int = 0
    """Before this time no partition is handed out (a group taken over after a restart)."""

    @property
    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        return group_state(
            bool(self.members),
            self.assignment_epoch < self.group_epoch,
            all(
                m.assignment.state is MemberState.STABLE and m.epoch == self.assignment_epoch
                for m in self.members.values()
            ),
        )

    def add(self, member: ConsumerMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member: ConsumerMember) -> None:
        member.cancel_timers()
        del self.members[member.member_id]
        self.target.pop(member.member_id, None)
        if (
            member.instance_id is not None
            and self.static_members.get(member.instance_id) == member.member_id
        ):
            del self.static_members[member.instance_id]

    def replace_static(self, old: ConsumerMember, new_member_id: str) -> ConsumerMember:
        """A static member came back under a new member id: it takes over the old one's
        assignment and target, so nothing moves."""
        del self.members[old.member_id]
        self.target[new_member_id] = self.target.pop(old.member_id, frozenset())
        old.member_id = new_member_id
        self.add(old)
        return old

    def held_by_others(self, member_id: str) -> frozenset[TopicPartition]:
        held: set[TopicPartition] = set()
        for other in self.members.values():
            if other.member_id != member_id:
                held |= other.assignment.held
        return frozenset(held)

    def subscribed_topics(self, topics: Mapping[str, TopicInfo]) -> dict[str, int]:
        names: set[str] = set()
        for member in self.members.values():
            names |= member.subscribed_topics(topics)
        return {name: topics[name].partitions for name in sorted(names)}
