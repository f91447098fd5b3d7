"""Share group membership through `GroupCoordinator`: joins, the `simple` assignment as
members come and go, epochs, the session timer, the size cap, and share groups sharing one
group id space with classic and consumer groups."""

from __future__ import annotations

import uuid

import pytest

from mirrorsim.broker.group import (
    CommittedOffset,
    GroupConfig,
    GroupCoordinator,
    InMemoryOffsetStore,
    ManualClock,
    TopicPartition,
)
from mirrorsim.broker.group.consumer_messages import ConsumerHeartbeat, TopicInfo
from mirrorsim.broker.group.messages import JoinRequest
from mirrorsim.broker.group.share_messages import ShareHeartbeat, ShareHeartbeatResult
from mirrorsim.protocol.errors import ErrorCode

TOPICS = {"orders": TopicInfo(uuid.uuid4(), 2), "audit": TopicInfo(uuid.uuid4(), 1)}
ORDERS = frozenset({TopicPartition("orders", 0), TopicPartition("orders", 1)})


def _coordinator(clock: ManualClock | None = None, **config: int) -> GroupCoordinator:
    return GroupCoordinator(
        offset_store=InMemoryOffsetStore(),
        clock=clock or ManualClock(),
        config=GroupConfig(**config),
    )


def _beat(
    coordinator: GroupCoordinator,
    member_id: str,
    epoch: int,
    *,
    names: tuple[str, ...] | None = None,
    topics: dict[str, TopicInfo] = TOPICS,
    group: str = "g",
) -> ShareHeartbeatResult:
    return coordinator.share_group_heartbeat(
        ShareHeartbeat(
            group_id=group, member_id=member_id, member_epoch=epoch, subscribed_topic_names=names
        ),
        topics,
    )


def _join(
    coordinator: GroupCoordinator, member_id: str, names: tuple[str, ...] = ("orders",)
) -> ShareHeartbeatResult:
    return _beat(coordinator, member_id, 0, names=names)


def _assignment(coordinator: GroupCoordinator, member_id: str) -> frozenset[TopicPartition]:
    assigned = coordinator.share.assignment("g", member_id)
    assert assigned is not None
    return assigned


def test_the_first_member_gets_every_partition_with_the_heartbeat_interval() -> None:
    coordinator = _coordinator()
    joined = _join(coordinator, "a")
    assert joined.error is ErrorCode.NONE
    assert (joined.member_id, joined.member_epoch) == ("a", 1)
    assert joined.assignment == ORDERS
    assert joined.heartbeat_interval_ms == 5000
    again = _beat(coordinator, "a", 1)
    assert (again.member_epoch, again.assignment) == (1, None)  # nothing changed
    description = coordinator.describe_share_group("g")
    assert description is not None
    assert (description.state, description.group_epoch, description.assignor_name) == (
        "Stable",
        1,
        "simple",
    )
    (member,) = description.members
    assert (member.member_id, member.subscribed_topic_names, member.assignment) == (
        "a",
        ("orders",),
        ORDERS,
    )


def test_a_second_member_splits_the_partitions_without_revocation() -> None:
    coordinator = _coordinator()
    _join(coordinator, "a")
    b = _join(coordinator, "b")
    assert b.member_epoch == 2 and b.assignment is not None and len(b.assignment) == 1
    a = _beat(coordinator, "a", 1)
    assert a.member_epoch == 2  # straight to the new epoch, no revocation step
    assert a.assignment == ORDERS - b.assignment


def test_three_members_on_two_partitions_share_them() -> None:
    coordinator = _coordinator()
    for member in "abc":
        _join(coordinator, member)
    for member in "ab":
        _beat(coordinator, member, coordinator.share.groups["g"].members[member].epoch)
    assignments = [_assignment(coordinator, m) for m in "abc"]
    assert all(assignments)
    assert sorted(len(a) for a in assignments) == [1, 1, 2]
    for tp in ORDERS:
        assert sum(tp in a for a in assignments) == 2  # ceil(3 members / 2 partitions)


def test_a_leaving_member_hands_its_partitions_on_and_the_last_leaves_the_group_empty() -> None:
    coordinator = _coordinator()
    _join(coordinator, "a")
    _join(coordinator, "b")
    half = _beat(coordinator, "a", 1).assignment
    assert half is not None and len(half) == 1
    left = coordinator.share_group_heartbeat(
        ShareHeartbeat(group_id="g", member_id="b", member_epoch=-1), TOPICS
    )
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -1)
    a = _beat(coordinator, "a", 2)
    assert (a.member_epoch, a.assignment) == (3, ORDERS)
    coordinator.share_group_heartbeat(
        ShareHeartbeat(group_id="g", member_id="a", member_epoch=-1), TOPICS
    )
    description = coordinator.describe_share_group("g")
    assert description is not None and description.state == "Empty"
    assert description.members == () and description.group_epoch == 4


