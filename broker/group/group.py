"""The membership of one classic group: who is in it, who leads, which protocol won.

This is bookkeeping only; the coordinator decides when to rebalance and owns the timers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from mirrorsim.broker.group.clock import TimerHandle
from mirrorsim.broker.group.member import MemberMetadata
from mirrorsim.broker.group.messages import JoinedMember
from mirrorsim.broker.group.state import GroupEvent, GroupState, next_state
from mirrorsim.broker.group.subscription import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from mirrorsim.protocol.errors import ErrorCode


@dataclass(slots=True, eq=False)
class GroupMetadata:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: dict[str, TimerHandle] = field(default_factory=dict)
    pending_sync_members: set[str] = field(default_factory=set)
    subscribed_topics: frozenset[str] | None = None
    new_member_added: bool = False
    in_initial_delay: bool = False
    join_timer: TimerHandle | None = field(default=None, repr=False)
    sync_timer: TimerHandle | None = field(default=None, repr=False)

    def transition(self, event: GroupEvent) -> None:
        self.state = next_state(self.state, event)

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member: MemberMetadata) -> None:
        member.cancel_session_expiry()
        del self.members[member.member_id]
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        self.pending_sync_members.discard(member.member_id)
        if self.leader_id == member.member_id:
            self.leader_id = next(iter(self.members), None)

    def replace_static_member(self, member: MemberMetadata, new_member_id: str) -> None:
        """Give a rejoining static member a fresh id; the old id is fenced from now on."""
        old_member_id = member.member_id
        del self.members[old_member_id]
        member.member_id = new_member_id
        self.members[new_member_id] = member
        assert member.group_instance_id is not None
        self.static_members[member.group_instance_id] = new_member_id
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)

    def current_member_error(self, member_id: str, group_instance_id: str | None) -> ErrorCode:
        """Kafka's validateCurrentMember: a stale id of a static member is fenced, an id
        the group never saw is unknown."""
        if (
            group_instance_id is not None
            and self.static_members.get(group_instance_id, member_id) != member_id
        ):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def candidate_protocols(self) -> set[str]:
        counts = Counter(name for m in self.members.values() for name in set(m.protocol_names))
        return {name for name, count in counts.items() if count == len(self.members)}

    def supports_protocols(self, protocol_type: str, protocol_names: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocol_names)
        return protocol_type == self.protocol_type and bool(
            self.candidate_protocols() & set(protocol_names)
        )

    def select_protocol(self) -> str:
        """Each member votes for its favourite common protocol; the most votes win and a
        tie goes to the earliest member's vote."""
        candidates = self.candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self.members.values())
        return max(votes, key=lambda name: votes[name])

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    @property
    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return self.awaiting_join_count == len(self.members) and not self.pending_members

    def elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick one that did; False when none did."""
        leader = self.members.get(self.leader_id or "")
        if leader is not None and leader.awaiting_join is not None:
            return True
        joined = next((m for m in self.members.values() if m.awaiting_join is not None), None)
        if joined is None:
            return False
        self.leader_id = joined.member_id
        return True

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.choose_protocol()
            self.transition(GroupEvent.JOIN_COMPLETED)
        else:
            self.protocol_name = None
            self.subscribed_topics = None
            self.transition(GroupEvent.ALL_MEMBERS_GONE)

    def choose_protocol(self) -> None:
        """The members' protocol for this generation and the topics they subscribe to: on
        every completed join, and when a consumer group is downgraded into this group."""
        self.protocol_name = self.select_protocol()
        self.subscribed_topics = self._compute_subscribed_topics()

    def _compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = subscribed_topics(member.metadata_for(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return frozenset(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        """Unknown subscriptions count as subscribed, so OffsetDelete errs on the safe side."""
        return self.subscribed_topics is None or topic in self.subscribed_topics

    def joined_members(self) -> tuple[JoinedMember, ...]:
        assert self.protocol_name is not None
        return tuple(
            JoinedMember(m.member_id, m.group_instance_id, m.metadata_for(self.protocol_name))
            for m in self.members.values()
        )

    def cancel_timers(self) -> None:
        for timer in (self.join_timer, self.sync_timer, *self.pending_members.values()):
            if timer is not None:
                timer.cancel()
        self.join_timer = self.sync_timer = None
        for member in self.members.values():
            member.cancel_session_expiry()
