"""Several brokers sharing one metadata store: one view of brokers, topics and configs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from mirrorsim.broker.server import Broker
from mirrorsim.protocol.errors import ErrorCode


@pytest.fixture
async def cluster(start_cluster: Any) -> Any:
    return await start_cluster(brokers=3, configs={"default.replication.factor": 3})


@pytest.fixture
async def admin(cluster: Any) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    await client.start()
    yield client
    await client.close()


async def test_every_broker_is_listed_with_its_own_port(
    admin: AIOKafkaAdminClient, cluster: Any
) -> None:
    described = await admin.describe_cluster()
    assert {(b["node_id"], b["port"]) for b in described["brokers"]} == {
        (b.broker_id, b.port) for b in cluster.brokers
    }
    assert len({b.cluster_id for b in cluster.brokers}) == 1


async def test_topic_created_on_one_broker_reaches_the_others(
    admin: AIOKafkaAdminClient, cluster: Any, wait_for: Any
) -> None:
    response = await admin.create_topics([NewTopic("spread", 6, 3)])
    assert [e[1] for e in response.topic_errors] == [ErrorCode.NONE]
    for broker in cluster.brokers:
        record = await wait_for(
            lambda b=broker: b.snapshot.topics.get("spread"), message="topic on every broker"
        )
        assert all(sorted(p.replicas) == [1, 2, 3] for p in record.partitions)
        assert sorted(p.leader for p in record.partitions) == [1, 1, 2, 2, 3, 3]


async def test_replication_factor_above_live_brokers_is_refused(admin: AIOKafkaAdminClient) -> None:
    response = await admin.create_topics([NewTopic("too-many", 1, 4)])
    assert [e[1] for e in response.topic_errors] == [ErrorCode.INVALID_REPLICATION_FACTOR]


async def test_restarted_broker_keeps_cluster_id_and_topics(start_cluster: Any) -> None:
    cluster = await start_cluster()
    broker = cluster.brokers[0]
    await broker.controller.create_topic("durable", num_partitions=2, replication_factor=1)
    cluster_id, port = broker.cluster_id, broker.port
    await broker.stop()
    await broker.start()
    assert (broker.cluster_id, broker.port) == (cluster_id, port)
    assert len(broker.snapshot.topics["durable"].partitions) == 2


async def test_a_broker_that_cannot_bind_releases_what_it_opened(
    start_cluster: Any, tmp_path: Path
) -> None:
    cluster = await start_cluster()
    taken = cluster.brokers[0].port
    loser = Broker(
        broker_id=2,
        host="127.0.0.1",
        port=taken,
        data_dir=tmp_path / "loser",
        metadata_url=cluster.brokers[0].metadata_url,
    )
    with pytest.raises(OSError):
        await loser.start()
    assert [b.broker_id for b in cluster.brokers[0].store.brokers()] == [1]