def test_a_silent_member_expires_and_the_group_epoch_moves() -> None:
    clock = ManualClock()
    coordinator = _coordinator(clock)
    _join(coordinator, "a")
    b = _join(coordinator, "b")
    clock.advance(44_000)
    b = _beat(coordinator, "b", b.member_epoch)
    clock.advance(2_000)  # a's 45 s session is over, b's is not
    group = coordinator.share.groups["g"]
    assert set(group.members) == {"b"} and group.group_epoch == 3
    assert _beat(coordinator, "b", b.member_epoch).assignment == ORDERS
    assert _beat(coordinator, "a", 2).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert coordinator.share.assignment("g", "a") is None


def test_epochs_are_checked_and_the_previous_one_is_tolerated() -> None:
    coordinator = _coordinator()
    _join(coordinator, "a")
    _join(coordinator, "b")
    assert _beat(coordinator, "b", 2).member_epoch == 2
    ahead = _beat(coordinator, "b", 3)
    assert ahead.error is ErrorCode.FENCED_MEMBER_EPOCH
    assert ahead.message is not None and "greater member epoch (3)" in ahead.message
    moved = _beat(coordinator, "a", 1)  # a's epoch becomes 2, its previous 1
    assert moved.member_epoch == 2
    assert _beat(coordinator, "a", 1).error is ErrorCode.NONE  # the answer may have been lost
    _join(coordinator, "c")
    _beat(coordinator, "a", 2)  # now at 3, previous 2
    assert _beat(coordinator, "a", 1).error is ErrorCode.FENCED_MEMBER_EPOCH


def test_unknown_members_and_invalid_requests() -> None:
    coordinator = _coordinator()
    assert _beat(coordinator, "a", 4).error is ErrorCode.UNKNOWN_MEMBER_ID  # no such group
    _join(coordinator, "a")
    unknown = _beat(coordinator, "x", 1)
    assert unknown.error is ErrorCode.UNKNOWN_MEMBER_ID
    assert unknown.message == "Member x is not a member of group g."
    assert _beat(coordinator, "x", -1).error is ErrorCode.UNKNOWN_MEMBER_ID
    for request, message in [
        (ShareHeartbeat("g", "", 0, subscribed_topic_names=("orders",)), "MemberId can't be"),
        (ShareHeartbeat("", "a", 0, subscribed_topic_names=("orders",)), "GroupId can't be"),
        (ShareHeartbeat("g", "b", 0), "SubscribedTopicNames must be set"),
        (ShareHeartbeat("g", "b", 0, subscribed_topic_names=()), "SubscribedTopicNames must"),
        (ShareHeartbeat("g", "a", -2), "MemberEpoch is invalid"),
        (ShareHeartbeat("g", "a", 1, rack_id=" "), "RackId can't be"),
    ]:
        result = coordinator.share_group_heartbeat(request, TOPICS)
        assert result.error is ErrorCode.INVALID_REQUEST
        assert result.message is not None and result.message.startswith(message)


def test_a_subscription_change_bumps_the_epoch_and_a_full_heartbeat_gets_the_assignment() -> None:
    coordinator = _coordinator()
    _join(coordinator, "a")
    both = _beat(coordinator, "a", 1, names=("orders", "audit"))
    assert both.member_epoch == 2
    assert both.assignment == ORDERS | {TopicPartition("audit", 0)}
    same = _beat(coordinator, "a", 2, names=("audit", "orders"))
    assert same.member_epoch == 2 and same.assignment == both.assignment  # full, not a change
    grown = {**TOPICS, "orders": TopicInfo(TOPICS["orders"].topic_id, 3)}
    after = _beat(coordinator, "a", 2, topics=grown)
    assert after.member_epoch == 3
    assert after.assignment is not None and TopicPartition("orders", 2) in after.assignment


def test_the_group_size_is_capped() -> None:
    coordinator = _coordinator(share_max_size=2)
    _join(coordinator, "a")
    _join(coordinator, "b")
    full = _join(coordinator, "c")
    assert full.error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert full.message == "The share group has reached its maximum capacity of 2 members."
    assert _beat(coordinator, "a", 1).error is ErrorCode.NONE  # members still heartbeat


