"""CreateTopics v8 (KIP-1279): MirrorInfo.TopicId creates the topic under the source
cluster's topic id, refused when another topic has that id or a replica is not live."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.broker.server import Broker
from mirrorsim.client.admin import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.protocol.errors import ErrorCode

FAST = {
    "broker.heartbeat.interval.ms": 100,
    "broker.session.timeout.ms": 1500,
    "metadata.refresh.interval.ms": 100,
}
CREATE_TOPICS = 19


@pytest.fixture
async def cluster(start_cluster: Any) -> ClusterRunner:
    runner: ClusterRunner = await start_cluster(brokers=3, configs=FAST)
    return runner


@pytest.fixture
async def client(cluster: ClusterRunner) -> AsyncIterator[ClusterClient]:
    connected = ClusterClient(cluster.bootstrap, client_id="create-topics-v8-test")
    await connected.start()
    yield connected
    await connected.close()


def creatable(
    name: str,
    topic_id: uuid.UUID | None,
    *,
    assignment: list[int] | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": -1 if assignment else 2,
        "replication_factor": -1 if assignment else 3,
        "assignments": [{"partition_index": 0, "broker_ids": assignment}] if assignment else [],
        "configs": [{"name": "retention.ms", "value": "60000"}],
        "mirror_info": None if topic_id is None else {"topic_id": topic_id},
    }


async def create_v8(
    client: ClusterClient, *topics: dict[str, Any], validate_only: bool = False
) -> dict[str, Any]:
    response = await client.send_to_controller(
        RequestSpec(
            CREATE_TOPICS,
            {
                "topics": list(topics),
                "timeout": datetime.timedelta(seconds=10),
                "validate_only": validate_only,
            },
            versions=(8,),
        )
    )
    return {t.name: t for t in response.topics}


async def test_mirror_info_sets_the_topic_id(
    cluster: ClusterRunner, client: ClusterClient, wait_for: Any
) -> None:
    source_id = uuid.uuid4()
    dry_run = await create_v8(client, creatable("mirrored", source_id), validate_only=True)
    assert dry_run["mirrored"].error_code == ErrorCode.NONE
    assert dry_run["mirrored"].topic_id == source_id
    assert "mirrored" not in cluster.brokers[0].snapshot.topics

    created = await create_v8(client, creatable("mirrored", source_id), creatable("plain", None))
    assert created["mirrored"].error_code == ErrorCode.NONE
    assert created["mirrored"].topic_id == source_id
    assert created["mirrored"].num_partitions == 2
    assert created["plain"].error_code == ErrorCode.NONE
    assert created["plain"].topic_id not in (source_id, uuid.UUID(int=0))

    record = cluster.brokers[0].snapshot.topics["mirrored"]
    assert record.topic_id == source_id
    assert record.configs == {"retention.ms": "60000"}
    await wait_for(
        lambda: all(b.replica_manager.topic_id("mirrored") == source_id for b in cluster.brokers),
        message="every replica under the source topic id",
    )


async def test_a_topic_id_in_use_is_refused(cluster: ClusterRunner, client: ClusterClient) -> None:
    source_id = uuid.uuid4()
    assert (await create_v8(client, creatable("first", source_id)))["first"].error_code == 0
    for validate_only in (True, False):
        again = await create_v8(client, creatable("second", source_id), validate_only=validate_only)
        assert again["second"].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        assert str(source_id) in again["second"].error_message
    assert "second" not in cluster.brokers[0].snapshot.topics
    zero = await create_v8(client, creatable("zero", uuid.UUID(int=0)))
    assert zero["zero"].error_code == ErrorCode.INVALID_REQUEST


async def test_every_replica_of_the_assignment_must_be_live(
    cluster: ClusterRunner, client: ClusterClient, wait_for: Any
) -> None:
    stopped = next(b for b in cluster.brokers if b.broker_id == 3)
    cluster.brokers.remove(stopped)
    await stopped.stop()
    survivor = cluster.brokers[0]
    await wait_for(lambda: [b.broker_id for b in survivor.live_brokers()] == [1, 2])

    refused = await create_v8(client, creatable("on-dead", uuid.uuid4(), assignment=[1, 3]))
    assert refused["on-dead"].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    accepted = await create_v8(client, creatable("on-live", uuid.uuid4(), assignment=[2, 1]))
    assert accepted["on-live"].error_code == ErrorCode.NONE


async def test_ordinary_topics_through_the_admin_client(cluster: ClusterRunner) -> None:
    async with Admin(cluster.bootstrap) as admin:
        results = await admin.create_topics([NewTopic("ordinary", 1, 1)])
    assert results == {"ordinary": None}
    assert "ordinary" in cluster.brokers[0].snapshot.topics


async def test_a_broker_that_registered_after_the_last_refresh_can_be_assigned(
    start_cluster: Any,
) -> None:
    """With a long metadata refresh interval, broker 1 has not yet seen broker 2 when the
    topic is created through it; it refreshes instead of refusing a valid assignment."""
    slow = {
        **FAST,
        "metadata.refresh.interval.ms": 600_000,
        "broker.session.timeout.ms": 60_000,
        "controlled.shutdown.enable": False,
    }
    first: ClusterRunner = await start_cluster(brokers=1, configs=slow)
    spec = first.spec
    late = Broker(
        broker_id=2,
        host=spec.host,
        port=0,
        data_dir=spec.data_dir / "broker-2",
        metadata_url=spec.effective_metadata_url,
        configs=spec.configs,
    )
    await late.start()
    try:
        assert [b.broker_id for b in first.brokers[0].live_brokers()] == [1]
        async with Admin(bootstrap=first.bootstrap) as admin:
            created = await admin.create_topics(
                [
                    NewTopic("assigned-to-the-late-broker", replica_assignments={0: [2, 1]}),
                    NewTopic("spread-over-both", num_partitions=2, replication_factor=2),
                ]
            )
        created.all()
        assert [b.broker_id for b in first.brokers[0].live_brokers()] == [1, 2]
    finally:
        await late.stop()
