"""Targeted behaviour of the classic group coordinator, one Kafka error code at a time."""

from __future__ import annotations

import struct

import pytest

from mirrorsim.broker.group import (
    CommittedOffset,
    GroupConfig,
    GroupCoordinator,
    GroupState,
    InMemoryOffsetStore,
    ManualClock,
    TopicPartition,
)
from mirrorsim.broker.group.messages import (
    JoinRequest,
    JoinResult,
    LeavingMember,
    SyncRequest,
    SyncResult,
)
from mirrorsim.protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(10)

SESSION_MS = 10_000
REBALANCE_MS = 30_000


def subscription(*topics: str) -> bytes:
    """A version-0 ConsumerProtocolSubscription (topics, empty user data)."""
    body = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        body += struct.pack(">h", len(topic)) + topic.encode()
    return body + struct.pack(">i", -1)


def join(
    member_id: str = "",
    *,
    group: str = "g",
    instance: str | None = None,
    protocols: tuple[tuple[str, bytes], ...] = (("range", subscription("t1")),),
    protocol_type: str = "consumer",
    session_ms: int = SESSION_MS,
    require_known: bool = False,
) -> JoinRequest:
    return JoinRequest(
        group_id=group,
        member_id=member_id,
        group_instance_id=instance,
        client_id="client",
        client_host="/127.0.0.1",
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=REBALANCE_MS,
        protocol_type=protocol_type,
        protocols=protocols,
        require_known_member_id=require_known,
    )


