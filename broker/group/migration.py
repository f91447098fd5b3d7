"""Online migration between classic and consumer groups (Kafka 4's
`group.consumer.migration.policy`), as conversions of one group's bookkeeping.

A rolling upgrade of a consumer application moves its members one at a time from the
classic protocol (JoinGroup/SyncGroup) to the consumer protocol (ConsumerGroupHeartbeat),
and a rollback moves them back, without stopping the group:

- upgrade: the first consumer-protocol member to join a classic group with members turns
  it into a consumer group. Each classic member becomes a consumer-group member that
  keeps the partitions its last SyncGroup gave it (its target, too), at a member epoch
  equal to the classic generation, which becomes the group epoch; it keeps using the
  classic protocol (`classic_members`). Only a group of the `consumer` protocol type can
  be read this way;
- downgrade: when the last consumer-protocol member leaves (or is fenced) and classic
  members remain, the group becomes a classic group at the group epoch as generation,
  Stable with each member's target as its assignment, and a rebalance starts at once so
  the classic members rejoin and their leader assigns.

The coordinator decides when; this module only converts. Committed offsets are kept per
group id whatever the group's type, so neither conversion touches them.
"""

from __future__ import annotations

from collections.abc import Mapping

from mirrorsim.broker.group.config import GroupConfig
from mirrorsim.broker.group.consumer_group import ClassicProtocol, ConsumerGroup, ConsumerMember
from mirrorsim.broker.group.consumer_messages import TopicInfo
from mirrorsim.broker.group.consumer_states import MemberAssignment
from mirrorsim.broker.group.group import GroupMetadata
from mirrorsim.broker.group.member import MemberMetadata
from mirrorsim.broker.group.state import GroupState
from mirrorsim.broker.group.subscription import (
    CONSUMER_PROTOCOL_TYPE,
    MalformedProtocol,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    subscription_version,
)
from mirrorsim.protocol.errors import ErrorCode


class UpgradeRefused(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def upgrade(
    classic: GroupMetadata, config: GroupConfig, topics: Mapping[str, TopicInfo]
) -> ConsumerGroup:
    """The consumer group `classic` becomes for a joining consumer-protocol member, or
    UpgradeRefused (GROUP_ID_NOT_FOUND as Kafka answers, or GROUP_MAX_SIZE_REACHED when
    the joining member would not fit)."""
    not_consumer = f"Group {classic.group_id} is not a consumer group."
    if not config.consumer_migration_policy.upgrades:
        raise UpgradeRefused(ErrorCode.GROUP_ID_NOT_FOUND, not_consumer)
    if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise UpgradeRefused(ErrorCode.GROUP_ID_NOT_FOUND, not_consumer)
    if len(classic.members) > config.consumer_max_size:
        raise UpgradeRefused(ErrorCode.GROUP_ID_NOT_FOUND, not_consumer)
    if len(classic.members) == config.consumer_max_size:
        raise UpgradeRefused(ErrorCode.GROUP_MAX_SIZE_REACHED, "The group is full.")
    try:
        return _to_consumer_group(classic, topics)
    except MalformedProtocol:
        raise UpgradeRefused(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade the classic group {classic.group_id} to consumer group because "
            "the embedded consumer protocol is malformed.",
        ) from None


def _to_consumer_group(classic: GroupMetadata, topics: Mapping[str, TopicInfo]) -> ConsumerGroup:
    generation = classic.generation_id
    group = ConsumerGroup(classic.group_id, group_epoch=generation, assignment_epoch=generation)
    for old in classic.members.values():
        subscription = decode_subscription(
            old.metadata_for(classic.protocol_name)
            if classic.protocol_name
            else old.protocols[0][1]
        )
        assigned = frozenset(
            tp
            for tp in (decode_assignment(old.assignment) if old.assignment else ())
            if tp.topic in topics and 0 <= tp.partition < topics[tp.topic].partitions
        )
        member = ConsumerMember(
            member_id=old.member_id,
            instance_id=old.group_instance_id,
            client_id=old.client_id,
            client_host=old.client_host,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            rack_id=subscription.rack_id,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            classic=ClassicProtocol(old.session_timeout_ms, old.protocols),
        )
        group.add(member)
        group.set_assignment(
            member,
            MemberAssignment(epoch=generation, previous_epoch=generation, assigned=assigned),
        )
        group.target[member.member_id] = assigned
    return group


def may_downgrade(group: ConsumerGroup, config: GroupConfig) -> bool:
    """Whether the policy lets the classic members left behind form a classic group that
    fits `group.max.size`."""
    remaining = len(group.members) - 1
    return config.consumer_migration_policy.downgrades and remaining <= config.max_size


def downgrade(group: ConsumerGroup, leaving: ConsumerMember) -> GroupMetadata:
    """The classic group the members of `group` other than `leaving` (all classic) form:
    Stable at the group epoch, each member's target encoded as its assignment. The caller
    starts the rebalance."""
    classic = GroupMetadata(
        group.group_id, state=GroupState.STABLE, generation_id=group.group_epoch
    )
    for member in group.members.values():
        if member is leaving or member.classic is None:
            continue
        classic.add(
            MemberMetadata(
                member_id=member.member_id,
                group_instance_id=member.instance_id,
                client_id=member.client_id,
                client_host=member.client_host,
                session_timeout_ms=member.classic.session_timeout_ms,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocols=member.classic.protocols,
                is_new=False,
            )
        )
    classic.choose_protocol()
    assert classic.protocol_name is not None
    for member in classic.members.values():
        member.assignment = encode_assignment(
            group.target.get(member.member_id, frozenset()),
            subscription_version(member.metadata_for(classic.protocol_name)),
        )
    return classic
