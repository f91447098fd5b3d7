"""Metadata answers from a broker's encoded topic entries are never stale: a topic that
grew, a leader that moved and a broker that left show in the next answer, through the
project's client (a flexible version), aiokafka (a legacy one) and raw requests at
versions on either side of the compact-array switch."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from helpers.replication import FAST, broker, create_topic, stop

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode

CLIENT = {
    "retry.backoff.ms": "10",
    "retry.backoff.max.ms": "100",
    "default.api.timeout.ms": "10000",
}
VERSIONS = (1, 8, 12, 13)
"""Legacy arrays (v1), the last legacy version with cluster operations after the topics
(v8), compact arrays (v12) and the top-level error code after the topics (v13)."""


@pytest.fixture
async def cluster(start_cluster: Any) -> ClusterRunner:
    return await start_cluster()


@pytest.fixture
async def admin(cluster: ClusterRunner) -> AsyncIterator[Admin]:
    async with Admin(bootstrap=cluster.bootstrap, config=CLIENT) as started:
        yield started


@pytest.fixture
async def aiokafka_admin(cluster: ClusterRunner) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    await client.start()
    yield client
    await client.close()


async def test_added_partitions_show_in_the_next_answer(
    cluster: ClusterRunner, admin: Admin, aiokafka_admin: AIOKafkaAdminClient
) -> None:
    (await admin.create_topics([NewTopic("grow", 2, 1)])).all()

    async def partition_counts() -> tuple[int, int, int]:
        ours = (await admin.describe_topics(["grow"]))["grow"].partitions
        everything = await admin.cluster.refresh_metadata()
        (theirs,) = await aiokafka_admin.describe_topics(["grow"])
        return len(ours), len(everything.topics["grow"].partitions), len(theirs["partitions"])

    assert await partition_counts() == (2, 2, 2)
    assert await partition_counts() == (2, 2, 2)
    assert len(cluster.brokers[0].metadata_topic_cache) >= 2, "entries of two versions"

    assert await admin.create_partitions({"grow": 5}) == {"grow": None}
    assert await partition_counts() == (5, 5, 5)


async def metadata(target: Any, version: int) -> Any:
    """The ``replicated`` topic as ``target`` answers a Metadata request of ``version``."""
    connection = BrokerConnection(target.host, target.port, client_id="metadata-cache-test")
    await connection.connect()
    try:
        response = await connection.send(
            build_request(
                3,
                version,
                {
                    "topics": [{"name": "replicated", "topic_id": None}],
                    "allow_auto_topic_creation": False,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": True,
                },
            )
        )
    finally:
        await connection.close()
    (topic,) = response.topics
    assert topic.error_code == ErrorCode.NONE
    (partition,) = topic.partitions
    return partition


async def test_a_moved_leader_and_a_departed_broker_show_in_the_next_answer(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=2, configs=FAST)
    await create_topic(cluster, replicas=(1, 2))
    survivor = broker(cluster, 2)

    def seen() -> Any:
        """Partition 0 in the survivor's snapshot (None before it saw the topic)."""
        record = survivor.snapshot.topics.get("replicated")
        return None if record is None else record.partitions[0]

    await wait_for(lambda: seen() is not None and seen().isr == (1, 2))
    for version in VERSIONS:
        for _ in range(2):
            before = await metadata(survivor, version)
            assert (before.leader_id, tuple(before.isr_nodes)) == (1, (1, 2))
            if version >= 5:
                assert tuple(before.offline_replicas) == ()

    await stop(cluster, 1)
    await wait_for(
        lambda: seen().leader == 2 and [b.broker_id for b in survivor.live_brokers()] == [2]
    )
    for version in VERSIONS:
        after = await metadata(survivor, version)
        assert (after.leader_id, tuple(after.isr_nodes)) == (2, (2,))
        if version >= 5:
            assert tuple(after.offline_replicas) == (1,)
