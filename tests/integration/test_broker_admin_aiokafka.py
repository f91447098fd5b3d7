"""Admin operations through aiokafka's AIOKafkaAdminClient against a real broker."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from mirrorsim.protocol.errors import ErrorCode


@pytest.fixture
async def cluster(start_cluster: Any) -> Any:
    return await start_cluster(configs={"num.partitions": 2})


@pytest.fixture
async def admin(cluster: Any) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    await client.start()
    yield client
    await client.close()


async def test_create_describe_and_delete_topic(admin: AIOKafkaAdminClient, cluster: Any) -> None:
    response = await admin.create_topics([NewTopic("orders", 3, 1)])
    assert [e[1] for e in response.topic_errors] == [ErrorCode.NONE]
    assert "orders" in await admin.list_topics()
    (described,) = await admin.describe_topics(["orders"])
    assert described["error_code"] == 0
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    assert all(p["leader"] == 1 and p["replicas"] == [1] for p in described["partitions"])

    again = await admin.create_topics([NewTopic("orders", 1, 1)])
    assert [e[1] for e in again.topic_errors] == [ErrorCode.TOPIC_ALREADY_EXISTS]

    await admin.delete_topics(["orders"])
    assert "orders" not in await admin.list_topics()


async def test_create_partitions_grows_topic(admin: AIOKafkaAdminClient) -> None:
    await admin.create_topics([NewTopic("grow", 1, 1)])
    await admin.create_partitions({"grow": NewPartitions(4)})
    (described,) = await admin.describe_topics(["grow"])
    assert len(described["partitions"]) == 4


async def test_describe_configs_reports_overrides_and_defaults(admin: AIOKafkaAdminClient) -> None:
    await admin.create_topics(
        [NewTopic("cfg", 1, 1, topic_configs={"retention.ms": "1000", "cleanup.policy": "compact"})]
    )
    (response,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "cfg")])
    (result,) = response.resources
    error_code, _, _, name, entries = result[:5]
    assert (error_code, name) == (0, "cfg")
    values = {entry[0]: entry for entry in entries}
    assert values["retention.ms"][1] == "1000"
    assert values["cleanup.policy"][1] == "compact"
    assert values["segment.bytes"][1] == "1073741824"
    assert "mirror.name" not in values


async def test_metadata_auto_creates_with_broker_defaults(cluster: Any) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap)
    await producer.start()
    try:
        partitions = await producer.partitions_for("auto-created")
    finally:
        await producer.stop()
    assert partitions == {0, 1}
    assert cluster.brokers[0].snapshot.topics["auto-created"].partitions[0].leader == 1


async def test_describe_cluster_reports_brokers_and_id(
    admin: AIOKafkaAdminClient, cluster: Any
) -> None:
    described = await admin.describe_cluster()
    assert described["cluster_id"] == cluster.cluster_id
    assert [b["node_id"] for b in described["brokers"]] == [1]


async def test_find_coordinator_names_the_broker(admin: AIOKafkaAdminClient) -> None:
    assert await admin.find_coordinator("my-group") == 1
