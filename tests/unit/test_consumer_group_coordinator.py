"""The consumer protocol through `GroupCoordinator`: member-epoch offset checks, static
members, regex subscriptions re-evaluated as topics appear, session expiry, and classic
and consumer groups sharing one id space."""

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
from mirrorsim.broker.group.consumer_messages import (
    ConsumerHeartbeat,
    ConsumerHeartbeatResult,
    TopicInfo,
)
from mirrorsim.broker.group.messages import JoinRequest
from mirrorsim.protocol.errors import ErrorCode

TOPICS = {"orders": TopicInfo(uuid.uuid4(), 4)}


def _coordinator(clock: ManualClock | None = None) -> GroupCoordinator:
    return GroupCoordinator(offset_store=InMemoryOffsetStore(), clock=clock or ManualClock())


def _join(
    coordinator: GroupCoordinator,
    member_id: str,
    *,
    topics: dict[str, TopicInfo] = TOPICS,
    names: tuple[str, ...] | None = ("orders",),
    regex: str | None = None,
    instance_id: str | None = None,
    group: str = "g",
) -> ConsumerHeartbeatResult:
    return coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat(
            group_id=group,
            member_id=member_id,
            member_epoch=0,
            instance_id=instance_id,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=names,
            subscribed_topic_regex=regex,
            owned=frozenset(),
        ),
        topics,
    )


def _beat(
    coordinator: GroupCoordinator,
    member_id: str,
    epoch: int,
    *,
    topics: dict[str, TopicInfo] = TOPICS,
    instance_id: str | None = None,
) -> ConsumerHeartbeatResult:
    return coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat(
            group_id="g", member_id=member_id, member_epoch=epoch, instance_id=instance_id
        ),
        topics,
    )


def _offset(value: int) -> dict[TopicPartition, CommittedOffset]:
    return {TopicPartition("orders", 0): CommittedOffset(committed_offset=value)}


async def test_commits_need_the_members_current_epoch() -> None:
    clock = ManualClock()
    coordinator = _coordinator(clock)
    joined = _join(coordinator, "a")
    assert joined.error is ErrorCode.NONE and joined.member_epoch == 1
    assert joined.assignment == {TopicPartition("orders", p) for p in range(4)}
    assert await coordinator.commit_offsets("g", 1, "a", None, _offset(5)) == {
        TopicPartition("orders", 0): ErrorCode.NONE
    }
    stale = await coordinator.commit_offsets("g", 0, "a", None, _offset(6))
    assert set(stale.values()) == {ErrorCode.STALE_MEMBER_EPOCH}
    unknown = await coordinator.commit_offsets("g", 1, "nobody", None, _offset(6))
    assert set(unknown.values()) == {ErrorCode.UNKNOWN_MEMBER_ID}
    admin = await coordinator.commit_offsets("g", -1, "", None, _offset(6))
    assert set(admin.values()) == {ErrorCode.UNKNOWN_MEMBER_ID}
    assert coordinator.validate_offset_fetch("g", "a", 0) is ErrorCode.STALE_MEMBER_EPOCH
    assert coordinator.validate_offset_fetch("g", "", -1) is ErrorCode.NONE
    assert coordinator.fetch_offsets("g", None)[TopicPartition("orders", 0)] == CommittedOffset(
        committed_offset=5, commit_timestamp=clock.now_ms()
    )