def sync(
    result: JoinResult,
    assignments: dict[str, bytes] | None = None,
    *,
    group: str = "g",
    instance: str | None = None,
    protocol_name: str | None = None,
) -> SyncRequest:
    return SyncRequest(
        group_id=group,
        generation_id=result.generation_id,
        member_id=result.member_id,
        group_instance_id=instance,
        protocol_type=None,
        protocol_name=protocol_name,
        assignments=tuple((assignments or {}).items()),
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store() -> InMemoryOffsetStore:
    return InMemoryOffsetStore()


@pytest.fixture
async def coordinator(clock: ManualClock, store: InMemoryOffsetStore) -> GroupCoordinator:
    coordinator = GroupCoordinator(
        offset_store=store, clock=clock, config=GroupConfig(initial_rebalance_delay_ms=0)
    )
    await coordinator.start()
    yield coordinator
    await coordinator.stop()


async def stable_member(
    coordinator: GroupCoordinator, request: JoinRequest | None = None
) -> JoinResult:
    joined = await coordinator.join_group(request or join())
    assert joined.error is ErrorCode.NONE
    synced = await coordinator.sync_group(sync(joined, {joined.member_id: b"all"}))
    assert synced.error is ErrorCode.NONE
    return joined


async def two_stable_members(coordinator: GroupCoordinator) -> tuple[JoinResult, JoinResult]:
    first = await stable_member(coordinator)
    second_join = coordinator.join_group(join())
    assert coordinator.heartbeat("g", first.member_id, None, 1) is ErrorCode.REBALANCE_IN_PROGRESS
    first = await coordinator.join_group(join(first.member_id))
    second = await second_join
    follower_sync = coordinator.sync_group(sync(second))
    assert not follower_sync.done()
    leader_sync = await coordinator.sync_group(
        sync(first, {first.member_id: b"a", second.member_id: b"b"})
    )
    assert leader_sync.assignment == b"a"
    assert (await follower_sync).assignment == b"b"
    return first, second


def state(coordinator: GroupCoordinator, group_id: str = "g") -> GroupState | None:
    group = coordinator.group(group_id)
    return None if group is None else group.state


async def test_single_member_becomes_leader_and_gets_its_assignment(
    coordinator: GroupCoordinator,
) -> None:
    joined = await coordinator.join_group(join())
    assert joined.error is ErrorCode.NONE
    assert joined.generation_id == 1
    assert joined.leader_id == joined.member_id
    assert joined.protocol_name == "range"
    assert [m.member_id for m in joined.members] == [joined.member_id]
    assert state(coordinator) is GroupState.COMPLETING_REBALANCE
    synced = await coordinator.sync_group(sync(joined, {joined.member_id: b"p0"}))
    assert synced == SyncResult(ErrorCode.NONE, b"p0", "consumer", "range")
    assert state(coordinator) is GroupState.STABLE


async def test_member_id_required_then_rejoin(coordinator: GroupCoordinator) -> None:
    first = await coordinator.join_group(join(require_known=True))
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("client-")
    assert state(coordinator) is GroupState.EMPTY
    second = await coordinator.join_group(join(first.member_id, require_known=True))
    assert second.error is ErrorCode.NONE
    assert second.member_id == first.member_id


async def test_pending_member_that_never_rejoins_does_not_block_the_join(
    coordinator: GroupCoordinator, clock: ManualClock
) -> None:
    leader = await stable_member(coordinator)
    pending = await coordinator.join_group(join(require_known=True))
    assert pending.error is ErrorCode.MEMBER_ID_REQUIRED
    rejoin = coordinator.join_group(join(leader.member_id, protocols=(("range", b"new"),)))
    assert not rejoin.done()
    clock.advance(SESSION_MS)
    result = await rejoin
    assert result.error is ErrorCode.NONE
    assert result.generation_id == 2


async def test_rebalance_with_two_members(coordinator: GroupCoordinator) -> None:
    first, second = await two_stable_members(coordinator)
    assert first.generation_id == second.generation_id == 2
    assert first.leader_id == second.leader_id == first.member_id
    assert {m.member_id for m in first.members} == {first.member_id, second.member_id}
    assert second.members == ()
    assert coordinator.heartbeat("g", second.member_id, None, 2) is ErrorCode.NONE


async def test_protocol_selection_by_vote(clock: ManualClock, store: InMemoryOffsetStore) -> None:
    coordinator = GroupCoordinator(offset_store=store, clock=clock)
    votes = [
        (("range", b""), ("roundrobin", b"")),
        (("roundrobin", b""), ("range", b"")),
        (("roundrobin", b""), ("sticky", b""), ("range", b"")),
    ]
    futures = [coordinator.join_group(join(protocols=p)) for p in votes]
    clock.advance(REBALANCE_MS)
    results = [await f for f in futures]
    assert {r.protocol_name for r in results} == {"roundrobin"}
    await coordinator.stop()


async def test_inconsistent_group_protocol(coordinator: GroupCoordinator) -> None:
    await stable_member(coordinator)
    other_protocol = await coordinator.join_group(join(protocols=(("sticky", b""),)))
    assert other_protocol.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    other_type = await coordinator.join_group(join(protocol_type="connect"))
    assert other_type.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    empty = await coordinator.join_group(join(group="h", protocols=()))
    assert empty.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


async def test_join_validation_errors(clock: ManualClock, store: InMemoryOffsetStore) -> None:
    coordinator = GroupCoordinator(
        offset_store=store,
        clock=clock,
        config=GroupConfig(initial_rebalance_delay_ms=0, max_size=1),
    )
    assert (await coordinator.join_group(join(group=""))).error is ErrorCode.INVALID_GROUP_ID
    too_short = await coordinator.join_group(join(session_ms=100))
    assert too_short.error is ErrorCode.INVALID_SESSION_TIMEOUT
    unknown = await coordinator.join_group(join("nobody"))
    assert unknown.error is ErrorCode.UNKNOWN_MEMBER_ID
    await stable_member(coordinator)
    full = await coordinator.join_group(join())
    assert full.error is ErrorCode.GROUP_MAX_SIZE_REACHED
    await coordinator.stop()


async def test_heartbeat_errors(coordinator: GroupCoordinator) -> None:
    assert coordinator.heartbeat("missing", "m", None, 1) is ErrorCode.UNKNOWN_MEMBER_ID
    member = await stable_member(coordinator)
    assert coordinator.heartbeat("g", "stranger", None, 1) is ErrorCode.UNKNOWN_MEMBER_ID
    assert coordinator.heartbeat("g", member.member_id, None, 7) is ErrorCode.ILLEGAL_GENERATION
    assert coordinator.heartbeat("g", member.member_id, None, 1) is ErrorCode.NONE


async def test_session_timeout_expires_a_silent_member(
    coordinator: GroupCoordinator, clock: ManualClock
) -> None:
    first, second = await two_stable_members(coordinator)
    clock.advance(SESSION_MS // 2)
    assert coordinator.heartbeat("g", first.member_id, None, 2) is ErrorCode.NONE
    clock.advance(SESSION_MS // 2)
    assert second.member_id not in coordinator.group("g").members  # type: ignore[union-attr]
    assert coordinator.heartbeat("g", first.member_id, None, 2) is ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = await coordinator.join_group(join(first.member_id))
    assert rejoined.generation_id == 3
    assert [m.member_id for m in rejoined.members] == [first.member_id]


async def test_rebalance_timeout_drops_members_that_do_not_rejoin(
    coordinator: GroupCoordinator, clock: ManualClock
) -> None:
    first, second = await two_stable_members(coordinator)
    newcomer = coordinator.join_group(join(session_ms=REBALANCE_MS * 2))
    first_rejoin = coordinator.join_group(join(first.member_id))
    for _ in range(REBALANCE_MS // 5000):
        clock.advance(5000)
        coordinator.heartbeat("g", second.member_id, None, 2)
    result = await first_rejoin
    assert result.generation_id == 3
    assert {m.member_id for m in result.members} == {first.member_id, (await newcomer).member_id}
    assert coordinator.heartbeat("g", second.member_id, None, 3) is ErrorCode.UNKNOWN_MEMBER_ID


async def test_follower_that_never_syncs_is_removed(
    coordinator: GroupCoordinator, clock: ManualClock
) -> None:
    first = await stable_member(coordinator)
    second_join = coordinator.join_group(join())
    first = await coordinator.join_group(join(first.member_id))
    second = await second_join
    await coordinator.sync_group(sync(first, {first.member_id: b"a"}))
    for _ in range(REBALANCE_MS // 5000):
        clock.advance(5000)
        coordinator.heartbeat("g", first.member_id, None, 2)
    assert second.member_id not in coordinator.group("g").members  # type: ignore[union-attr]
    assert state(coordinator) is GroupState.PREPARING_REBALANCE


async def test_initial_rebalance_delay_waits_for_more_members(
    clock: ManualClock, store: InMemoryOffsetStore
) -> None:
    coordinator = GroupCoordinator(
        offset_store=store, clock=clock, config=GroupConfig(initial_rebalance_delay_ms=3000)
    )
    first = coordinator.join_group(join())
    clock.advance(1000)
    second = coordinator.join_group(join())
    clock.advance(1999)
    assert not first.done()
    clock.advance(1)
    assert not first.done(), "a member arrived during the delay, so it is extended"
    clock.advance(3000)
    results = [await first, await second]
    assert {r.generation_id for r in results} == {1}
    assert len(results[0].members) == 2
    await coordinator.stop()


async def test_static_member_rejoin_keeps_the_generation_and_fences_the_old_id(
    coordinator: GroupCoordinator,
) -> None:
    first = await stable_member(coordinator, join(instance="i1"))
    assert first.member_id.startswith("i1-")
    again = await coordinator.join_group(join(instance="i1"))
    assert again.error is ErrorCode.NONE
    assert again.member_id != first.member_id
    assert again.generation_id == first.generation_id
    assert again.skip_assignment
    assert state(coordinator) is GroupState.STABLE
    fenced = coordinator.heartbeat("g", first.member_id, "i1", 1)
    assert fenced is ErrorCode.FENCED_INSTANCE_ID
    stale_sync = await coordinator.sync_group(sync(first, instance="i1"))
    assert stale_sync.error is ErrorCode.FENCED_INSTANCE_ID
    assert coordinator.heartbeat("g", again.member_id, "i1", 1) is ErrorCode.NONE


async def test_static_member_with_changed_protocols_triggers_a_rebalance(
    coordinator: GroupCoordinator,
) -> None:
    await stable_member(coordinator, join(instance="i1"))
    again = await coordinator.join_group(join(instance="i1", protocols=(("range", b"x"),)))
    assert again.generation_id == 2


async def test_leave_group_in_batch(coordinator: GroupCoordinator) -> None:
    assert coordinator.leave_group("missing", [LeavingMember("m")]) == [ErrorCode.UNKNOWN_MEMBER_ID]
    static = await stable_member(coordinator, join(instance="i1"))
    dynamic_join = coordinator.join_group(join())
    await coordinator.join_group(join(static.member_id, instance="i1"))
    dynamic = await dynamic_join
    errors = coordinator.leave_group(
        "g",
        [
            LeavingMember("", "i1"),
            LeavingMember(dynamic.member_id),
            LeavingMember("stranger"),
            LeavingMember("", "i9"),
        ],
    )
    assert errors == [
        ErrorCode.NONE,
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.UNKNOWN_MEMBER_ID,
    ]
    assert state(coordinator) is GroupState.EMPTY


async def test_leave_with_a_stale_static_member_id_is_fenced(
    coordinator: GroupCoordinator,
) -> None:
    first = await stable_member(coordinator, join(instance="i1"))
    await coordinator.join_group(join(instance="i1"))
    errors = coordinator.leave_group("g", [LeavingMember(first.member_id, "i1")])
    assert errors == [ErrorCode.FENCED_INSTANCE_ID]


async def test_leave_during_rebalance_answers_the_parked_join(
    coordinator: GroupCoordinator,
) -> None:
    first, second = await two_stable_members(coordinator)
    parked = coordinator.join_group(join(first.member_id))
    assert coordinator.leave_group("g", [LeavingMember(first.member_id)]) == [ErrorCode.NONE]
    assert (await parked).error is ErrorCode.UNKNOWN_MEMBER_ID
    rejoined = await coordinator.join_group(join(second.member_id))
    assert rejoined.leader_id == second.member_id


async def test_sync_group_errors(coordinator: GroupCoordinator) -> None:
    missing = await coordinator.sync_group(SyncRequest("missing", 1, "m", None, None, None, ()))
    assert missing.error is ErrorCode.UNKNOWN_MEMBER_ID
    first, second = await two_stable_members(coordinator)
    wrong_generation = await coordinator.sync_group(
        sync(JoinResult(ErrorCode.NONE, first.member_id, 9))
    )
    assert wrong_generation.error is ErrorCode.ILLEGAL_GENERATION
    wrong_protocol = await coordinator.sync_group(sync(first, protocol_name="roundrobin"))
    assert wrong_protocol.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    coordinator.join_group(join())
    in_rebalance = await coordinator.sync_group(sync(second))
    assert in_rebalance.error is ErrorCode.REBALANCE_IN_PROGRESS


async def test_rebalance_fails_parked_follower_syncs(coordinator: GroupCoordinator) -> None:
    first = await stable_member(coordinator)
    second_join = coordinator.join_group(join())
    await coordinator.join_group(join(first.member_id))
    second = await second_join
    parked = coordinator.sync_group(sync(second))
    coordinator.join_group(join())
    assert (await parked).error is ErrorCode.REBALANCE_IN_PROGRESS


async def test_stop_answers_parked_requests(clock: ManualClock, store: InMemoryOffsetStore) -> None:
    coordinator = GroupCoordinator(offset_store=store, clock=clock)
    parked = coordinator.join_group(join())
    await coordinator.stop()
    assert (await parked).error is ErrorCode.NOT_COORDINATOR
    assert clock.pending_timers == 0


def offsets(*entries: tuple[str, int, int]) -> dict[TopicPartition, CommittedOffset]:
    return {
        TopicPartition(topic, partition): CommittedOffset(offset, commit_timestamp=1)
        for topic, partition, offset in entries
    }


async def test_simple_commit_without_group_management(
    coordinator: GroupCoordinator, store: InMemoryOffsetStore
) -> None:
    results = await coordinator.commit_offsets("simple", -1, "", None, offsets(("t1", 0, 42)))
    assert results == {TopicPartition("t1", 0): ErrorCode.NONE}
    assert state(coordinator, "simple") is GroupState.EMPTY
    assert (await store.load_all())["simple"][TopicPartition("t1", 0)].committed_offset == 42


async def test_commit_generation_checks(coordinator: GroupCoordinator) -> None:
    tp = TopicPartition("t1", 0)
    unknown_group = await coordinator.commit_offsets("other", 3, "m", None, offsets(("t1", 0, 1)))
    assert unknown_group == {tp: ErrorCode.ILLEGAL_GENERATION}
    first, second = await two_stable_members(coordinator)
    commit = offsets(("t1", 0, 5))
    assert await coordinator.commit_offsets("g", 2, first.member_id, None, commit) == {
        tp: ErrorCode.NONE
    }
    assert await coordinator.commit_offsets("g", 1, first.member_id, None, commit) == {
        tp: ErrorCode.ILLEGAL_GENERATION
    }
    assert await coordinator.commit_offsets("g", 2, "stranger", None, commit) == {
        tp: ErrorCode.UNKNOWN_MEMBER_ID
    }
    assert await coordinator.commit_offsets("g", -1, "", None, commit) == {
        tp: ErrorCode.UNKNOWN_MEMBER_ID
    }
    assert await coordinator.commit_offsets("", -1, "", None, commit) == {
        tp: ErrorCode.INVALID_GROUP_ID
    }
    first_rejoin = coordinator.join_group(join(first.member_id))
    second = await coordinator.join_group(join(second.member_id))
    await first_rejoin
    assert await coordinator.commit_offsets("g", 3, second.member_id, None, commit) == {
        tp: ErrorCode.REBALANCE_IN_PROGRESS
    }


async def test_commit_metadata_too_large(coordinator: GroupCoordinator) -> None:
    big = {TopicPartition("t1", 0): CommittedOffset(1, metadata="x" * 5000)}
    results = await coordinator.commit_offsets("simple", -1, "", None, big)
    assert results == {TopicPartition("t1", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}


async def test_offsets_survive_a_restart(clock: ManualClock, store: InMemoryOffsetStore) -> None:
    before = GroupCoordinator(offset_store=store, clock=clock)
    await before.start()
    await before.commit_offsets("g", -1, "", None, offsets(("t1", 0, 7), ("t1", 1, 9)))
    await before.stop()
    after = GroupCoordinator(offset_store=store, clock=clock)
    await after.start()
    fetched = after.fetch_offsets("g", [TopicPartition("t1", 1), TopicPartition("t2", 0)])
    assert fetched[TopicPartition("t1", 1)] == CommittedOffset(9, commit_timestamp=clock.now_ms())
    assert fetched[TopicPartition("t2", 0)] is None
    assert set(after.fetch_offsets("g", None)) == {TopicPartition("t1", 0), TopicPartition("t1", 1)}
    assert [g.state for g in after.list_groups()] == ["Empty"]
    await after.stop()


async def test_list_and_describe_groups(coordinator: GroupCoordinator) -> None:
    member = await stable_member(coordinator)
    await coordinator.commit_offsets("simple", -1, "", None, offsets(("t1", 0, 1)))
    assert {(g.group_id, g.state) for g in coordinator.list_groups()} == {
        ("g", "Stable"),
        ("simple", "Empty"),
    }
    assert [g.group_id for g in coordinator.list_groups(["stable"])] == ["g"]
    described = coordinator.describe_group("g")
    assert described is not None
    assert (described.state, described.protocol_type, described.protocol_name) == (
        "Stable",
        "consumer",
        "range",
    )
    assert [(m.member_id, m.assignment) for m in described.members] == [(member.member_id, b"all")]
    assert coordinator.describe_group("missing") is None


async def test_delete_groups(coordinator: GroupCoordinator, store: InMemoryOffsetStore) -> None:
    await stable_member(coordinator)
    await coordinator.commit_offsets("simple", -1, "", None, offsets(("t1", 0, 1)))
    results = await coordinator.delete_groups(["g", "simple", "missing"])
    assert results == {
        "g": ErrorCode.NON_EMPTY_GROUP,
        "simple": ErrorCode.NONE,
        "missing": ErrorCode.GROUP_ID_NOT_FOUND,
    }
    assert "simple" not in await store.load_all()
    assert coordinator.fetch_offsets("simple", None) == {}


async def test_offset_delete_keeps_subscribed_topics(coordinator: GroupCoordinator) -> None:
    member = await stable_member(coordinator)
    await coordinator.commit_offsets(
        "g", 1, member.member_id, None, offsets(("t1", 0, 1), ("t2", 0, 2))
    )
    error, results = await coordinator.delete_offsets(
        "g", [TopicPartition("t1", 0), TopicPartition("t2", 0)]
    )
    assert error is ErrorCode.NONE
    assert results == {
        TopicPartition("t1", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
        TopicPartition("t2", 0): ErrorCode.NONE,
    }
    assert set(coordinator.fetch_offsets("g", None)) == {TopicPartition("t1", 0)}
    missing, _ = await coordinator.delete_offsets("missing", [TopicPartition("t1", 0)])
    assert missing is ErrorCode.GROUP_ID_NOT_FOUND


async def test_offset_delete_on_a_live_non_consumer_group(coordinator: GroupCoordinator) -> None:
    await stable_member(coordinator, join(protocol_type="connect"))
    error, _ = await coordinator.delete_offsets("g", [TopicPartition("t1", 0)])
    assert error is ErrorCode.NON_EMPTY_GROUP
