"""The membership of one KIP-848 consumer group: members, epochs and target assignment.

Bookkeeping only: `ConsumerGroupCoordinator` decides when the group epoch moves and
owns the timers; the reconciliation rules are in `consumer_states`.
"""

from __future__ import annotations

import re
from collections.abc import Container, Mapping
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
class ClassicProtocol:
    """What a member using JoinGroup/SyncGroup (the classic protocol) has in a consumer
    group: its JoinGroup session timeout and protocols, and the timers that stand in for
    the classic rebalance: it must rejoin when told to (`join_expiry`) and sync after
    joining (`sync_expiry`), each within its rebalance timeout."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    join_expiry: TimerHandle | None = field(default=None, repr=False)
    sync_expiry: TimerHandle | None = field(default=None, repr=False)

    @property
    def protocol_name(self) -> str:
        """The member's preferred protocol: what its JoinGroup answer names."""
        return self.protocols[0][0]

    @property
    def protocol_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.protocols)

    def cancel_timers(self) -> None:
        for timer in (self.join_expiry, self.sync_expiry):
            if timer is not None:
                timer.cancel()
        self.join_expiry = self.sync_expiry = None


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
    classic: ClassicProtocol | None = None
    """Set for a member that uses the classic protocol (online migration)."""
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
        if self.classic is not None:
            self.classic.cancel_timers()


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
    subscription_source: tuple[Mapping[str, TopicInfo] | None, int] = (None, -1)
    """The topics view and `members_version` `subscription` was computed from."""
    members_version: int = 0
    """Moves whenever a member joins, leaves or changes its subscription."""
    owners: dict[TopicPartition, str] = field(default_factory=dict)
    """Who holds each partition (assigned or being revoked): the index behind
    `held_elsewhere`, kept by `set_assignment`."""
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
        self.members_version += 1
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member: ConsumerMember) -> None:
        member.cancel_timers()
        self.set_assignment(member, MemberAssignment())
        self.members_version += 1
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
        for tp in old.assignment.held:
            self.owners[tp] = new_member_id
        self.add(old)
        return old

    def set_assignment(self, member: ConsumerMember, assignment: MemberAssignment) -> None:
        """The only way a member's assignment changes, so `owners` stays true."""
        for tp in member.assignment.held - assignment.held:
            if self.owners.get(tp) == member.member_id:
                del self.owners[tp]
        for tp in assignment.held:
            self.owners[tp] = member.member_id
        member.assignment = assignment

    def supports_classic_protocols(self, names: frozenset[str], joining: str) -> bool:
        """Kafka's supportsClassicProtocols: a classic member may join when one of its
        protocols is supported by every other classic member, so the classic members
        always share a protocol (the one a downgrade selects)."""
        others = [
            m.classic.protocol_names
            for m in self.members.values()
            if m.classic is not None and m.member_id != joining
        ]
        return bool(names.intersection(*others))

    def held_elsewhere(self, member_id: str) -> Container[TopicPartition]:
        """The partitions another member holds, as a membership test (no copy)."""
        return _HeldElsewhere(self.owners, member_id)

    def subscribed_topics(self, topics: Mapping[str, TopicInfo]) -> dict[str, int]:
        """Every member's subscribed topics that exist, with their partition counts."""
        names: set[str] = set()
        for member in self.members.values():
            names |= member.subscribed_topics(topics)
        return {name: topics[name].partitions for name in sorted(names)}


@dataclass(frozen=True, slots=True)
class _HeldElsewhere:
    owners: Mapping[TopicPartition, str]
    member_id: str

    def __contains__(self, tp: object) -> bool:
        owner = self.owners.get(tp)  # type: ignore[call-overload]
        return owner is not None and owner != self.member_id
