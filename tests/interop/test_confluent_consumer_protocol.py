"""confluent-kafka with `group.protocol=consumer` (KIP-848) against the broker: the broker
assigns, members join and leave, rebalances are incremental, no partition is owned by two
members at once, committed offsets survive a broker restart, and a group moves online
between the classic and the consumer protocol (`group.consumer.migration.policy`).

Each consumer polls in its own thread; its rebalance callbacks record what it owns in a
shared `Ownership`, which flags a partition handed to a member while another still owns
it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from mirrorsim.cli.main import cli

pytestmark = pytest.mark.interop
TIMEOUT_S = 60.0
PARTITIONS = 6
RECORDS = 600
RETRIES = 50
RETRY_BACKOFF_S = 0.05
RETRIABLE_COMMIT_ERRORS = (
    KafkaError.STALE_MEMBER_EPOCH,
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.ILLEGAL_GENERATION,
    KafkaError.REBALANCE_IN_PROGRESS,
)
SESSION_TIMEOUT_MS = 3000
RECONNECT_BACKOFF_MAX_MS = 500
"""librdkafka's default (10 s) can keep a member away from a restarted coordinator for
longer than the coordinator holds back a group it took over."""
RESTART_SESSION_TIMEOUT_MS = 10_000
"""The restart test's hold-back: a member busy on a loaded machine may heartbeat seconds
late, and until it does it still owns its partitions."""
CONFIGS = {
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.session.timeout.ms": SESSION_TIMEOUT_MS,
}


class Ownership:
    """Who owns which partition, as the members' own callbacks report it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owned: dict[str, set[int]] = {}
        self.violations: list[str] = []

    def assign(self, name: str, partitions: list[int]) -> None:
        with self._lock:
            for p in partitions:
                others = [n for n, owned in self.owned.items() if n != name and p in owned]
                if others:
                    self.violations.append(f"{p} given to {name} while owned by {others}")
            self.owned.setdefault(name, set()).update(partitions)

    def revoke(self, name: str, partitions: list[int]) -> None:
        with self._lock:
            self.owned.setdefault(name, set()).difference_update(partitions)

    def snapshot(self) -> dict[str, frozenset[int]]:
        with self._lock:
            return {n: frozenset(owned) for n, owned in self.owned.items()}


class Member:
    """One consumer polling in a thread; every record is committed once processed."""

    def __init__(
        self,
        name: str,
        bootstrap: str,
        group: str,
        topic: str,
        ownership: Ownership,
        protocol: str = "consumer",
    ) -> None:
        self.name = name
        self.records: list[tuple[int, int]] = []
        self.errors: list[str] = []
        self._ownership = ownership
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": protocol,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "client.id": name,
                "reconnect.backoff.max.ms": RECONNECT_BACKOFF_MAX_MS,
            }
        )
        self._consumer.subscribe(
            [topic],
            on_assign=lambda _c, tps: ownership.assign(name, [tp.partition for tp in tps]),
            on_revoke=lambda _c, tps: ownership.revoke(name, [tp.partition for tp in tps]),
            on_lost=lambda _c, tps: ownership.revoke(name, [tp.partition for tp in tps]),
        )
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            message = self._consumer.poll(0.1)
            if message is None:
                continue
            if message.error() is not None:
                self.errors.append(str(message.error()))
                continue
            self.records.append((message.partition(), message.offset()))
            self._commit(message)
        self._consumer.close()
        self._ownership.revoke(self.name, list(range(PARTITIONS)))

    def _commit(self, message: Any) -> None:
        """Commit at the member's epoch. A commit that crosses an epoch bump answers
        STALE_MEMBER_EPOCH (as Kafka's does; ILLEGAL_GENERATION or REBALANCE_IN_PROGRESS
        for a classic member), and one sent after a coordinator restart, before the member
        has rejoined, UNKNOWN_MEMBER_ID; librdkafka leaves the retry to the application,
        which tries again once a heartbeat has brought the new epoch. A partition revoked
        meanwhile is committed by its next owner instead."""
        for _ in range(RETRIES):
            try:
                self._consumer.commit(message=message, asynchronous=False)
                return
            except KafkaException as error:
                if error.args[0].code() not in RETRIABLE_COMMIT_ERRORS:
                    raise
                time.sleep(RETRY_BACKOFF_S)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT_S)
        assert not self._thread.is_alive(), f"{self.name} did not close"


