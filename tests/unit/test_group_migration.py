"""Online migration between classic and consumer groups (`group.consumer.migration.policy`),
driven step by step on a `ManualClock`: classic members (JoinGroup/SyncGroup/Heartbeat,
cooperative: they rejoin with what they still own) and consumer-protocol members
(ConsumerGroupHeartbeat) in one group, checking after every answer that no partition is
owned by two clients at once, as each client's own view has it."""

from __future__ import annotations

import struct
import uuid
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field

import pytest

from mirrorsim.broker.config import BROKER_CONFIGS, ConfigError
from mirrorsim.broker.group import (
    CommittedOffset,
    GroupConfig,
    GroupCoordinator,
    InMemoryOffsetStore,
    ManualClock,
    TopicPartition,
)
from mirrorsim.broker.group.config import MigrationPolicy
from mirrorsim.broker.group.consumer_messages import ConsumerHeartbeat, TopicInfo
from mirrorsim.broker.group.messages import (
    JoinRequest,
    JoinResult,
    LeavingMember,
    SyncRequest,
    SyncResult,
)
from mirrorsim.broker.group.subscription import (
    MalformedProtocol,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from mirrorsim.protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(10)

PARTITIONS = 6
TOPICS = {"orders": TopicInfo(uuid.uuid4(), PARTITIONS)}
EVERY_PARTITION = frozenset(TopicPartition("orders", p) for p in range(PARTITIONS))
SESSION_MS = 10_000
REBALANCE_MS = 30_000
PROTOCOL = "cooperative-sticky"


def _string(value: str) -> bytes:
    return struct.pack(">h", len(value)) + value.encode()


def _partitions(partitions: frozenset[TopicPartition]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    body = struct.pack(">i", len(by_topic))
    for topic, numbers in by_topic.items():
        body += _string(topic) + struct.pack(f">i{len(numbers)}i", len(numbers), *numbers)
    return body


def subscription(
    owned: frozenset[TopicPartition] = frozenset(), *, version: int = 1, rack: str | None = None
) -> bytes:
    """A ConsumerProtocolSubscription as a Java or librdkafka client writes it."""
    body = struct.pack(">hi", version, 1) + _string("orders") + struct.pack(">i", -1)
    if version >= 1:
        body += _partitions(owned)
    if version >= 2:
        body += struct.pack(">i", 4)
    if version >= 3:
        body += struct.pack(">h", -1) if rack is None else _string(rack)
    return body


@dataclass
class Clients:
    """What every client believes it owns (from its last SyncGroup or heartbeat answer)."""

    owned: dict[str, frozenset[TopicPartition]] = field(default_factory=dict)

    def take(self, name: str, partitions: frozenset[TopicPartition]) -> None:
        self.owned[name] = partitions
        for other, theirs in self.owned.items():
            assert other == name or not theirs & partitions, f"{name} and {other} share"

    def covered(self, names: list[str], each: int) -> bool:
        return (
            all(len(self.owned.get(n, ())) == each for n in names)
            and frozenset().union(*(self.owned.get(n, frozenset()) for n in names))
            == EVERY_PARTITION
        )


@dataclass
class ClassicClient:
    """A cooperative classic consumer: it keeps its partitions across a rejoin, reports
    them in its subscription and revokes what a SyncGroup answer leaves out."""

    coordinator: GroupCoordinator
    clients: Clients
    name: str
    member_id: str = ""
    generation: int = -1

    def join(self) -> Awaitable[ErrorCode]:
        """Sent at once (the coordinator may park it); awaited for the answer."""
        request = JoinRequest(
            group_id="g",
            member_id=self.member_id,
            group_instance_id=None,
            client_id=self.name,
            client_host="/127.0.0.1",
            session_timeout_ms=SESSION_MS,
            rebalance_timeout_ms=REBALANCE_MS,
            protocol_type="consumer",
            protocols=((PROTOCOL, subscription(self.clients.owned.get(self.name, frozenset()))),),
            require_known_member_id=False,
        )
        return self._joined(self.coordinator.join_group(request, TOPICS))

    async def _joined(self, answer: Awaitable[JoinResult]) -> ErrorCode:
        result = await answer
        self.member_id = result.member_id
        if result.error is ErrorCode.NONE:
            self.generation = result.generation_id
        return result.error

    def sync(self, assignments: dict[str, bytes] | None = None) -> Awaitable[ErrorCode]:
        answer = self.coordinator.sync_group(
            SyncRequest(
                group_id="g",
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=None,
                protocol_type="consumer",
                protocol_name=PROTOCOL,
                assignments=tuple((assignments or {}).items()),
            )
        )
        return self._synced(answer)

    async def _synced(self, answer: Awaitable[SyncResult]) -> ErrorCode:
        result = await answer
        if result.error is ErrorCode.NONE:
            self.clients.take(self.name, decode_assignment(result.assignment))
        return result.error

    def heartbeat(self) -> ErrorCode:
        return self.coordinator.heartbeat("g", self.member_id, None, self.generation)

    async def rejoin_if_asked(self) -> None:
        """One heartbeat; when told to rebalance, rejoin and sync as a follower."""
        if self.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS:
            assert await self.join() is ErrorCode.NONE
            assert await self.sync() is ErrorCode.NONE


@dataclass
class ConsumerClient:
    coordinator: GroupCoordinator
    clients: Clients
    name: str
    epoch: int = 0

    def heartbeat(self, epoch: int | None = None) -> ErrorCode:
        owned = self.clients.owned.get(self.name, frozenset())
        result = self.coordinator.consumer_group_heartbeat(
            ConsumerHeartbeat(
                group_id="g",
                member_id=self.name,
                member_epoch=self.epoch if epoch is None else epoch,
                rebalance_timeout_ms=REBALANCE_MS,
                subscribed_topic_names=("orders",),
                owned=owned,
            ),
            TOPICS,
        )
        if result.error is ErrorCode.NONE and result.member_epoch >= 0:
            self.epoch = result.member_epoch
            if result.assignment is not None:
                self.clients.take(self.name, result.assignment)
        return result.error

    def leave(self) -> ErrorCode:
        self.clients.take(self.name, frozenset())
        return self.heartbeat(-1)


def _coordinator(
    clock: ManualClock, policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL
) -> GroupCoordinator:
    return GroupCoordinator(
        offset_store=InMemoryOffsetStore(),
        clock=clock,
        config=GroupConfig(initial_rebalance_delay_ms=0, consumer_migration_policy=policy),
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def coordinator(clock: ManualClock) -> AsyncIterator[GroupCoordinator]:
    coordinator = _coordinator(clock)
    yield coordinator
    await coordinator.stop()


async def classic_pair(
    coordinator: GroupCoordinator, clients: Clients
) -> tuple[ClassicClient, ClassicClient]:
    """Two classic members, Stable, the leader having given each half the partitions."""
    a, b = ClassicClient(coordinator, clients, "a"), ClassicClient(coordinator, clients, "b")
    assert await a.join() is ErrorCode.NONE
    assert await a.sync({a.member_id: encode_assignment(EVERY_PARTITION, 1)}) is ErrorCode.NONE
    b_joined = b.join()
    assert a.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
    assert await a.join() is ErrorCode.NONE
    assert await b_joined is ErrorCode.NONE
    halves = sorted(EVERY_PARTITION)
    plan = {
        a.member_id: encode_assignment(frozenset(halves[:3]), 1),
        b.member_id: encode_assignment(frozenset(halves[3:]), 1),
    }
    b_synced = b.sync()
    assert await a.sync(plan) is ErrorCode.NONE
    assert await b_synced is ErrorCode.NONE
    return a, b


async def settle(
    classic: list[ClassicClient], consumers: list[ConsumerClient], clock: ManualClock
) -> None:
    """Heartbeat round after round, as the clients would, until the group is Stable."""
    coordinator = (classic or consumers)[0].coordinator
    for _ in range(20):
        for client in classic:
            await client.rejoin_if_asked()
        for consumer in consumers:
            assert consumer.heartbeat() is ErrorCode.NONE
        clock.advance(1_000)
        group = coordinator.consumer.groups["g"]
        if group.state.value == "Stable" and all(c.heartbeat() is ErrorCode.NONE for c in classic):
            return
    raise AssertionError("the group never settled")


async def test_a_consumer_member_upgrades_a_classic_group_and_nobody_shares_a_partition(
    coordinator: GroupCoordinator, clock: ManualClock
) -> None:
    clients = Clients()
    a, b = await classic_pair(coordinator, clients)
    c = ConsumerClient(coordinator, clients, "c")
    assert c.heartbeat() is ErrorCode.NONE
    assert coordinator.group_type("g") == "consumer"
    group = coordinator.consumer.groups["g"]
    assert group.members[a.member_id].assignment.assigned == clients.owned["a"]
    assert group.members[b.member_id].assignment.assigned == clients.owned["b"]
    assert clients.owned["c"] == frozenset()  # everything is still held by a and b
    assert group.group_epoch == a.generation + 1
    assert a.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
    await settle([a, b], [c], clock)
    assert clients.covered(["a", "b", "c"], 2)
    described = coordinator.describe_consumer_group("g", TOPICS)
    assert described is not None
    assert {m.member_id: m.uses_classic_protocol for m in described.members} == {
        a.member_id: True,
        b.member_id: True,
        "c": False,
    }
    assert [o.group_type for o in coordinator.list_groups()] == ["consumer"]


async def test_a_classic_member_joins_a_consumer_group_and_gets_its_share(
    coordinator: GroupCoordinator, clock: ManualClock
) -> None:
    clients = Clients()
    c = ConsumerClient(coordinator, clients, "c")
    assert c.heartbeat() is ErrorCode.NONE
    assert clients.owned["c"] == EVERY_PARTITION
    d = ClassicClient(coordinator, clients, "d")
    assert await d.join() is ErrorCode.NONE
    assert await d.sync() is ErrorCode.NONE
    assert clients.owned["d"] == frozenset()  # c has not released anything yet
    await settle([d], [c], clock)
    assert clients.covered(["c", "d"], 3)


async def test_the_last_consumer_member_leaving_downgrades_the_group_with_a_rebalance(
    coordinator: GroupCoordinator, clock: ManualClock
) -> None:
    clients = Clients()
    a, b = await classic_pair(coordinator, clients)
    c = ConsumerClient(coordinator, clients, "c")
    assert c.heartbeat() is ErrorCode.NONE
    await settle([a, b], [c], clock)
    await coordinator.commit_offsets(
        "g", a.generation, a.member_id, None, {TopicPartition("orders", 0): CommittedOffset(9)}
    )
    assert c.leave() is ErrorCode.NONE
    assert coordinator.group_type("g") == "classic"
    group = coordinator.group("g")
    assert group is not None and group.state.value == "PreparingRebalance"
    assert group.generation_id == a.generation and group.protocol_name == PROTOCOL
    assert set(group.members) == {a.member_id, b.member_id}
    assert a.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
    a_joined = a.join()
    assert b.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
    assert await b.join() is ErrorCode.NONE
    assert await a_joined is ErrorCode.NONE
    leader = a if group.leader_id == a.member_id else b
    follower = b if leader is a else a
    owned = {n: clients.owned[n] for n in ("a", "b")}
    free = sorted(EVERY_PARTITION - owned["a"] - owned["b"])
    plan = {
        a.member_id: encode_assignment(owned["a"] | frozenset(free[:1]), 1),
        b.member_id: encode_assignment(owned["b"] | frozenset(free[1:]), 1),
    }
    follower_synced = follower.sync()
    assert await leader.sync(plan) is ErrorCode.NONE
    assert await follower_synced is ErrorCode.NONE
    assert group.state.value == "Stable"
    assert clients.covered(["a", "b"], 3)
    assert coordinator.fetch_offsets("g", None)[TopicPartition("orders", 0)].committed_offset == 9


async def test_a_rebalancing_classic_group_is_upgraded_and_its_parked_joins_rejoin(
    coordinator: GroupCoordinator, clock: ManualClock
) -> None:
    clients = Clients()
    a, b = await classic_pair(coordinator, clients)
    x = ClassicClient(coordinator, clients, "x")
    x_joined = x.join()  # parked: the classic group waits for a and b to rejoin
    c = ConsumerClient(coordinator, clients, "c")
    assert c.heartbeat() is ErrorCode.NONE
    assert await x_joined is ErrorCode.REBALANCE_IN_PROGRESS
    group = coordinator.consumer.groups["g"]
    assert group.members[x.member_id].assignment.assigned == frozenset()
    assert await x.join() is ErrorCode.NONE
    assert await x.sync() is ErrorCode.NONE
    await settle([a, b, x], [c], clock)
    assert frozenset().union(*clients.owned.values()) == EVERY_PARTITION
    assert sorted(len(owned) for owned in clients.owned.values()) == [1, 1, 2, 2]


async def test_only_a_group_of_the_consumer_protocol_type_is_upgraded(
    coordinator: GroupCoordinator,
) -> None:
    connect = JoinRequest(
        group_id="g",
        member_id="",
        group_instance_id=None,
        client_id="worker",
        client_host="/127.0.0.1",
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=REBALANCE_MS,
        protocol_type="connect",
        protocols=(("sessioned", b"worker metadata"),),
        require_known_member_id=False,
    )
    assert (await coordinator.join_group(connect)).error is ErrorCode.NONE
    refused = ConsumerClient(coordinator, Clients(), "c")
    assert refused.heartbeat() is ErrorCode.GROUP_ID_NOT_FOUND
    assert coordinator.group_type("g") == "classic"


@pytest.mark.parametrize(
    ("policy", "upgrades", "downgrades"),
    [
        (MigrationPolicy.BIDIRECTIONAL, True, True),
        (MigrationPolicy.UPGRADE, True, False),
        (MigrationPolicy.DOWNGRADE, False, True),
        (MigrationPolicy.DISABLED, False, False),
    ],
)
async def test_the_policy_decides_which_conversions_happen(
    clock: ManualClock, policy: MigrationPolicy, upgrades: bool, downgrades: bool
) -> None:
    coordinator = _coordinator(clock, policy)
    clients = Clients()
    a, b = await classic_pair(coordinator, clients)
    c = ConsumerClient(coordinator, clients, "c")
    joined = c.heartbeat()
    assert (joined is ErrorCode.NONE) is upgrades
    if not upgrades:
        assert joined is ErrorCode.GROUP_ID_NOT_FOUND
        assert coordinator.group_type("g") == "classic"
        assert a.heartbeat() is ErrorCode.NONE  # the classic group carries on undisturbed
        await coordinator.stop()
        return
    await settle([a, b], [c], clock)
    assert c.leave() is ErrorCode.NONE
    assert coordinator.group_type("g") == ("classic" if downgrades else "consumer")
    if not downgrades:  # a consumer group of classic members, which carries on
        await settle([a, b], [], clock)
        assert clients.covered(["a", "b"], 3)
    await coordinator.stop()


async def test_a_classic_member_joins_a_consumer_group_whatever_the_policy(
    clock: ManualClock,
) -> None:
    """As in Kafka 4, the policy governs converting a group, not who may join one."""
    coordinator = _coordinator(clock, MigrationPolicy.DISABLED)
    clients = Clients()
    c = ConsumerClient(coordinator, clients, "c")
    assert c.heartbeat() is ErrorCode.NONE
    d = ClassicClient(coordinator, clients, "d")
    assert await d.join() is ErrorCode.NONE
    await settle([d], [c], clock)
    assert c.leave() is ErrorCode.NONE
    assert coordinator.group_type("g") == "consumer"  # no downgrade
    await settle([d], [], clock)
    assert clients.covered(["d"], PARTITIONS)
    await coordinator.stop()


async def test_classic_members_that_stop_answering_are_removed(
    coordinator: GroupCoordinator, clock: ManualClock
) -> None:
    clients = Clients()
    a, b = await classic_pair(coordinator, clients)
    c = ConsumerClient(coordinator, clients, "c")
    assert c.heartbeat() is ErrorCode.NONE
    group = coordinator.consumer.groups["g"]
    assert b.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS  # b never rejoins
    for _ in range(REBALANCE_MS // 5_000 - 1):
        clock.advance(5_000)
        await a.rejoin_if_asked()
        assert b.heartbeat() is ErrorCode.REBALANCE_IN_PROGRESS
        assert c.heartbeat() is ErrorCode.NONE
    clock.advance(5_000)  # b's rebalance timeout since it was first told to rejoin
    assert b.member_id not in group.members
    clients.take("b", frozenset())  # its client gives up too
    assert b.heartbeat() is ErrorCode.UNKNOWN_MEMBER_ID
    assert c.heartbeat() is ErrorCode.NONE
    clock.advance(SESSION_MS)  # a never heartbeats again
    assert a.member_id not in group.members
    assert set(group.members) == {"c"}


async def test_classic_members_commit_at_their_generation_with_any_version(
    coordinator: GroupCoordinator,
) -> None:
    clients = Clients()
    a, _ = await classic_pair(coordinator, clients)
    assert ConsumerClient(coordinator, clients, "c").heartbeat() is ErrorCode.NONE
    offset = {TopicPartition("orders", 0): CommittedOffset(5)}
    ok = await coordinator.commit_offsets("g", a.generation, a.member_id, None, offset, 8)
    assert set(ok.values()) == {ErrorCode.NONE}
    stale = await coordinator.commit_offsets("g", a.generation - 1, a.member_id, None, offset, 8)
    assert set(stale.values()) == {ErrorCode.ILLEGAL_GENERATION}
    consumer = await coordinator.commit_offsets("g", 1, "c", None, offset, 8)
    assert set(consumer.values()) == {ErrorCode.UNSUPPORTED_VERSION}


async def test_classic_apis_refuse_consumer_members_and_strangers(
    coordinator: GroupCoordinator,
) -> None:
    clients = Clients()
    c = ConsumerClient(coordinator, clients, "c")
    assert c.heartbeat() is ErrorCode.NONE
    assert coordinator.heartbeat("g", "c", None, c.epoch) is ErrorCode.UNKNOWN_MEMBER_ID
    assert coordinator.leave_group("g", [LeavingMember("c")]) == [ErrorCode.UNKNOWN_MEMBER_ID]
    other = ClassicClient(coordinator, clients, "x")
    other_protocol = JoinRequest(
        group_id="g",
        member_id="",
        group_instance_id=None,
        client_id="x",
        client_host="/127.0.0.1",
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=REBALANCE_MS,
        protocol_type="connect",
        protocols=(("default", b""),),
        require_known_member_id=True,
    )
    refused = await coordinator.join_group(other_protocol, TOPICS)
    assert refused.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert await other.join() is ErrorCode.NONE
    assert coordinator.leave_group("g", [LeavingMember(other.member_id)]) == [ErrorCode.NONE]
    assert set(coordinator.consumer.groups["g"].members) == {"c"}


def test_subscriptions_of_every_version_and_assignments_are_read_as_kafka_writes_them() -> None:
    owned = frozenset({TopicPartition("orders", 2), TopicPartition("orders", 5)})
    assert decode_subscription(subscription(version=0)) == Subscription(0, ("orders",))
    assert decode_subscription(subscription(owned, version=2)).owned == owned
    assert decode_subscription(subscription(owned, version=3, rack="r1")) == Subscription(
        3, ("orders",), owned, "r1"
    )
    newer = struct.pack(">h", 9) + subscription(owned, version=3)[2:] + b"future fields"
    assert decode_subscription(newer).owned == owned
    for version in range(4):
        assert decode_assignment(encode_assignment(owned, version)) == owned
    for malformed in (b"", struct.pack(">hi", 0, 1), struct.pack(">h", -1)):
        with pytest.raises(MalformedProtocol):
            decode_subscription(malformed)


def test_the_policy_is_a_broker_config_read_without_regard_to_case() -> None:
    definition = BROKER_CONFIGS["group.consumer.migration.policy"]
    assert definition.default == "bidirectional"
    assert definition.parse("Downgrade") == "Downgrade"
    with pytest.raises(ConfigError):
        definition.parse("sideways")
    config = GroupConfig.from_properties({"group.consumer.migration.policy": "UPGRADE"})
    assert config.consumer_migration_policy is MigrationPolicy.UPGRADE
    assert GroupConfig().consumer_migration_policy is MigrationPolicy.BIDIRECTIONAL


async def test_a_static_classic_member_hands_its_partitions_to_its_consumer_successor(
    coordinator: GroupCoordinator,
) -> None:
    """A rolling upgrade of a static member: the instance comes back speaking the consumer
    protocol and takes over without waiting for the old member to leave."""
    first = ConsumerClient(coordinator, Clients(), "first")
    assert first.heartbeat() is ErrorCode.NONE

    def join_old(member_id: str) -> Awaitable[JoinResult]:
        return coordinator.join_group(
            JoinRequest(
                group_id="g",
                member_id=member_id,
                group_instance_id="pod-1",
                client_id="old",
                client_host="/127.0.0.1",
                session_timeout_ms=SESSION_MS,
                rebalance_timeout_ms=REBALANCE_MS,
                protocol_type="consumer",
                protocols=((PROTOCOL, subscription()),),
                require_known_member_id=True,
            ),
            TOPICS,
        )

    old = await join_old("")
    assert old.error is ErrorCode.NONE  # a static member gets its id at once
    assert first.heartbeat() is ErrorCode.NONE  # told to revoke half
    assert first.heartbeat() is ErrorCode.NONE  # revoked
    old = await join_old(old.member_id)
    group = coordinator.consumer.groups["g"]
    held = group.members[old.member_id].assignment.held
    assert len(held) == PARTITIONS // 2
    successor = coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat(
            group_id="g",
            member_id="new",
            member_epoch=0,
            instance_id="pod-1",
            rebalance_timeout_ms=REBALANCE_MS,
            subscribed_topic_names=("orders",),
            owned=frozenset(),
        ),
        TOPICS,
    )
    assert successor.error is ErrorCode.NONE and successor.assignment == held
    assert set(group.members) == {"first", "new"}
    assert group.members["new"].classic is None
    assert coordinator.heartbeat("g", old.member_id, "pod-1", old.generation_id) is (
        ErrorCode.FENCED_INSTANCE_ID
    )
