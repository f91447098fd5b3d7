"""Real consumer groups against a broker: aiokafka and kafka-python members rebalancing a
4-partition topic, committing, and resuming from the committed offsets after a restart."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from kafka import KafkaConsumer
from kafka.errors import CommitFailedError, RebalanceInProgressError

from mirrorsim.client import Admin
from mirrorsim.protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(120)

TOPIC = "orders"
PARTITIONS = 4
FAST_GROUPS = {"group.initial.rebalance.delay.ms": 0}


@pytest.fixture
async def cluster(start_cluster: Any) -> Any:
    cluster = await start_cluster(configs=FAST_GROUPS)
    admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
        assert [e[1] for e in response.topic_errors] == [ErrorCode.NONE]
    finally:
        await admin.close()
    return cluster


async def produce(bootstrap: str, start: int, count: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for n in range(start, start + count):
            await producer.send_and_wait(TOPIC, str(n).encode(), partition=n % PARTITIONS)
    finally:
        await producer.stop()


async def committed_everywhere(bootstrap: str, group: str, offset: int) -> bool:
    """Whether ``group`` committed ``offset`` on every partition. A member that leaves
    while a rebalance moves a partition to the other may have committed only its own
    share; the members keep polling (and committing) until this holds."""
    async with Admin(bootstrap=bootstrap) as admin:
        committed = await admin.list_consumer_group_offsets(group)
    return {tp.partition: c.offset for tp, c in committed.items() if tp.topic == TOPIC} == (
        dict.fromkeys(range(PARTITIONS), offset)
    )


@contextlib.asynccontextmanager
async def aiokafka_member(bootstrap: str, group: str) -> AsyncIterator[AIOKafkaConsumer]:
    consumer = AIOKafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=100,
        metadata_max_age_ms=1000,
    )
    await consumer.start()
    try:
        yield consumer
    finally:
        await consumer.stop()


async def drain(consumer: AIOKafkaConsumer, seen: set[int]) -> None:
    """Poll and commit until cancelled; `seen` collects every value received."""
    while True:
        batches = await consumer.getmany(timeout_ms=100)
        for messages in batches.values():
            seen.update(int(m.value) for m in messages)
        if batches:
            await consumer.commit()


async def test_aiokafka_group_rebalances_commits_and_resumes_after_restart(
    cluster: Any, wait_for: Any
) -> None:
    await produce(cluster.bootstrap, 0, 40)
    seen: set[int] = set()
    async with (
        aiokafka_member(cluster.bootstrap, "grp") as first,
        aiokafka_member(cluster.bootstrap, "grp") as second,
    ):
        pollers = [asyncio.create_task(drain(c, seen)) for c in (first, second)]
        try:
            await wait_for(
                lambda: len(first.assignment()) == len(second.assignment()) == 2,
                timeout=30,
                message="both members own two partitions",
            )
            assert {tp.partition for tp in first.assignment() | second.assignment()} == set(
                range(PARTITIONS)
            )
            await wait_for(lambda: len(seen) == 40, timeout=30, message="all 40 records")
        finally:
            for poller in pollers:
                poller.cancel()
            await asyncio.gather(*pollers, return_exceptions=True)

    await cluster.stop()
    await cluster.start()
    await produce(cluster.bootstrap, 40, 8)
    resumed: set[int] = set()
    async with aiokafka_member(cluster.bootstrap, "grp") as again:
        poller = asyncio.create_task(drain(again, resumed))
        try:
            await wait_for(lambda: len(resumed) >= 8, timeout=30, message="the 8 new records")
        finally:
            poller.cancel()
            await asyncio.gather(poller, return_exceptions=True)
    assert resumed == set(range(40, 48)), "a restart resumes from the committed offsets"


class KafkaPythonMember:
    """One blocking kafka-python consumer polling and committing in its own thread."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.seen: set[int] = set()
        self.partitions: set[int] = set()
        self.stopping = threading.Event()
        self.abandon = threading.Event()

    def run(self) -> None:
        """Runs in a worker thread: kafka-python blocks, even while bootstrapping.

        The topic's metadata is loaded before subscribing: a kafka-python 3.0 leader that
        joins before its first metadata response assigns nothing, and the member that
        then rejoins can take its new assignment without ever fetching or committing.
        """
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=10_000,
            heartbeat_interval_ms=100,
        )
        if consumer.partitions_for_topic(TOPIC) != set(range(PARTITIONS)):
            consumer.close()
            raise AssertionError(f"{TOPIC} has no metadata for {PARTITIONS} partitions")
        consumer.subscribe([TOPIC])
        uncommitted = False
        try:
            while not self.stopping.is_set() or (uncommitted and not self.abandon.is_set()):
                batches = consumer.poll(timeout_ms=50)
                for messages in batches.values():
                    self.seen.update(int(m.value) for m in messages)
                uncommitted = uncommitted or bool(batches)
                if uncommitted:
                    uncommitted = not self._commit(consumer)
                self.partitions = {tp.partition for tp in consumer.assignment()}
        finally:
            consumer.close()

    @staticmethod
    def _commit(consumer: KafkaConsumer) -> bool:
        """False when the coordinator refused the commit because the group is rebalancing
        (the other member joining or leaving); the next poll rejoins and it is retried."""
        try:
            consumer.commit()
        except (CommitFailedError, RebalanceInProgressError):
            return False
        return True


COMMIT_ON_STOP_S = 20.0
"""How long a stopping member may keep retrying its last commit (a rebalance refuses it
until the group settles); past it the member gives up, so a failed test ends."""


@contextlib.asynccontextmanager
async def kafka_python_members(
    bootstrap: str, group: str, count: int
) -> AsyncIterator[list[KafkaPythonMember]]:
    members = [KafkaPythonMember(bootstrap, group) for _ in range(count)]
    threads = [asyncio.create_task(asyncio.to_thread(m.run)) for m in members]
    try:
        yield members
    finally:
        for member in members:
            member.stopping.set()
        _, stuck = await asyncio.wait(threads, timeout=COMMIT_ON_STOP_S)
        if stuck:
            for member in members:
                member.abandon.set()
        await asyncio.gather(*threads)


async def test_kafka_python_group_shares_partitions_and_resumes(
    cluster: Any, wait_for: Any
) -> None:
    await produce(cluster.bootstrap, 0, 40)
    async with kafka_python_members(cluster.bootstrap, "kp", 2) as (first, second):
        await wait_for(
            lambda: len(first.partitions) == len(second.partitions) == 2,
            timeout=30,
            message="both members own two partitions",
        )
        assert first.partitions | second.partitions == set(range(PARTITIONS))
        await wait_for(
            lambda: len(first.seen | second.seen) == 40, timeout=30, message="all 40 records"
        )
        await wait_for(
            lambda: committed_everywhere(cluster.bootstrap, "kp", 40 // PARTITIONS),
            timeout=30,
            message="every partition committed at its end",
        )
    await cluster.stop()
    await cluster.start()
    await produce(cluster.bootstrap, 40, 8)
    async with kafka_python_members(cluster.bootstrap, "kp", 1) as (again,):
        await wait_for(lambda: len(again.seen) >= 8, timeout=30, message="the 8 new records")
    assert again.seen == set(range(40, 48)), "a restart resumes from the committed offsets"