@pytest.fixture
async def members() -> AsyncIterator[list[Member]]:
    """Members still running when the test ends; closed off the event loop, which the
    broker needs to answer their leave."""
    started: list[Member] = []
    yield started
    for member in started:
        await asyncio.to_thread(member.close)


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result(timeout=TIMEOUT_S)


def _produce(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(start, start + count):
        producer.produce(topic, value=f"{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(TIMEOUT_S) == 0


def _covers_all_disjoint(owned: dict[str, frozenset[int]], names: list[str], each: int) -> bool:
    sets = [owned.get(n, frozenset()) for n in names]
    union = frozenset().union(*sets)
    return (
        union == frozenset(range(PARTITIONS))
        and sum(len(s) for s in sets) == PARTITIONS
        and all(len(s) == each for s in sets)
    )


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p) for p in range(PARTITIONS)]
    )
    (future,) = admin.list_consumer_group_offsets([request]).values()
    return {tp.partition: tp.offset for tp in future.result(timeout=TIMEOUT_S).topic_partitions}


async def test_server_side_assignment_rebalances_incrementally_and_resumes_after_restart(
    start_cluster: Any, wait_for: Any, members: list[Member]
) -> None:
    cluster = await start_cluster(configs=CONFIGS)
    topic = group = "kip848-orders"
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic)
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, RECORDS)
    ownership = Ownership()

    def join(name: str) -> Member:
        member = Member(name, cluster.bootstrap, group, topic, ownership)
        members.append(member)
        return member

    first, second = join("first"), join("second")
    await wait_for(
        lambda: _covers_all_disjoint(ownership.snapshot(), ["first", "second"], 3),
        timeout=TIMEOUT_S,
        message="two members share the partitions",
    )
    third = join("third")
    await wait_for(
        lambda: _covers_all_disjoint(ownership.snapshot(), ["first", "second", "third"], 2),
        timeout=TIMEOUT_S,
        message="three members share the partitions",
    )
    await asyncio.to_thread(second.close)
    members.remove(second)
    await wait_for(
        lambda: _covers_all_disjoint(ownership.snapshot(), ["first", "third"], 3),
        timeout=TIMEOUT_S,
        message="the two remaining members take over",
    )
    consumed = lambda: {r for m in (first, second, third) for r in m.records}  # noqa: E731
    await wait_for(lambda: len(consumed()) == RECORDS, timeout=TIMEOUT_S, message="all consumed")
    for member in (first, third):
        await asyncio.to_thread(member.close)
        members.remove(member)
    assert ownership.violations == []
    assert not any(m.errors for m in (first, second, third))
    per_partition = RECORDS // PARTITIONS
    expected = dict.fromkeys(range(PARTITIONS), per_partition)
    assert await asyncio.to_thread(_committed, cluster.bootstrap, group, topic) == expected

    broker = cluster.brokers[0]
    await broker.stop()
    await broker.start()
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, PARTITIONS, RECORDS)
    resumed = join("resumed")
    await wait_for(lambda: len(resumed.records) >= PARTITIONS, timeout=TIMEOUT_S, message="resumed")
    assert sorted(resumed.records) == [(p, per_partition) for p in range(PARTITIONS)]


