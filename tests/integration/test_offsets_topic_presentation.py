"""``__consumer_offsets`` as clients see it: listed as Kafka's internal topic with
``offsets.topic.num.partitions`` partitions led by the brokers that coordinate the groups
hashed onto them (where FindCoordinator sends the group), left out where clients leave
internal topics out."""

from __future__ import annotations

import asyncio
from typing import Any

from confluent_kafka.admin import AdminClient

from mirrorsim.broker.group.ownership import coordinator_id, coordinator_partition
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.errors import ErrorCode

PARTITIONS = 6
TIMEOUT_S = 30.0


def _listed(bootstrap: str) -> Any:
    return AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=TIMEOUT_S)


async def test_the_offsets_topic_is_listed_as_kafkas_internal_topic(start_cluster: Any) -> None:
    cluster = await start_cluster(brokers=2, configs={"offsets.topic.num.partitions": PARTITIONS})
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        assert await admin.list_topics() == []
        assert await admin.list_topics(include_internal=True) == ["__consumer_offsets"]
        coordinator = await admin.cluster.find_coordinator("billing")
    metadata = await asyncio.to_thread(_listed, cluster.bootstrap)
    offsets = metadata.topics["__consumer_offsets"]
    assert sorted(offsets.partitions) == list(range(PARTITIONS))
    assert {p.leader for p in offsets.partitions.values()} == {1, 2}
    billing = offsets.partitions[coordinator_partition("billing", PARTITIONS)]
    assert billing.leader == coordinator.node_id == coordinator_id("billing", PARTITIONS, [1, 2])


async def test_the_offsets_topic_already_exists_for_create_topics(start_cluster: Any) -> None:
    cluster = await start_cluster()
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        outcome = await admin.create_topics([NewTopic("__consumer_offsets", 1, 1)])
        assert outcome["__consumer_offsets"] is not None
        assert outcome["__consumer_offsets"].code is ErrorCode.TOPIC_ALREADY_EXISTS
        assert await admin.list_topics(include_internal=True) == ["__consumer_offsets"]
