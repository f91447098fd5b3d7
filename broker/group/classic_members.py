"""Members of a consumer group that use the classic protocol (online migration).

A consumer group keeps the members of the classic group it was upgraded from, and takes
new JoinGroup members too. They are consumer-group members like the others (one group
epoch, one target computed by the group's assignor, one reconciliation: a partition
moves only once its previous owner no longer holds it); what differs is how they hear of
it. Kafka's GroupMetadataManager answers them in their own protocol, and so does this:

- JoinGroup is where a classic member reconciles: its subscription metadata carries its
  topics and the partitions it still owns, the member takes one step towards its target
  (`ConsumerGroupCoordinator.advance`) and the answer names its member epoch as the
  generation, its preferred protocol and no leader, so it syncs as a follower;
- SyncGroup returns the member's current assignment, encoded in its subscription's
  version (partitions it still has to revoke are left out, so the client revokes them);
- Heartbeat answers REBALANCE_IN_PROGRESS while the member must rejoin: the group epoch
  moved past its epoch, it has partitions to revoke, or partitions it waited for are
  free now. A cooperative client then rejoins with what it still owns; an eager one
  revokes everything first and rejoins owning nothing;
- LeaveGroup removes the member and bumps the group epoch.

Timers stand in for the classic rebalance: a member told to rejoin must do so within its
rebalance timeout, a member that joined must sync within it, and every member must
heartbeat within its JoinGroup session timeout; otherwise it is removed.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from mirrorsim.broker.group.clock import Clock
from mirrorsim.broker.group.config import GroupConfig
from mirrorsim.broker.group.consumer_coordinator import ConsumerGroupCoordinator
from mirrorsim.broker.group.consumer_group import ClassicProtocol, ConsumerGroup, ConsumerMember
from mirrorsim.broker.group.consumer_messages import TopicInfo
from mirrorsim.broker.group.consumer_states import MemberState
from mirrorsim.broker.group.messages import (
    JoinRequest,
    JoinResult,
    LeavingMember,
    SyncRequest,
    SyncResult,
)
from mirrorsim.broker.group.subscription import (
    CONSUMER_PROTOCOL_TYPE,
    MalformedProtocol,
    Subscription,
    decode_subscription,
    encode_assignment,
    subscription_version,
)
from mirrorsim.protocol.errors import ErrorCode


class _Refused(Exception):
    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error


class ClassicMembers:
    def __init__(
        self, consumer: ConsumerGroupCoordinator, *, clock: Clock, config: GroupConfig
    ) -> None:
        self._consumer = consumer
        self._clock = clock
        self._config = config

    def join(
        self, group: ConsumerGroup, request: JoinRequest, topics: Mapping[str, TopicInfo]
    ) -> JoinResult:
        member_id = (
            request.member_id or f"{request.group_instance_id or request.client_id}-{uuid.uuid4()}"
        )
        try:
            subscription = self._check_join(group, request, member_id)
            if (
                not request.member_id
                and request.group_instance_id is None
                and request.require_known_member_id
            ):
                return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
            member, is_new = self._joining_member(group, request, member_id)
        except _Refused as refused:
            return JoinResult(refused.error, request.member_id)
        resubscribed = _update(member, request, subscription)
        if resubscribed:
            group.members_version += 1
        self._consumer.advance(
            group, member, topics, subscription.owned, rebalance=is_new or resubscribed
        )
        classic = _classic(member)
        classic.cancel_timers()
        classic.sync_expiry = self._clock.call_later(
            member.rebalance_timeout_ms, lambda: self._consumer.expire(group, member)
        )
        self._consumer.arm_session_expiry(group, member)
        return JoinResult(
            ErrorCode.NONE,
            member.member_id,
            generation_id=member.epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=classic.protocol_name,
        )

    def _check_join(
        self, group: ConsumerGroup, request: JoinRequest, member_id: str
    ) -> Subscription:
        """Kafka's checks, in its order: room for a new member, a protocol every other
        classic member supports, and (here) a subscription the broker can read."""
        if member_id not in group.members and len(group.members) >= self._config.consumer_max_size:
            raise _Refused(ErrorCode.GROUP_MAX_SIZE_REACHED)
        names = frozenset(name for name, _ in request.protocols)
        if (
            request.protocol_type != CONSUMER_PROTOCOL_TYPE
            or not names
            or not group.supports_classic_protocols(names, member_id)
        ):
            raise _Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        try:
            return decode_subscription(request.protocols[0][1])
        except MalformedProtocol:
            raise _Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL) from None

    @staticmethod
    def _joining_member(
        group: ConsumerGroup, request: JoinRequest, member_id: str
    ) -> tuple[ConsumerMember, bool]:
        """The member and whether it is new. A static member joining without a member id
        takes over its instance's predecessor (and its partitions); one naming a member
        id must be the instance's current member."""
        instance_id = request.group_instance_id
        current_id = None if instance_id is None else group.static_members.get(instance_id)
        if instance_id is not None and request.member_id:
            if current_id is None:
                raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID)
            if current_id != member_id:
                raise _Refused(ErrorCode.FENCED_INSTANCE_ID)
        if current_id is not None and current_id != member_id:
            predecessor = group.members[current_id]
            predecessor.cancel_timers()
            return group.replace_static(predecessor, member_id), False
        member = group.members.get(member_id)
        if member is not None:
            return member, False
        member = ConsumerMember(
            member_id=member_id,
            instance_id=instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
        )
        group.add(member)
        return member, True

    def sync(self, group: ConsumerGroup, request: SyncRequest) -> SyncResult:
        try:
            member = self._syncing_member(group, request)
        except _Refused as refused:
            return SyncResult(refused.error)
        classic = _classic(member)
        if classic.sync_expiry is not None:
            classic.sync_expiry.cancel()
            classic.sync_expiry = None
        self._consumer.arm_session_expiry(group, member)
        return SyncResult(
            ErrorCode.NONE,
            encode_assignment(
                member.assignment.assigned, subscription_version(classic.protocols[0][1])
            ),
            request.protocol_type,
            request.protocol_name,
        )

    def _syncing_member(self, group: ConsumerGroup, request: SyncRequest) -> ConsumerMember:
        """A member that rejoined since the group epoch moved may sync, and so may one
        still revoking (its sync tells it what to keep); any other must rejoin first."""
        member = _classic_member(group, request.member_id, request.group_instance_id)
        _check_generation(member, request.generation_id)
        wrong_type = request.protocol_type not in (None, CONSUMER_PROTOCOL_TYPE)
        wrong_name = request.protocol_name not in (None, _classic(member).protocol_name)
        if wrong_type or wrong_name:
            raise _Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if (
            group.group_epoch > member.epoch
            and member.assignment.state is not MemberState.UNREVOKED_PARTITIONS
        ):
            self._arm_join_expiry(group, member)
            raise _Refused(ErrorCode.REBALANCE_IN_PROGRESS)
        return member

    def heartbeat(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        try:
            member = _classic_member(group, member_id, instance_id)
            _check_generation(member, generation_id)
        except _Refused as refused:
            return refused.error
        self._consumer.arm_session_expiry(group, member)
        if self._must_rejoin(group, member):
            self._arm_join_expiry(group, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _must_rejoin(self, group: ConsumerGroup, member: ConsumerMember) -> bool:
        """A new group epoch to catch up with, partitions to revoke, or partitions it
        waited for that nobody holds any more."""
        state = member.assignment.state
        if member.epoch < group.group_epoch or state is MemberState.UNREVOKED_PARTITIONS:
            return True
        if state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        held = self._consumer.held_for(group, member)
        missing = group.target.get(member.member_id, frozenset()) - member.assignment.assigned
        return not any(tp in held for tp in missing)

    def _arm_join_expiry(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        classic = _classic(member)
        if classic.join_expiry is None:
            classic.join_expiry = self._clock.call_later(
                member.rebalance_timeout_ms, lambda: self._consumer.expire(group, member)
            )

    def leave(self, group: ConsumerGroup, leaving: LeavingMember) -> ErrorCode:
        """LeaveGroup names a member by id, or a static member by instance id alone (an
        administrative removal)."""
        member_id = leaving.member_id
        if leaving.group_instance_id is not None and not member_id:
            member_id = group.static_members.get(leaving.group_instance_id, "")
        try:
            member = _classic_member(group, member_id, leaving.group_instance_id)
        except _Refused as refused:
            return refused.error
        self._consumer.remove(group, member)
        return ErrorCode.NONE


def _classic_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None
) -> ConsumerMember:
    """Kafka's validateConsumerGroupMember, for a member that must use the classic
    protocol (one using the consumer protocol is unknown to these APIs)."""
    if instance_id is not None:
        current_id = group.static_members.get(instance_id)
        if current_id is None:
            raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID)
        if current_id != member_id:
            raise _Refused(ErrorCode.FENCED_INSTANCE_ID)
    member = group.members.get(member_id)
    if member is None or member.classic is None:
        raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID)
    return member


def _check_generation(member: ConsumerMember, generation_id: int) -> None:
    if generation_id != member.epoch:
        raise _Refused(ErrorCode.ILLEGAL_GENERATION)


def _classic(member: ConsumerMember) -> ClassicProtocol:
    assert member.classic is not None, "a classic member"
    return member.classic


def _update(member: ConsumerMember, request: JoinRequest, subscription: Subscription) -> bool:
    """Take what the JoinGroup carries; True when the subscribed topics changed."""
    member.client_id = request.client_id
    member.client_host = request.client_host
    if request.group_instance_id is not None:
        member.instance_id = request.group_instance_id
    if request.rebalance_timeout_ms >= 0:
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
    if subscription.rack_id is not None:
        member.rack_id = subscription.rack_id
    if member.classic is None:
        member.classic = ClassicProtocol(request.session_timeout_ms, request.protocols)
    else:
        member.classic.session_timeout_ms = request.session_timeout_ms
        member.classic.protocols = request.protocols
    names = tuple(sorted(set(subscription.topics)))
    changed = names != member.subscribed_topic_names or member.subscribed_topic_regex is not None
    member.subscribed_topic_names = names
    member.subscribed_topic_regex = None
    return changed