async def test_classic_and_consumer_groups_share_one_id_space() -> None:
    coordinator = _coordinator()
    _join(coordinator, "a")
    classic_join = await coordinator.join_group(
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
    # b"" is no subscription; a classic member with one joins (test_group_migration.py)
    assert classic_join.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert coordinator.describe_group("g") is None
    overview = coordinator.list_groups()
    assert [(o.group_id, o.group_type, o.state) for o in overview] == [("g", "consumer", "Stable")]
    assert coordinator.list_groups(types=["classic"]) == []
    assert await coordinator.delete_groups(["g"]) == {"g": ErrorCode.NON_EMPTY_GROUP}


async def test_an_empty_classic_group_becomes_a_consumer_group_keeping_its_offsets() -> None:
    coordinator = _coordinator()
    await coordinator.commit_offsets("g", -1, "", None, _offset(7))
    assert coordinator.group_type("g") == "classic"
    assert _beat(coordinator, "a", 3).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert _join(coordinator, "a").error is ErrorCode.NONE
    assert coordinator.group_type("g") == "consumer"
    assert coordinator.fetch_offsets("g", None)[TopicPartition("orders", 0)].committed_offset == 7


async def test_a_static_member_that_leaves_for_now_keeps_its_partitions_for_its_successor() -> None:
    coordinator = _coordinator()
    first = _join(coordinator, "a", instance_id="pod-1")
    other = _join(coordinator, "b")
    assert _beat(coordinator, "a", first.member_epoch, instance_id="pod-1").error is ErrorCode.NONE
    left = coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat(group_id="g", member_id="a", member_epoch=-2, instance_id="pod-1"),
        TOPICS,
    )
    assert left.member_epoch == -2
    group = coordinator.consumer.groups["g"]
    kept = group.members["a"].assignment.held
    assert kept and group.group_epoch == other.member_epoch
    assert _join(coordinator, "c", instance_id="pod-2").error is ErrorCode.NONE
    assert group.members["a"].assignment.held == kept  # nobody took them meanwhile
    epoch = group.group_epoch
    back = _join(coordinator, "a2", instance_id="pod-1")
    assert back.error is ErrorCode.NONE
    assert set(group.members) == {"a2", "b", "c"} and group.group_epoch == epoch
    assert back.assignment is not None and back.assignment <= kept
    in_use = _join(coordinator, "a3", instance_id="pod-1")
    assert in_use.error is ErrorCode.UNRELEASED_INSTANCE_ID


async def test_a_regex_subscription_takes_up_a_topic_created_later() -> None:
    coordinator = _coordinator()
    joined = _join(coordinator, "a", names=None, regex="orders.*")
    assert joined.assignment == {TopicPartition("orders", p) for p in range(4)}
    grown = {
        **TOPICS,
        "orders-eu": TopicInfo(uuid.uuid4(), 2),
        "payments": TopicInfo(uuid.uuid4(), 1),
    }
    after = _beat(coordinator, "a", joined.member_epoch, topics=grown)
    assert after.member_epoch > joined.member_epoch
    assert after.assignment == {TopicPartition("orders", p) for p in range(4)} | {
        TopicPartition("orders-eu", p) for p in range(2)
    }
    bad = _join(coordinator, "b", names=None, regex="orders[")
    assert bad.error is ErrorCode.INVALID_REGULAR_EXPRESSION


async def test_a_silent_member_expires_and_its_partitions_move() -> None:
    clock = ManualClock()
    coordinator = _coordinator(clock)
    a = _join(coordinator, "a")
    b = _join(coordinator, "b")
    assert b.assignment == frozenset()  # everything is still a's until a revokes
    clock.advance(44_000)
    b2 = _beat(coordinator, "b", b.member_epoch)
    assert b2.assignment is None  # unchanged
    clock.advance(2_000)  # a never heartbeat again: its session is over
    assert "a" not in coordinator.consumer.groups["g"].members
    b3 = _beat(coordinator, "b", b2.member_epoch)
    assert b3.assignment == a.assignment
    assert _beat(coordinator, "a", a.member_epoch).error is ErrorCode.UNKNOWN_MEMBER_ID


async def test_an_unknown_server_assignor_is_refused() -> None:
    coordinator = _coordinator()
    result = coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat(
            group_id="g",
            member_id="a",
            member_epoch=0,
            rebalance_timeout_ms=1,
            subscribed_topic_names=("orders",),
            server_assignor="sticky",
        ),
        TOPICS,
    )
    assert result.error is ErrorCode.UNSUPPORTED_ASSIGNOR


