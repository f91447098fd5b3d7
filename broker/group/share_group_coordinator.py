"""KIP-932 share groups: ShareGroupHeartbeat, its session timer and the target assignment.

Theory of operation (Kafka 4.1's GroupMetadataManager for the share protocol):
- every heartbeat carries the member's epoch: 0 joins (the member id is the client's own
  UUID, kept for the life of the consumer), -1 leaves, anything else must be the member's
  current epoch or its previous one (the answer that moved it on may have been lost);
  otherwise FENCED_MEMBER_EPOCH;
- a join, a leave, a changed subscription or a change of the subscribed topics' partition
  counts bumps the group epoch, and the target assignment is recomputed at once by the
  `simple` assignor (`share_assignor`);
- there is no revocation protocol: records, not partitions, are what members own, so a
  heartbeating member takes the assignment epoch and its target straight away;
- a member whose session expires is removed and the group epoch bumped. Timers are on the
  injected clock; nothing polls.

Topic metadata is passed in with each heartbeat (`topics`), as for consumer groups
(`consumer_coordinator`), so the coordinator does not depend on the metadata view; a
`topics` mapping is never changed once passed.

The session timeout and heartbeat interval are the broker's `group.share.*` configs for
every group: Kafka lets a group's `share.session.timeout.ms` / `share.heartbeat.interval.ms`
override them, which here are stored and described only (`dynamic_configs`).
"""

from __future__ import annotations

from collections.abc import Mapping

from mirrorsim.broker.group.clock import Clock
from mirrorsim.broker.group.config import GroupConfig
from mirrorsim.broker.group.consumer_messages import JOIN_EPOCH, LEAVE_EPOCH, TopicInfo
from mirrorsim.broker.group.offset_store import TopicPartition
from mirrorsim.broker.group.share_assignor import SIMPLE, simple_assign
from mirrorsim.broker.group.share_group import ShareGroup, ShareMember
from mirrorsim.broker.group.share_messages import (
    ShareGroupDescription,
    ShareHeartbeat,
    ShareHeartbeatResult,
    ShareMemberDescription,
)
from mirrorsim.protocol.errors import ErrorCode


