"""Group coordination follows the live broker set: a broker answers NOT_COORDINATOR for
groups it does not coordinate, and a broker that becomes a group's coordinator serves the
offsets committed through the previous one."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import CommitFailedError
from aiokafka.structs import TopicPartition as KafkaTopicPartition

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.broker.group import (
    CommittedOffset,
    GroupConfig,
    GroupCoordinator,
    InMemoryOffsetStore,
    ManualClock,
    TopicPartition,
)
from mirrorsim.broker.group.messages import JoinRequest
from mirrorsim.broker.group.ownership import coordinator_id
from mirrorsim.broker.server import Broker
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode

FAST = {
    "broker.heartbeat.interval.ms": 100,
    "broker.session.timeout.ms": 1500,
    "metadata.refresh.interval.ms": 100,
    "replica.fetch.wait.max.ms": 100,
    "replica.fetch.backoff.ms": 50,
    "group.initial.rebalance.delay.ms": 0,
}
OFFSETS_PARTITIONS = 50
TP = TopicPartition("orders", 0)


def _owned_by_nobody(_group_id: str) -> bool:
    return False


def _owned_by_all(_group_id: str) -> bool:
    return True


def join_request(group_id: str) -> JoinRequest:
    return JoinRequest(
        group_id=group_id,
        member_id="",
        group_instance_id=None,
        client_id="client",
        client_host="/127.0.0.1",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        protocol_type="consumer",
        protocols=(("range", b""),),
        require_known_member_id=False,
    )


# -- the coordinator on its own ----------------------------------------------------------


async def test_a_group_that_moved_away_and_back_is_read_again() -> None:
    store = InMemoryOffsetStore()
    await store.commit("g", {TP: CommittedOffset(1)})
    coordinator = GroupCoordinator(
        offset_store=store, clock=ManualClock(), config=GroupConfig(initial_rebalance_delay_ms=0)
    )
    await coordinator.start()
    assert await coordinator.acquire("g") is ErrorCode.NONE
    assert coordinator.fetch_offsets("g", [TP])[TP] == CommittedOffset(1)
    assert (await coordinator.join_group(join_request("g"))).error is ErrorCode.NONE
    pending = coordinator.join_group(join_request("g"))
    assert not pending.done(), "parked until the first member rejoins"

    await coordinator.update_ownership(_owned_by_nobody)
    assert (await pending).error is ErrorCode.NOT_COORDINATOR
    assert await coordinator.acquire("g") is ErrorCode.NOT_COORDINATOR
    assert coordinator.list_groups() == []

    await store.commit("g", {TP: CommittedOffset(2)})  # through the other coordinator
    await coordinator.update_ownership(_owned_by_all)
    assert [g.group_id for g in coordinator.list_groups()] == ["g"]
    assert await coordinator.acquire("g") is ErrorCode.NONE
    assert coordinator.fetch_offsets("g", [TP])[TP] == CommittedOffset(2)
    await coordinator.stop()


async def test_a_broker_that_starts_owning_nothing_reads_each_group_on_first_use() -> None:
    store = InMemoryOffsetStore()
    await store.commit("g", {TP: CommittedOffset(5)})
    coordinator = GroupCoordinator(offset_store=store, owns=_owned_by_nobody)
    await coordinator.start()
    assert coordinator.fetch_offsets("g", None) == {}
    await coordinator.update_ownership(_owned_by_all)
    await store.commit("g", {TP: CommittedOffset(6)})
    assert await coordinator.acquire("g") is ErrorCode.NONE
    assert coordinator.fetch_offsets("g", None) == {TP: CommittedOffset(6)}
    assert await coordinator.acquire("") is ErrorCode.NONE, "left to INVALID_GROUP_ID"
    await coordinator.stop()


async def test_concurrent_first_requests_read_the_store_once() -> None:
    class CountingStore(InMemoryOffsetStore):
        reads = 0

        async def load_group(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
            self.reads += 1
            await asyncio.sleep(0)
            return await super().load_group(group_id)

    store = CountingStore()
    coordinator = GroupCoordinator(offset_store=store, owns=_owned_by_nobody)
    await coordinator.update_ownership(_owned_by_all)
    codes = await asyncio.gather(*(coordinator.acquire("g") for _ in range(5)))
    assert codes == [ErrorCode.NONE] * 5
    assert store.reads == 1
    await coordinator.stop()


# -- three in-process brokers ------------------------------------------------------------


def broker(cluster: ClusterRunner, broker_id: int) -> Broker:
    return next(b for b in cluster.brokers if b.broker_id == broker_id)


async def stop(cluster: ClusterRunner, broker_id: int) -> None:
    target = broker(cluster, broker_id)
    cluster.brokers.remove(target)
    await target.stop()


async def send(target: Broker, api_key: int, version: int, fields: dict[str, Any]) -> Any:
    connection = BrokerConnection(target.host, target.port, client_id="group-ownership-test")
    await connection.connect()
    try:
        return await connection.send(build_request(api_key, version, fields))
    finally:
        await connection.close()


async def commit(target: Broker, group_id: str, offset: int) -> ErrorCode:
    response = await send(
        target,
        8,
        8,
        {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": TP.topic,
                    "partitions": [
                        {
                            "partition_index": TP.partition,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
    )
    return ErrorCode(int(response.topics[0].partitions[0].error_code))


async def fetch(target: Broker, group_id: str) -> tuple[ErrorCode, int]:
    """OffsetFetch v7: (the group's error code, the committed offset of TP)."""
    response = await send(
        target,
        9,
        7,
        {
            "group_id": group_id,
            "topics": [{"name": TP.topic, "partition_indexes": [TP.partition]}],
            "require_stable": False,
        },
    )
    return ErrorCode(int(response.error_code)), int(
        response.topics[0].partitions[0].committed_offset
    )


def group_owned_by(owner: int, live: list[int]) -> str:
    return next(
        g
        for g in (f"group-{n}" for n in range(1000))
        if coordinator_id(g, OFFSETS_PARTITIONS, live) == owner
    )


async def test_the_next_coordinator_serves_offsets_committed_through_the_stopped_one(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    await broker(cluster, 1).controller.create_topic(TP.topic, assignments={0: [1, 3]})
    group_id = group_owned_by(2, [1, 2, 3])
    assert await commit(broker(cluster, 1), group_id, 7) == ErrorCode.NOT_COORDINATOR
    assert await commit(broker(cluster, 3), group_id, 7) == ErrorCode.NOT_COORDINATOR
    assert await commit(broker(cluster, 2), group_id, 42) == ErrorCode.NONE
    assert await fetch(broker(cluster, 2), group_id) == (ErrorCode.NONE, 42)
    assert (await fetch(broker(cluster, 1), group_id))[0] == ErrorCode.NOT_COORDINATOR

    await stop(cluster, 2)
    new_owner = broker(cluster, coordinator_id(group_id, OFFSETS_PARTITIONS, [1, 3]))
    other = next(b for b in cluster.brokers if b is not new_owner)
    await wait_for(
        lambda: new_owner.groups.owns(group_id) and not other.groups.owns(group_id),
        message="both brokers see broker 2 gone",
    )
    assert await fetch(new_owner, group_id) == (ErrorCode.NONE, 42)
    assert (await fetch(other, group_id))[0] == ErrorCode.NOT_COORDINATOR


@contextlib.asynccontextmanager
async def consumer(bootstrap: str, group_id: str, topic: str) -> AsyncIterator[AIOKafkaConsumer]:
    member = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=100,
        metadata_max_age_ms=500,
    )
    await member.start()
    try:
        yield member
    finally:
        await member.stop()


async def consume(member: AIOKafkaConsumer, seen: list[int]) -> None:
    """Poll and commit until cancelled; ``seen`` collects every value, duplicates too
    (records after a commit lost to the coordinator's stop are delivered again)."""
    while True:
        batches = await member.getmany(timeout_ms=100)
        for messages in batches.values():
            seen.extend(int(m.value) for m in messages)
        if batches:
            with contextlib.suppress(CommitFailedError):
                await member.commit()  # fails while the group rejoins; the next one lands


async def produce(bootstrap: str, topic: str, values: range) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for n in values:
            await producer.send_and_wait(topic, str(n).encode(), partition=n % 2)
    finally:
        await producer.stop()


async def test_an_aiokafka_group_resumes_after_its_coordinator_is_stopped(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    topic = "events"
    await cluster.brokers[0].controller.create_topic(topic, assignments={0: [1, 3], 1: [3, 1]})
    group_id = group_owned_by(2, [1, 2, 3])
    await produce(cluster.bootstrap, topic, range(20))
    bootstrap = broker(cluster, 1).bootstrap

    seen: list[int] = []
    async with consumer(bootstrap, group_id, topic) as member:
        poller = asyncio.create_task(consume(member, seen))
        try:
            await wait_for(lambda: len(seen) >= 20, timeout=30, message="the first 20")
            await stop(cluster, 2)
            await produce(bootstrap, topic, range(20, 30))
            await wait_for(lambda: set(seen) >= set(range(30)), timeout=30, message="the next 10")

            async def all_committed() -> bool:
                ends = [await member.committed(KafkaTopicPartition(topic, p)) for p in (0, 1)]
                return ends == [15, 15]

            await wait_for(all_committed, timeout=30, message="commits via the new coordinator")
        finally:
            poller.cancel()
            await asyncio.gather(poller, return_exceptions=True)
    assert set(seen) == set(range(30))

    await produce(bootstrap, topic, range(30, 34))
    resumed: list[int] = []
    async with consumer(bootstrap, group_id, topic) as member:
        poller = asyncio.create_task(consume(member, resumed))
        try:
            await wait_for(lambda: len(resumed) >= 4, timeout=30, message="the last 4")
        finally:
            poller.cancel()
            await asyncio.gather(poller, return_exceptions=True)
    assert sorted(resumed) == [30, 31, 32, 33], "resumed from the committed offsets"