async def test_admin_sees_the_group_type_members_and_assignments(
    start_cluster: Any, wait_for: Any, members: list[Member]
) -> None:
    cluster = await start_cluster(configs=CONFIGS)
    topic = group = "kip848-admin"
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic)
    ownership = Ownership()
    for name in ("left", "right"):
        members.append(Member(name, cluster.bootstrap, group, topic, ownership))
    await wait_for(
        lambda: _covers_all_disjoint(ownership.snapshot(), ["left", "right"], 3),
        timeout=TIMEOUT_S,
        message="both members assigned",
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    listed = await asyncio.to_thread(lambda: admin.list_consumer_groups().result(TIMEOUT_S))
    (listing,) = [g for g in listed.valid if g.group_id == group]
    assert listing.type.name == "CONSUMER"
    assert listing.state.name == "STABLE"

    def describe() -> Any:
        (future,) = admin.describe_consumer_groups([group]).values()
        return future.result(TIMEOUT_S)

    described = await asyncio.to_thread(describe)
    assert described.type.name == "CONSUMER"
    assert described.partition_assignor == "uniform"
    assert {m.client_id for m in described.members} == {"left", "right"}
    assigned = [tp.partition for m in described.members for tp in m.assignment.topic_partitions]
    assert sorted(assigned) == list(range(PARTITIONS))

    listed_cli = await _groups_cli(cluster.bootstrap, "--list")
    assert listed_cli.exit_code == 0, listed_cli.output
    (line,) = [row for row in listed_cli.output.splitlines() if row.startswith(group)]
    assert line.split() == [group, "consumer", "Stable", "consumer"]
    described_cli = await _groups_cli(cluster.bootstrap, "--describe", "--group", group)
    assert described_cli.exit_code == 0, described_cli.output
    state, members_section, offsets = described_cli.output.strip().split("\n\n")
    rows = state.splitlines()
    assert rows[1].split()[:3] == [group, "consumer", "Stable"]
    assert rows[1].split()[-1] == "uniform"
    member_rows = {row.split()[1]: row.split() for row in members_section.splitlines()[1:]}
    assert set(member_rows) == {"left", "right"}
    cli_partitions = sorted(
        int(p) for row in member_rows.values() for p in row[4].removeprefix(f"{topic}:").split(",")
    )
    assert cli_partitions == list(range(PARTITIONS))
    owners = {row.split()[2]: row.split()[-1] for row in offsets.splitlines()[1:]}
    assert sorted(int(p) for p in owners) == list(range(PARTITIONS))
    assert set(owners.values()) == {row[0] for row in member_rows.values()}
    missing = await _groups_cli(cluster.bootstrap, "--describe", "--group", "nobody")
    assert missing.exit_code == 1
    assert missing.output.strip() == "Error: Consumer group 'nobody' does not exist."


async def _groups_cli(bootstrap: str, *args: str) -> Any:
    argv = ["groups", "--bootstrap-server", bootstrap, *args]
    return await asyncio.to_thread(CliRunner().invoke, cli, argv)


async def test_members_rejoin_after_a_coordinator_restart_and_keep_consuming(
    start_cluster: Any, wait_for: Any, members: list[Member]
) -> None:
    """Membership is not kept across a restart: the members' heartbeats are answered
    UNKNOWN_MEMBER_ID, they rejoin with epoch 0 and go on from the committed offsets.
    The restarted coordinator hands out nothing for one session timeout, so no partition
    has two owners while a member has not heard yet that it is unknown."""
    cluster = await start_cluster(
        configs={**CONFIGS, "group.consumer.session.timeout.ms": RESTART_SESSION_TIMEOUT_MS}
    )
    topic = group = "kip848-restart"
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic)
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, RECORDS)
    ownership = Ownership()
    for name in ("one", "two"):
        members.append(Member(name, cluster.bootstrap, group, topic, ownership))
    consumed = lambda: {r for m in members for r in m.records}  # noqa: E731
    await wait_for(lambda: len(consumed()) == RECORDS, timeout=TIMEOUT_S, message="first half")
    broker = cluster.brokers[0]
    await broker.stop()
    await broker.start()
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, RECORDS, RECORDS)
    await wait_for(lambda: len(consumed()) == 2 * RECORDS, timeout=TIMEOUT_S, message="second half")
    await wait_for(
        lambda: _covers_all_disjoint(ownership.snapshot(), ["one", "two"], 3),
        timeout=TIMEOUT_S,
        message="both members assigned again",
    )
    assert ownership.violations == []
    per_partition = 2 * RECORDS // PARTITIONS
    expected = dict.fromkeys(range(PARTITIONS), per_partition)

    async def all_committed() -> bool:
        committed = await asyncio.to_thread(_committed, cluster.bootstrap, group, topic)
        return committed == expected

    await wait_for(all_committed, timeout=TIMEOUT_S, message="everything committed")


