"""KIP-848 consumer groups: ConsumerGroupHeartbeat, its timers and the target assignment.

Theory of operation (Kafka's GroupMetadataManager for the consumer protocol):
- every heartbeat carries the member's epoch: 0 joins, -1 leaves, -2 leaves for now
  (a static member keeps its assignment until its session expires), anything else must be
  the member's current epoch (or its previous one while its owned partitions are a subset
  of its assignment: the answer to the last heartbeat may have been lost);
- a join, a leave, a changed subscription or a change of the subscribed topics' partition
  counts (including a topic created that a regex now matches) bumps the group epoch; the
  target assignment is recomputed at once by the group's assignor for that epoch;
- the heartbeating member then moves one step towards its target (`consumer_states`);
- a member whose session expires, or that keeps partitions it must revoke past its
  rebalance timeout, is removed and the group epoch bumped. Timers are on the injected
  clock; nothing polls.

Members that use the classic protocol (online migration, `classic_members`) share the
group epoch, the target and the reconciliation (`advance`); only how they hear of it
differs. When the last member using the consumer protocol leaves a group whose other
members all use the classic protocol, `downgrade` may turn the group into a classic group.

Topic metadata is passed in with each call (`topics`), so the coordinator does not depend
on the broker's metadata view. A `topics` mapping is never changed once passed: a changed
view is a new mapping, which is how a group knows to recompute its subscribed topics.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Container, Mapping

from mirrorsim.broker.group.assignors import ASSIGNORS
from mirrorsim.broker.group.clock import Clock
from mirrorsim.broker.group.config import GroupConfig
from mirrorsim.broker.group.consumer_group import ConsumerGroup, ConsumerMember
from mirrorsim.broker.group.consumer_messages import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupDescription,
    ConsumerHeartbeat,
    ConsumerHeartbeatResult,
    ConsumerMemberDescription,
    TopicInfo,
)
from mirrorsim.broker.group.consumer_states import (
    MemberAssignment,
    MemberState,
    reconcile,
)
from mirrorsim.broker.group.offset_store import TopicPartition
from mirrorsim.protocol.errors import ErrorCode

MIN_MEMBER_OFFSET_COMMIT_VERSION = 9
"""The first OffsetCommit version that carries a member epoch (KIP-848)."""


class HeartbeatRejected(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


Downgrade = Callable[[ConsumerGroup, ConsumerMember], bool]
"""Called before the last consumer-protocol member is removed from a group whose other
members all use the classic protocol; True when it took the group over as a classic group
(without the leaving member)."""


def _keep_consumer_group(_group: ConsumerGroup, _leaving: ConsumerMember) -> bool:
    return False


class ConsumerGroupCoordinator:
    def __init__(
        self, *, clock: Clock, config: GroupConfig, downgrade: Downgrade = _keep_consumer_group
    ) -> None:
        self._clock = clock
        self._config = config
        self._downgrade = downgrade
        self.groups: dict[str, ConsumerGroup] = {}

    def heartbeat(
        self, request: ConsumerHeartbeat, topics: Mapping[str, TopicInfo]
    ) -> ConsumerHeartbeatResult:
        try:
            _validate(request, self._config.consumer_assignors)
            return self._heartbeat(request, topics)
        except HeartbeatRejected as rejected:
            return _rejection(request, rejected)

    def refusal(self, request: ConsumerHeartbeat) -> ConsumerHeartbeatResult | None:
        """The answer to a malformed heartbeat, checked before a classic group with
        members is converted for it (so a refused join converts nothing)."""
        try:
            _validate(request, self._config.consumer_assignors)
        except HeartbeatRejected as rejected:
            return _rejection(request, rejected)
        return None

    def _heartbeat(
        self, request: ConsumerHeartbeat, topics: Mapping[str, TopicInfo]
    ) -> ConsumerHeartbeatResult:
        if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(request)
        group = self.groups.get(request.group_id)
        if group is None:
            if request.member_epoch != JOIN_EPOCH:
                raise HeartbeatRejected(ErrorCode.UNKNOWN_MEMBER_ID, "Unknown member.")
            group = self.groups[request.group_id] = ConsumerGroup(request.group_id)
        member, is_new = self._member(group, request)
        if member.classic is not None:  # it switched to the consumer protocol, as Kafka allows
            member.classic.cancel_timers()
            member.classic = None
        subscription_changed = _update_subscription(member, request)
        if subscription_changed:
            group.members_version += 1
        before = self.advance(
            group, member, topics, request.owned, rebalance=subscription_changed or is_new
        )
        self._arm_revocation_expiry(group, member)
        self.arm_session_expiry(group, member)
        full = request.member_epoch == JOIN_EPOCH or (
            request.rebalance_timeout_ms != -1
            and request.subscribed_topic_names is not None
            and request.owned is not None
        )
        changed = before.assigned != member.assignment.assigned
        return ConsumerHeartbeatResult(
            ErrorCode.NONE,
            member.member_id,
            member.epoch,
            self._config.consumer_heartbeat_interval_ms,
            member.assignment.assigned if full or changed or _unaware(request, member) else None,
        )

    def advance(
        self,
        group: ConsumerGroup,
        member: ConsumerMember,
        topics: Mapping[str, TopicInfo],
        owned: frozenset[TopicPartition] | None,
        *,
        rebalance: bool,
    ) -> MemberAssignment:
        """Bump the group epoch when asked to (`rebalance`: a join or a new subscription)
        or when the subscribed topics changed, recompute the target for a new epoch, and
        move the member one step towards its target; its assignment before the step."""
        if self._refresh_subscription(group, topics) or rebalance:
            group.group_epoch += 1
        if group.assignment_epoch < group.group_epoch:
            self._assign(group, topics)
        before = member.assignment
        group.set_assignment(
            member,
            reconcile(
                before,
                group.assignment_epoch,
                group.target.get(member.member_id, frozenset()),
                self.held_for(group, member),
                owned,
            ),
        )
        return before

    def held_for(self, group: ConsumerGroup, member: ConsumerMember) -> Container[TopicPartition]:
        """The partitions `member` may not take yet: those another member holds, or its
        whole target while the group is held back after a takeover."""
        if self._clock.now_ms() < group.held_back_until_ms:
            return group.target.get(member.member_id, frozenset())
        return group.held_elsewhere(member.member_id)

    def create(self, group_id: str, held_back_until_ms: int) -> None:
        """An empty consumer group; until `held_back_until_ms` its members are given no
        partition (they wait UNRELEASED_PARTITIONS), see `GroupCoordinator`."""
        self.groups[group_id] = ConsumerGroup(group_id, held_back_until_ms=held_back_until_ms)

    def _member(
        self, group: ConsumerGroup, request: ConsumerHeartbeat
    ) -> tuple[ConsumerMember, bool]:
        """The heartbeating member, and whether it is new to the group."""
        if request.member_epoch == JOIN_EPOCH:
            return self._join(group, request)
        member = group.members.get(request.member_id)
        if member is None:
            raise HeartbeatRejected(ErrorCode.UNKNOWN_MEMBER_ID, "Unknown member.")
        if (
            request.instance_id is not None
            and group.static_members.get(request.instance_id) != member.member_id
        ):
            raise HeartbeatRejected(ErrorCode.FENCED_INSTANCE_ID, "Instance id mismatch.")
        _check_epoch(member, request)
        return member, False

    def _join(
        self, group: ConsumerGroup, request: ConsumerHeartbeat
    ) -> tuple[ConsumerMember, bool]:
        """A new member; a static member back under a new id takes over its predecessor's
        assignment (one that used the classic protocol needs not have left first, as in
        Kafka); a known member rejoining (after being fenced) starts from nothing."""
        if request.instance_id is not None:
            old_id = group.static_members.get(request.instance_id)
            if old_id is not None and old_id != request.member_id:
                old = group.members[old_id]
                if not old.left_temporarily and old.classic is None:
                    raise HeartbeatRejected(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {request.instance_id} is still in use.",
                    )
                old.cancel_timers()
                member = group.replace_static(old, request.member_id)
                group.set_assignment(
                    member, dataclasses.replace(old.assignment, epoch=old.assignment.previous_epoch)
                )
                return member, False
        member = group.members.get(request.member_id)
        if member is not None:
            member.cancel_timers()
            group.set_assignment(member, MemberAssignment())
            return member, False
        if len(group.members) >= self._config.consumer_max_size:
            raise HeartbeatRejected(ErrorCode.GROUP_MAX_SIZE_REACHED, "The group is full.")
        member = ConsumerMember(
            member_id=request.member_id,
            instance_id=request.instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
        )
        group.add(member)
        return member, True

    def _leave(self, request: ConsumerHeartbeat) -> ConsumerHeartbeatResult:
        group = self.groups.get(request.group_id)
        member_id = request.member_id
        if group is not None and request.instance_id is not None:
            member_id = group.static_members.get(request.instance_id, member_id)
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None:
            raise HeartbeatRejected(ErrorCode.UNKNOWN_MEMBER_ID, "Unknown member.")
        if request.member_epoch == STATIC_LEAVE_EPOCH:
            if member.revocation_expiry is not None:
                member.revocation_expiry.cancel()
                member.revocation_expiry = None
            group.set_assignment(
                member,
                dataclasses.replace(
                    member.assignment,
                    epoch=STATIC_LEAVE_EPOCH,
                    previous_epoch=member.assignment.epoch,
                ),
            )
            self.arm_session_expiry(group, member)
        else:
            self.remove(group, member)
        return ConsumerHeartbeatResult(ErrorCode.NONE, member_id, request.member_epoch)

    def remove(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """The member leaves or is fenced and the group epoch moves, unless the group is
        handed over as a classic group (`downgrade`: the last consumer-protocol member
        leaves while classic members remain)."""
        last_consumer_member = member.classic is None and all(
            m.classic is not None for m in group.members.values() if m is not member
        )
        if last_consumer_member and len(group.members) > 1 and self._downgrade(group, member):
            return
        group.remove(member)
        group.group_epoch += 1
        if not group.members:
            group.subscription = {}
            group.target = {}
            group.assignment_epoch = group.group_epoch

    @staticmethod
    def _refresh_subscription(group: ConsumerGroup, topics: Mapping[str, TopicInfo]) -> bool:
        """Take the subscribed topics' current partition counts; True when they changed
        (a topic created, deleted or grown, or a regex matching another topic). Computed
        again only for another topics view or another membership."""
        source = (topics, group.members_version)
        if source[0] is group.subscription_source[0] and source[1] == group.subscription_source[1]:
            return False
        group.subscription_source = source
        subscription = group.subscribed_topics(topics)
        if subscription == group.subscription:
            return False
        group.subscription = subscription
        return True

    def _assign(self, group: ConsumerGroup, topics: Mapping[str, TopicInfo]) -> None:
        """The target assignment for the current group epoch."""
        group.assignor_name = self._preferred_assignor(group)
        subscriptions = {m.member_id: m.subscribed_topics(topics) for m in group.members.values()}
        group.target = ASSIGNORS[group.assignor_name](
            subscriptions, group.subscription, group.target
        )
        group.assignment_epoch = group.group_epoch

    def _preferred_assignor(self, group: ConsumerGroup) -> str:
        """The assignor most members ask for (ties: the configured order); the
        configured default when none asks."""
        configured = self._config.consumer_assignors
        asked = [m.server_assignor for m in group.members.values() if m.server_assignor]
        if not asked:
            return configured[0]
        return max(configured, key=lambda name: (asked.count(name), -configured.index(name)))

    # Timers

    def arm_session_expiry(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """A classic member keeps the session timeout of its JoinGroup."""
        if member.session_expiry is not None:
            member.session_expiry.cancel()
        timeout_ms = (
            self._config.consumer_session_timeout_ms
            if member.classic is None
            else member.classic.session_timeout_ms
        )
        member.session_expiry = self._clock.call_later(
            timeout_ms, lambda: self.expire(group, member)
        )

    def _arm_revocation_expiry(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """A member gets its rebalance timeout to revoke; the timer runs from the moment
        it was asked to and stops once it has."""
        revoking = member.assignment.state is MemberState.UNREVOKED_PARTITIONS
        if revoking and member.revocation_expiry is None:
            member.revocation_expiry = self._clock.call_later(
                member.rebalance_timeout_ms, lambda: self.expire(group, member)
            )
        elif not revoking and member.revocation_expiry is not None:
            member.revocation_expiry.cancel()
            member.revocation_expiry = None

    def expire(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """A timer ran out for the member: remove it unless it is already gone."""
        if (
            self.groups.get(group.group_id) is group
            and group.members.get(member.member_id) is member
        ):
            self.remove(group, member)

    # Offsets

    def validate_offset_commit(
        self, group_id: str, member_id: str, member_epoch: int, api_version: int | None
    ) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetCommit: without a member epoch (admin, or a
        consumer without group management) only while the group has no members; else the
        member must exist, use OffsetCommit v9+ (`api_version`; None for a transactional
        commit, which any version may send) unless it uses the classic protocol, and
        commit at its current epoch (a classic member's generation)."""
        group = self.groups[group_id]
        if member_epoch < 0 and not group.members:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if (
            member.classic is None
            and api_version is not None
            and api_version < MIN_MEMBER_OFFSET_COMMIT_VERSION
        ):
            return ErrorCode.UNSUPPORTED_VERSION
        return self._validate_member_epoch(group, member_id, member_epoch)

    def validate_offset_fetch(self, group_id: str, member_id: str, member_epoch: int) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetFetch: a fetch naming no member (epoch -1)
        is an admin fetch and always allowed."""
        if member_epoch < 0 and not member_id:
            return ErrorCode.NONE
        return self._validate_member_epoch(self.groups[group_id], member_id, member_epoch)

    @staticmethod
    def _validate_member_epoch(group: ConsumerGroup, member_id: str, epoch: int) -> ErrorCode:
        """A classic member's stale generation is ILLEGAL_GENERATION, the error its client
        rejoins on."""
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch != member.epoch:
            return (
                ErrorCode.STALE_MEMBER_EPOCH
                if member.classic is None
                else ErrorCode.ILLEGAL_GENERATION
            )
        return ErrorCode.NONE

    # Admin

    def describe(
        self, group_id: str, topics: Mapping[str, TopicInfo]
    ) -> ConsumerGroupDescription | None:
        group = self.groups.get(group_id)
        if group is None:
            return None
        return ConsumerGroupDescription(
            group_id=group_id,
            state=group.state.value,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=group.assignor_name or self._config.consumer_assignors[0],
            members=tuple(
                ConsumerMemberDescription(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    member_epoch=m.epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    assignment=m.assignment.assigned,
                    target_assignment=group.target.get(m.member_id, frozenset()),
                    uses_classic_protocol=m.classic is not None,
                )
                for m in group.members.values()
            ),
        )

    def unload(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        if group is not None:
            for member in group.members.values():
                member.cancel_timers()

    def delete(self, group_id: str) -> None:
        group = self.groups.pop(group_id)
        group.dead = True


def _rejection(request: ConsumerHeartbeat, rejected: HeartbeatRejected) -> ConsumerHeartbeatResult:
    return ConsumerHeartbeatResult(
        rejected.error, request.member_id, request.member_epoch, message=rejected.message
    )


def _validate(request: ConsumerHeartbeat, assignors: tuple[str, ...]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    if not request.group_id:
        raise HeartbeatRejected(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    if not request.member_id:
        raise HeartbeatRejected(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if request.instance_id == "":
        raise HeartbeatRejected(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
    if request.member_epoch < STATIC_LEAVE_EPOCH:
        raise HeartbeatRejected(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    if request.member_epoch == STATIC_LEAVE_EPOCH and request.instance_id is None:
        raise HeartbeatRejected(
            ErrorCode.INVALID_REQUEST, "InstanceId can't be null when leaving with epoch -2."
        )
    if request.member_epoch == JOIN_EPOCH:
        if request.rebalance_timeout_ms < 0:
            raise HeartbeatRejected(
                ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
            )
        if request.owned:
            raise HeartbeatRejected(
                ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."
            )
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise HeartbeatRejected(
                ErrorCode.INVALID_REQUEST,
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
            )
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise HeartbeatRejected(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {request.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(assignors)}.",
        )
    if request.subscribed_topic_regex:
        try:
            re.compile(request.subscribed_topic_regex)
        except re.error as error:
            raise HeartbeatRejected(
                ErrorCode.INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex {request.subscribed_topic_regex} is invalid: {error}",
            ) from None


def _unaware(request: ConsumerHeartbeat, member: ConsumerMember) -> bool:
    """The member reports owning partitions other than its assignment: the response that
    carried the assignment was lost (the client timed out and resent its heartbeat, which
    librdkafka does without the subscription, so it is no full request). Kafka 3.7 sent
    the assignment whenever owned partitions were reported; sending it again here keeps a
    member from holding partitions it was told to revoke, the group waiting on it."""
    return request.owned is not None and request.owned != member.assignment.assigned


def _check_epoch(member: ConsumerMember, request: ConsumerHeartbeat) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a newer epoch than the member's,
    or an older one other than the previous epoch with owned partitions that fit the
    current assignment, is fenced (the member rejoins with epoch 0)."""
    if request.member_epoch == member.epoch:
        return
    tolerated = (
        request.member_epoch == member.assignment.previous_epoch
        and request.owned is not None
        and request.owned <= member.assignment.assigned
    )
    if request.member_epoch > member.epoch or not tolerated:
        raise HeartbeatRejected(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({request.member_epoch}) "
            f"than the one known by the group coordinator ({member.epoch})."
            if request.member_epoch > member.epoch
            else "The consumer group member has a smaller member epoch than expected.",
        )


def _update_subscription(member: ConsumerMember, request: ConsumerHeartbeat) -> bool:
    """Take what the heartbeat changed; True when the subscription itself changed."""
    if request.rebalance_timeout_ms >= 0:
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
    if request.rack_id is not None:
        member.rack_id = request.rack_id
    if request.server_assignor is not None:
        member.server_assignor = request.server_assignor
    if request.client_id:
        member.client_id = request.client_id
        member.client_host = request.client_host
    changed = False
    names = request.subscribed_topic_names
    if names is not None and tuple(sorted(names)) != member.subscribed_topic_names:
        member.subscribed_topic_names = tuple(sorted(names))
        changed = True
    regex = request.subscribed_topic_regex
    if regex is not None and (regex or None) != member.subscribed_topic_regex:
        member.subscribed_topic_regex = regex or None
        changed = True
    return changed