async def test_share_consumer_and_classic_groups_share_one_id_space() -> None:
    coordinator = _coordinator()
    consumer = coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat(
            group_id="c",
            member_id="m",
            member_epoch=0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("orders",),
            owned=frozenset(),
        ),
        TOPICS,
    )
    assert consumer.error is ErrorCode.NONE
    clash = _beat(coordinator, "a", 0, names=("orders",), group="c")
    assert clash.error is ErrorCode.GROUP_ID_NOT_FOUND
    assert clash.message == "Group c is not a share group."

    _join(coordinator, "a")
    back = coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat(
            group_id="g",
            member_id="m",
            member_epoch=0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("orders",),
            owned=frozenset(),
        ),
        TOPICS,
    )
    assert back.error is ErrorCode.GROUP_ID_NOT_FOUND
    classic = await coordinator.join_group(
        JoinRequest(
            group_id="g",
            member_id="",
            group_instance_id=None,
            client_id="c",
            client_host="/127.0.0.1",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            protocol_type="consumer",
            protocols=(("range", b""),),
            require_known_member_id=True,
        )
    )
    assert classic.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert coordinator.describe_group("g") is None and coordinator.group_type("g") == "share"
    offset = {TopicPartition("orders", 0): CommittedOffset(committed_offset=1)}
    committed = await coordinator.commit_offsets("g", -1, "", None, offset)
    assert set(committed.values()) == {ErrorCode.GROUP_ID_NOT_FOUND}
    assert coordinator.validate_offset_fetch("g", "", -1) is ErrorCode.GROUP_ID_NOT_FOUND


async def test_only_a_classic_group_without_members_or_offsets_becomes_a_share_group() -> None:
    coordinator = _coordinator()
    offset = {TopicPartition("orders", 0): CommittedOffset(committed_offset=1)}
    await coordinator.commit_offsets("kept", -1, "", None, offset)
    assert _beat(coordinator, "a", 0, names=("orders",), group="kept").error is (
        ErrorCode.GROUP_ID_NOT_FOUND
    )
    await coordinator.delete_offsets("kept", list(offset))
    assert coordinator.group_type("kept") == "classic"
    assert _beat(coordinator, "a", 0, names=("orders",), group="kept").error is ErrorCode.NONE
    assert coordinator.group_type("kept") == "share"


async def test_list_describe_and_delete_share_groups() -> None:
    coordinator = _coordinator()
    _join(coordinator, "a")
    overview = coordinator.list_groups()
    assert [(o.group_id, o.protocol_type, o.state, o.group_type) for o in overview] == [
        ("g", "share", "Stable", "share")
    ]
    assert coordinator.list_groups(types=["Share"]) == overview
    assert coordinator.list_groups(types=["consumer"]) == []
    assert coordinator.list_groups(states=["empty"]) == []
    assert await coordinator.delete_groups(["g"]) == {"g": ErrorCode.NON_EMPTY_GROUP}
    coordinator.share_group_heartbeat(
        ShareHeartbeat(group_id="g", member_id="a", member_epoch=-1), TOPICS
    )
    assert coordinator.list_groups(states=["Empty"])[0].group_id == "g"
    assert await coordinator.delete_groups(["g"]) == {"g": ErrorCode.NONE}
    assert coordinator.group_type("g") is None


async def test_groups_moved_away_or_stopped_are_unloaded_with_their_timers() -> None:
    clock = ManualClock()
    coordinator = _coordinator(clock)
    _join(coordinator, "a")
    _beat(coordinator, "b", 0, names=("orders",), group="h")
    assert clock.pending_timers == 2
    await coordinator.update_ownership(lambda group_id: group_id != "g")
    assert set(coordinator.share.groups) == {"h"} and clock.pending_timers == 1
    await coordinator.stop()
    assert coordinator.share.groups == {} and clock.pending_timers == 0


@pytest.mark.parametrize("members", [1, 2, 3, 5, 8])
def test_every_partition_is_served_and_loads_differ_by_at_most_one(members: int) -> None:
    coordinator = _coordinator()
    topics = {"orders": TopicInfo(uuid.uuid4(), 5)}
    for index in range(members):
        _beat(coordinator, f"m{index}", 0, names=("orders",), topics=topics)
    group = coordinator.share.groups["g"]
    loads = [len(group.target[m]) for m in group.members]
    assert max(loads) - min(loads) <= 1
    sharing = -(-members // 5)
    for p in range(5):
        holders = [m for m in group.members if TopicPartition("orders", p) in group.target[m]]
        assert len(holders) == sharing