async def test_a_regex_subscription_is_resolved_by_the_broker_and_takes_up_new_topics(
    start_cluster: Any, wait_for: Any, members: list[Member]
) -> None:
    """librdkafka sends a `^` subscription as SubscribedTopicRegex (v1); the broker
    matches it and assigns a topic created after the member joined."""
    cluster = await start_cluster(configs=CONFIGS)
    group = "kip848-regex"
    await asyncio.to_thread(_create_topic, cluster.bootstrap, "metrics-a")
    await asyncio.to_thread(_create_topic, cluster.bootstrap, "logs")
    await asyncio.to_thread(_produce, cluster.bootstrap, "metrics-a", PARTITIONS)
    ownership = Ownership()
    member = Member("watcher", cluster.bootstrap, group, "^metrics-.*", ownership)
    members.append(member)
    await wait_for(lambda: len(member.records) == PARTITIONS, timeout=TIMEOUT_S, message="a")
    await asyncio.to_thread(_create_topic, cluster.bootstrap, "metrics-b")
    await asyncio.to_thread(_produce, cluster.bootstrap, "metrics-b", PARTITIONS)
    await wait_for(
        lambda: len(member.records) == 2 * PARTITIONS, timeout=TIMEOUT_S, message="metrics-b"
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

    def describe() -> Any:
        (future,) = admin.describe_consumer_groups([group]).values()
        return future.result(TIMEOUT_S)

    (described,) = (await asyncio.to_thread(describe)).members
    topics = {tp.topic for tp in described.assignment.topic_partitions}
    assert topics == {"metrics-a", "metrics-b"}


async def test_groups_are_coordinated_across_brokers(
    start_cluster: Any, wait_for: Any, members: list[Member]
) -> None:
    """With two brokers each group has one coordinator (FindCoordinator); heartbeats to
    the other answer NOT_COORDINATOR. Groups of both brokers assign and consume."""
    cluster = await start_cluster(brokers=2, configs=CONFIGS)
    topic = "kip848-two-brokers"
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic)
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, RECORDS)
    groups = [f"kip848-group-{i}" for i in range(4)]
    coordinators = {cluster.brokers[0].groups.owns(g) for g in groups}
    assert coordinators == {True, False}, "the groups should spread over both brokers"
    for group in groups:
        ownership = Ownership()
        pair = [Member(f"{group}-{n}", cluster.bootstrap, group, topic, ownership) for n in "ab"]
        members.extend(pair)
        await wait_for(
            lambda o=ownership, p=pair: _covers_all_disjoint(
                o.snapshot(), [m.name for m in p], PARTITIONS // 2
            ),
            timeout=TIMEOUT_S,
            message=f"{group} assigned",
        )
    await wait_for(
        lambda: all(
            len({r for m in members[i : i + 2] for r in m.records}) == RECORDS
            for i in range(0, len(members), 2)
        ),
        timeout=TIMEOUT_S,
        message="every group consumed everything",
    )