class HeartbeatRejected(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class ShareGroupCoordinator:
    def __init__(self, *, clock: Clock, config: GroupConfig) -> None:
        self._clock = clock
        self._config = config
        self.groups: dict[str, ShareGroup] = {}

    def heartbeat(
        self, request: ShareHeartbeat, topics: Mapping[str, TopicInfo]
    ) -> ShareHeartbeatResult:
        try:
            _validate(request)
            if request.member_epoch == LEAVE_EPOCH:
                return self._leave(request)
            return self._heartbeat(request, topics)
        except HeartbeatRejected as rejected:
            return ShareHeartbeatResult(
                rejected.error, request.member_id, request.member_epoch, message=rejected.message
            )

    def _heartbeat(
        self, request: ShareHeartbeat, topics: Mapping[str, TopicInfo]
    ) -> ShareHeartbeatResult:
        group = self.groups.get(request.group_id)
        if group is None:
            if request.member_epoch != JOIN_EPOCH:
                raise _unknown_member(request)
            group = self.groups[request.group_id] = ShareGroup(request.group_id)
        member, is_new = self._member(group, request)
        subscription_changed = _update_member(member, request)
        if is_new:
            group.add(member)
        elif subscription_changed:
            group.members_version += 1
        if self._refresh_subscription(group, topics) or subscription_changed or is_new:
            group.group_epoch += 1
            self._assign(group)
        before = member.assignment
        if member.epoch != group.assignment_epoch:
            member.previous_epoch = member.epoch
            member.epoch = group.assignment_epoch
            member.assignment = group.target.get(member.member_id, frozenset())
        self._arm_session_expiry(group, member)
        full = request.member_epoch == JOIN_EPOCH or request.subscribed_topic_names is not None
        return ShareHeartbeatResult(
            ErrorCode.NONE,
            member.member_id,
            member.epoch,
            self._config.share_heartbeat_interval_ms,
            member.assignment if full or before != member.assignment else None,
        )

    def _member(self, group: ShareGroup, request: ShareHeartbeat) -> tuple[ShareMember, bool]:
        """The heartbeating member, and whether it is new to the group (Kafka's
        throwIfShareGroupIsFull, then getOrMaybeSubscribeShareGroupMember)."""
        member = group.members.get(request.member_id)
        if member is None and len(group.members) >= self._config.share_max_size:
            raise HeartbeatRejected(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                "The share group has reached its maximum capacity of "
                f"{self._config.share_max_size} members.",
            )
        if member is None:
            if request.member_epoch != JOIN_EPOCH:
                raise _unknown_member(request)
            member = ShareMember(request.member_id, request.client_id, request.client_host)
            return member, True
        _check_epoch(member, request.member_epoch)
        return member, False

    def _leave(self, request: ShareHeartbeat) -> ShareHeartbeatResult:
        group = self.groups.get(request.group_id)
        member = None if group is None else group.members.get(request.member_id)
        if group is None or member is None:
            raise _unknown_member(request)
        self._remove(group, member)
        return ShareHeartbeatResult(ErrorCode.NONE, member.member_id, LEAVE_EPOCH)

    def _remove(self, group: ShareGroup, member: ShareMember) -> None:
        """The member is gone: the group epoch moves and the others' target is computed
        again at once, on the partition counts last seen (a change of those is picked up
        by the next heartbeat's refresh)."""
        group.remove(member)
        group.group_epoch += 1
        names = set().union(*(m.subscribed_topic_names for m in group.members.values()))
        group.subscription = {t: n for t, n in group.subscription.items() if t in names}
        self._assign(group)

    @staticmethod
    def _refresh_subscription(group: ShareGroup, topics: Mapping[str, TopicInfo]) -> bool:
        """Take the subscribed topics' current partition counts; True when they changed.
        Computed again only for another topics view or another membership."""
        source = (topics, group.members_version)
        if source[0] is group.subscription_source[0] and source[1] == group.subscription_source[1]:
            return False
        group.subscription_source = source
        subscription = group.subscribed_topics(topics)
        if subscription == group.subscription:
            return False
        group.subscription = subscription
        return True

    @staticmethod
    def _assign(group: ShareGroup) -> None:
        """The target assignment for the current group epoch."""
        subscriptions = {
            m.member_id: frozenset(t for t in m.subscribed_topic_names if t in group.subscription)
            for m in group.members.values()
        }
        group.target = simple_assign(subscriptions, group.subscription, group.target)
        group.assignment_epoch = group.group_epoch

    def _arm_session_expiry(self, group: ShareGroup, member: ShareMember) -> None:
        if member.session_expiry is not None:
            member.session_expiry.cancel()
        member.session_expiry = self._clock.call_later(
            self._config.share_session_timeout_ms, lambda: self._expire(group, member)
        )

    def _expire(self, group: ShareGroup, member: ShareMember) -> None:
        if (
            self.groups.get(group.group_id) is group
            and group.members.get(member.member_id) is member
        ):
            self._remove(group, member)

    # Queries (for the share-fetch path and the admin APIs)

    def assignment(self, group_id: str, member_id: str) -> frozenset[TopicPartition] | None:
        """The partitions the member was last given, or None when it is not a member of
        the group (never joined, left, expired, or this broker restarted since)."""
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        return None if member is None else member.assignment

    def describe(self, group_id: str) -> ShareGroupDescription | None:
        group = self.groups.get(group_id)
        if group is None:
            return None
        return ShareGroupDescription(
            group_id=group_id,
            state=group.state.value,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=SIMPLE,
            members=tuple(
                ShareMemberDescription(
                    member_id=m.member_id,
                    rack_id=m.rack_id,
                    member_epoch=m.epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=tuple(sorted(m.subscribed_topic_names)),
                    assignment=m.assignment,
                )
                for m in group.members.values()
            ),
        )

    def ensure(self, group_id: str) -> None:
        """AlterShareGroupOffsets names a group id no group has: the share group is created,
        Empty, as Kafka's coordinator does, so the offsets set belong to a share group (the
        caller checks the id is free)."""
        self.groups.setdefault(group_id, ShareGroup(group_id))

    def unload(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        if group is not None:
            for member in group.members.values():
                member.cancel_timers()

    def delete(self, group_id: str) -> None:
        """DeleteGroups of an empty share group (the caller checks it has no members)."""
        group = self.groups.pop(group_id)
        group.dead = True


def _validate(request: ShareHeartbeat) -> None:
    """Kafka's throwIfShareGroupHeartbeatRequestIsInvalid (an all-blank string counts as
    empty, as there)."""
    if not request.member_id.strip():
        raise HeartbeatRejected(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if not request.group_id.strip():
        raise HeartbeatRejected(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    if request.rack_id is not None and not request.rack_id.strip():
        raise HeartbeatRejected(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
    if request.member_epoch == JOIN_EPOCH and not request.subscribed_topic_names:
        raise HeartbeatRejected(
            ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."
        )
    if request.member_epoch < LEAVE_EPOCH:
        raise HeartbeatRejected(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")


def _unknown_member(request: ShareHeartbeat) -> HeartbeatRejected:
    return HeartbeatRejected(
        ErrorCode.UNKNOWN_MEMBER_ID,
        f"Member {request.member_id} is not a member of group {request.group_id}.",
    )


def _check_epoch(member: ShareMember, epoch: int) -> None:
    """Kafka's throwIfShareGroupMemberEpochIsInvalid: a newer epoch than the member's, or
    an older one other than its previous epoch, is fenced (the client rejoins)."""
    if epoch > member.epoch:
        raise HeartbeatRejected(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a greater member epoch ({epoch}) than the one "
            f"known by the group coordinator ({member.epoch}). The member must abandon all "
            "its partitions and rejoin.",
        )
    if epoch < member.epoch and epoch != member.previous_epoch:
        raise HeartbeatRejected(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a smaller member epoch ({epoch}) than the one "
            f"known by the group coordinator ({member.epoch}), and it does not match the "
            f"previous member epoch ({member.previous_epoch}). The member must abandon all "
            "its partitions and rejoin.",
        )


def _update_member(member: ShareMember, request: ShareHeartbeat) -> bool:
    """Take what the heartbeat changed; True when the subscription itself changed."""
    if request.rack_id is not None:
        member.rack_id = request.rack_id
    member.client_id = request.client_id
    member.client_host = request.client_host
    names = request.subscribed_topic_names
    if names is None or frozenset(names) == member.subscribed_topic_names:
        return False
    member.subscribed_topic_names = frozenset(names)
    return True