async def test_a_group_taken_over_from_the_store_hands_out_nothing_for_a_session_timeout() -> None:
    store = InMemoryOffsetStore()
    await store.commit("g", _offset(3))
    clock = ManualClock()
    coordinator = GroupCoordinator(offset_store=store, clock=clock)
    await coordinator.start()
    joined = _join(coordinator, "a")
    assert joined.error is ErrorCode.NONE and joined.assignment == frozenset()
    clock.advance(44_000)
    assert _beat(coordinator, "a", joined.member_epoch).assignment is None
    clock.advance(1_000)
    later = _beat(coordinator, "a", joined.member_epoch)
    assert later.assignment == {TopicPartition("orders", p) for p in range(4)}


async def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_removed() -> None:
    clock = ManualClock()
    coordinator = _coordinator(clock)
    a = _join(coordinator, "a")
    b = _join(coordinator, "b")
    everything = a.assignment
    assert everything is not None
    asked = coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat(
            group_id="g", member_id="a", member_epoch=a.member_epoch, owned=everything
        ),
        TOPICS,
    )
    assert asked.assignment is not None and asked.assignment < everything  # revoke the rest
    clock.advance(20_000)
    still = coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat(
            group_id="g", member_id="a", member_epoch=a.member_epoch, owned=everything
        ),
        TOPICS,
    )
    assert still.error is ErrorCode.NONE and still.member_epoch == a.member_epoch
    clock.advance(10_001)  # the 30 s rebalance timeout from the revocation request is over
    assert "a" not in coordinator.consumer.groups["g"].members
    assert _beat(coordinator, "b", b.member_epoch).assignment == everything


async def test_members_naming_the_range_assignor_get_contiguous_ranges() -> None:
    coordinator = _coordinator()
    for member_id in ("a", "b"):
        result = coordinator.consumer_group_heartbeat(
            ConsumerHeartbeat(
                group_id="g",
                member_id=member_id,
                member_epoch=0,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=("orders",),
                server_assignor="range",
                owned=frozenset(),
            ),
            TOPICS,
        )
        assert result.error is ErrorCode.NONE
    group = coordinator.consumer.groups["g"]
    assert group.assignor_name == "range"
    assert group.target == {
        "a": {TopicPartition("orders", 0), TopicPartition("orders", 1)},
        "b": {TopicPartition("orders", 2), TopicPartition("orders", 3)},
    }


async def test_a_member_commit_below_offset_commit_v9_is_unsupported() -> None:
    coordinator = _coordinator()
    joined = _join(coordinator, "a")
    old = await coordinator.commit_offsets("g", joined.member_epoch, "a", None, _offset(1), 8)
    assert set(old.values()) == {ErrorCode.UNSUPPORTED_VERSION}
    new = await coordinator.commit_offsets("g", joined.member_epoch, "a", None, _offset(1), 9)
    assert set(new.values()) == {ErrorCode.NONE}