async def test_the_groups_command_describes_a_classic_group_beside_a_consumer_group(
    start_cluster: Any, wait_for: Any, members: list[Member]
) -> None:
    """A classic consumer (JoinGroup/SyncGroup) in one group, a KIP-848 consumer in
    another: both are listed with their type and the classic member's assignment is
    decoded from the leader's bytes."""
    cluster = await start_cluster(configs={**CONFIGS, "group.initial.rebalance.delay.ms": 0})
    topic = "kip848-side-by-side"
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic)
    ownership = Ownership()
    members.append(Member("modern", cluster.bootstrap, "new-group", topic, ownership))
    members.append(
        Member("legacy", cluster.bootstrap, "old-group", topic, ownership, protocol="classic")
    )
    await wait_for(
        lambda: (
            {n: len(p) for n, p in ownership.snapshot().items()}
            == {"modern": PARTITIONS, "legacy": PARTITIONS}
        ),
        timeout=TIMEOUT_S,
        message="both groups assigned",
    )
    listed = await _groups_cli(cluster.bootstrap, "--list")
    rows = {row.split()[0]: row.split()[1:3] for row in listed.output.splitlines()[1:]}
    assert rows == {"new-group": ["consumer", "Stable"], "old-group": ["classic", "Stable"]}
    described = await _groups_cli(cluster.bootstrap, "--describe", "--group", "old-group")
    assert described.exit_code == 0, described.output
    state, members_section, offsets = described.output.strip().split("\n\n")
    assert state.splitlines()[1].split()[:3] == ["old-group", "classic", "Stable"]
    (member_line,) = members_section.splitlines()[1:]
    assert member_line.split()[-1] == f"{topic}:" + ",".join(str(p) for p in range(PARTITIONS))
    owners = {line.split()[2]: line.split()[-1] for line in offsets.splitlines()[1:]}
    assert owners == {str(p): member_line.split()[0] for p in range(PARTITIONS)}


def _group_type(bootstrap: str, group: str) -> str:
    """The group's type as ListGroups (v5) reports it: CLASSIC or CONSUMER."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(TIMEOUT_S)
    (listing,) = [g for g in listed.valid if g.group_id == group]
    return str(listing.type.name)


async def test_a_classic_group_migrates_to_the_consumer_protocol_and_back_online(
    start_cluster: Any, wait_for: Any, members: list[Member]
) -> None:
    """Kafka 4's default `group.consumer.migration.policy=bidirectional`: a consumer with
    `group.protocol=consumer` joining a group of classic consumers turns it into a consumer
    group in which all three share the partitions, no partition owned by two at once;
    when it leaves the group is classic again and the classic consumers carry on."""
    cluster = await start_cluster(configs={**CONFIGS, "group.initial.rebalance.delay.ms": 0})
    topic = group = "kip848-migration"
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic)
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, RECORDS)
    ownership = Ownership()
    classic = ["classic-1", "classic-2"]
    for name in classic:
        members.append(Member(name, cluster.bootstrap, group, topic, ownership, protocol="classic"))
    await wait_for(
        lambda: _covers_all_disjoint(ownership.snapshot(), classic, 3),
        timeout=TIMEOUT_S,
        message="the classic members share the partitions",
    )
    assert await asyncio.to_thread(_group_type, cluster.bootstrap, group) == "CLASSIC"
    modern = Member("modern", cluster.bootstrap, group, topic, ownership)
    members.append(modern)
    await wait_for(
        lambda: _covers_all_disjoint(ownership.snapshot(), [*classic, "modern"], 2),
        timeout=TIMEOUT_S,
        message="all three share the partitions",
    )
    assert await asyncio.to_thread(_group_type, cluster.bootstrap, group) == "CONSUMER"
    consumed = lambda: {r for m in members for r in m.records} | set(modern.records)  # noqa: E731
    await wait_for(lambda: len(consumed()) == RECORDS, timeout=TIMEOUT_S, message="all consumed")

    await asyncio.to_thread(modern.close)
    members.remove(modern)
    await wait_for(
        lambda: _covers_all_disjoint(ownership.snapshot(), classic, 3),
        timeout=TIMEOUT_S,
        message="the classic members take the partitions back",
    )
    assert await asyncio.to_thread(_group_type, cluster.bootstrap, group) == "CLASSIC"
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, RECORDS, RECORDS)
    await wait_for(
        lambda: len(consumed()) == 2 * RECORDS, timeout=TIMEOUT_S, message="the rest consumed"
    )
    assert ownership.violations == []
    assert not any(m.errors for m in [*members, modern])