async def test_an_empty_consumer_group_can_be_deleted_and_its_unsubscribed_offsets_dropped() -> (
    None
):
    coordinator = _coordinator()
    joined = _join(coordinator, "a")
    await coordinator.commit_offsets("g", joined.member_epoch, "a", None, _offset(4))
    other = {TopicPartition("gone", 0): CommittedOffset(committed_offset=1)}
    await coordinator.commit_offsets("g", joined.member_epoch, "a", None, other)
    error, results = await coordinator.delete_offsets(
        "g", [TopicPartition("orders", 0), TopicPartition("gone", 0)]
    )
    assert error is ErrorCode.NONE
    assert results == {
        TopicPartition("orders", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
        TopicPartition("gone", 0): ErrorCode.NONE,
    }
    assert set(coordinator.fetch_offsets("g", None)) == {TopicPartition("orders", 0)}
    left = coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat(group_id="g", member_id="a", member_epoch=-1), TOPICS
    )
    assert left.error is ErrorCode.NONE and left.member_epoch == -1
    assert coordinator.list_groups(types=["consumer"])[0].state == "Empty"
    assert await coordinator.delete_groups(["g"]) == {"g": ErrorCode.NONE}
    assert coordinator.group_type("g") is None and coordinator.fetch_offsets("g", None) == {}


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (ConsumerHeartbeat(group_id="", member_id="a", member_epoch=0), ErrorCode.INVALID_REQUEST),
        (ConsumerHeartbeat(group_id="g", member_id="", member_epoch=0), ErrorCode.INVALID_REQUEST),
        (
            ConsumerHeartbeat(
                group_id="g", member_id="a", member_epoch=0, subscribed_topic_names=("orders",)
            ),
            ErrorCode.INVALID_REQUEST,  # no rebalance timeout on the first heartbeat
        ),
        (
            ConsumerHeartbeat(group_id="g", member_id="a", member_epoch=0, rebalance_timeout_ms=1),
            ErrorCode.INVALID_REQUEST,  # neither topic names nor a regex
        ),
        (
            ConsumerHeartbeat(group_id="g", member_id="a", member_epoch=-2),
            ErrorCode.INVALID_REQUEST,  # leaving for now needs an instance id
        ),
        (
            ConsumerHeartbeat(group_id="g", member_id="a", member_epoch=-3),
            ErrorCode.INVALID_REQUEST,
        ),
        (
            ConsumerHeartbeat(group_id="g", member_id="a", member_epoch=5),
            ErrorCode.UNKNOWN_MEMBER_ID,
        ),
    ],
)
def test_malformed_or_unknown_heartbeats_are_refused(
    request_: ConsumerHeartbeat, error: ErrorCode
) -> None:
    assert _coordinator().consumer_group_heartbeat(request_, TOPICS).error is error


async def test_a_newer_epoch_is_fenced_and_the_group_size_is_capped() -> None:
    coordinator = GroupCoordinator(
        offset_store=InMemoryOffsetStore(),
        clock=ManualClock(),
        config=GroupConfig(consumer_max_size=1),
    )
    joined = _join(coordinator, "a")
    assert _beat(coordinator, "a", joined.member_epoch + 1).error is ErrorCode.FENCED_MEMBER_EPOCH
    assert _join(coordinator, "b").error is ErrorCode.GROUP_MAX_SIZE_REACHED
    rejoined = _join(coordinator, "a")  # a fenced member rejoins under its id with epoch 0
    assert rejoined.error is ErrorCode.NONE and rejoined.assignment == joined.assignment


def test_a_heartbeat_resent_after_a_lost_response_gets_the_assignment_again() -> None:
    """The answer telling a member to give up partitions is lost (its client timed out) and
    the client resends the heartbeat without its subscription: no full request, and the
    member's assignment did not change since the lost answer. It still owns what it was
    told to revoke, so the answer carries the assignment again; without it the member
    keeps every partition and the member that joined waits for ever."""
    coordinator = _coordinator()
    first = _join(coordinator, "a")
    everything = first.assignment
    assert everything is not None and len(everything) == 4
    second = _join(coordinator, "b")
    assert second.assignment == frozenset()
    owning_all = ConsumerHeartbeat(
        group_id="g", member_id="a", member_epoch=first.member_epoch, owned=everything
    )
    lost = coordinator.consumer_group_heartbeat(owning_all, TOPICS)
    assert lost.assignment is not None and lost.assignment < everything
    resent = coordinator.consumer_group_heartbeat(owning_all, TOPICS)
    assert resent.assignment == lost.assignment
    # once the member owns what it was told, steady heartbeats carry no assignment
    settled = ConsumerHeartbeat(
        group_id="g", member_id="a", member_epoch=resent.member_epoch, owned=resent.assignment
    )
    assert coordinator.consumer_group_heartbeat(settled, TOPICS).assignment is None
