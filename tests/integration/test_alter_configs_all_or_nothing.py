"""IncrementalAlterConfigs with confluent-kafka: a resource's operations are checked as a
whole before any is stored, a refused value answers INVALID_CONFIG on a connection that
stays open, and a value in the store that no partition can run with is skipped by every
broker's refresh instead of stopping it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from confluent_kafka import KafkaError as CkError
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from helpers.broker_configs import FAST

from mirrorsim.broker.metadata.store import CLUSTER_DEFAULT
from mirrorsim.broker.server import Broker

TIMEOUT_S = 30.0


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def _create(admin: AdminClient, topic: str, partitions: int = 2, replication: int = 1) -> None:
    for future in admin.create_topics([NewTopic(topic, partitions, replication)]).values():
        future.result(timeout=TIMEOUT_S)


def _alter(admin: AdminClient, topic: str, *ops: tuple[str, AlterConfigOpType, str]) -> None:
    resource = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op) for name, op, value in ops
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=TIMEOUT_S)


def _describe(admin: AdminClient, topic: str) -> dict[str, str]:
    (future,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    return {name: entry.value for name, entry in future.result(timeout=TIMEOUT_S).items()}


def _produce_to_every_partition(bootstrap: str, topic: str, partitions: int) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    acked: list[Any] = []
    for partition in range(partitions):
        producer.produce(topic, b"v", partition=partition, on_delivery=lambda e, m: acked.append(e))
    assert producer.flush(TIMEOUT_S) == 0
    assert acked == [None] * partitions, acked
    return len(acked)


def _error_code(exc: KafkaException) -> int:
    error = exc.args[0]
    assert isinstance(error, CkError)
    return int(error.code())


@pytest.fixture
async def two_brokers(start_cluster: Any) -> Any:
    return await start_cluster(brokers=2, configs=FAST)


async def test_subtracting_the_last_cleanup_policy_is_accepted_as_kafka_does(
    two_brokers: Any,
) -> None:
    """Kafka accepts an empty cleanup.policy (neither delete nor compact, KIP-1161); the
    value reaches every broker and both keep serving their partitions."""
    admin = _admin(two_brokers.bootstrap)
    await asyncio.to_thread(_create, admin, "emptied", 2, 2)
    await asyncio.to_thread(
        _alter, admin, "emptied", ("cleanup.policy", AlterConfigOpType.SUBTRACT, "delete")
    )
    assert (await asyncio.to_thread(_describe, admin, "emptied"))["cleanup.policy"] == ""
    for broker in two_brokers.brokers:
        await broker.refresh_metadata()
        logs = [p.log for p in broker.replica_manager.partitions() if p.topic == "emptied"]
        assert logs and all(not log.config.delete and not log.config.compact for log in logs)
    produced = await asyncio.to_thread(
        _produce_to_every_partition, two_brokers.bootstrap, "emptied", 2
    )
    assert produced == 2


@pytest.mark.parametrize(
    "bad",
    [
        ("retention.ms", AlterConfigOpType.SET, "a week"),
        ("segment.index.bytes", AlterConfigOpType.SET, "5"),
        ("cleanup.policy", AlterConfigOpType.APPEND, "shred"),
        ("max.message.bytes", AlterConfigOpType.APPEND, "7"),
    ],
    ids=["not-a-number", "too-small-for-an-index", "not-a-policy", "append-to-non-list"],
)
async def test_one_bad_operation_stores_none_of_the_resource(
    two_brokers: Any, bad: tuple[str, AlterConfigOpType, str]
) -> None:
    admin = _admin(two_brokers.bootstrap)
    await asyncio.to_thread(_create, admin, "guarded")
    before = await asyncio.to_thread(_describe, admin, "guarded")
    with pytest.raises(KafkaException) as refused:
        await asyncio.to_thread(
            _alter, admin, "guarded", ("flush.ms", AlterConfigOpType.SET, "1234"), bad
        )
    assert _error_code(refused.value) == CkError.INVALID_CONFIG
    assert await asyncio.to_thread(_describe, admin, "guarded") == before
    assert await asyncio.to_thread(_produce_to_every_partition, two_brokers.bootstrap, "guarded", 2)


async def test_a_stored_value_no_partition_can_run_with_does_not_stop_refreshes(
    two_brokers: Any, wait_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A value written to the store behind the handlers' back (an older version, a hand
    edit): every broker skips it with a warning and goes on applying later changes."""
    admin = _admin(two_brokers.bootstrap)
    await asyncio.to_thread(_create, admin, "stored", 2, 2)
    first: Broker = two_brokers.brokers[0]
    await asyncio.to_thread(
        first.store.set_topic_configs,
        "stored",
        {"segment.index.bytes": "5", "retention.ms": "4321"},
    )
    await asyncio.to_thread(_create, admin, "later", 2, 2)
    for broker in two_brokers.brokers:
        await wait_for(
            lambda b=broker: {p.topic for p in b.replica_manager.partitions()} >= {"later"},
            message=f"broker {broker.broker_id} applies changes after the bad value",
        )
        stored = [p for p in broker.replica_manager.partitions() if p.topic == "stored"]
        assert all(p.log.config.retention_ms == 4321 for p in stored)
        assert all(p.log.config.segment_index_bytes == 10485760 for p in stored)
    assert "ignoring stored config segment.index.bytes" in caplog.text
    assert await asyncio.to_thread(_produce_to_every_partition, two_brokers.bootstrap, "stored", 2)


async def test_a_stored_broker_value_that_does_not_parse_falls_back(
    two_brokers: Any, wait_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A cluster-wide dynamic value no broker can parse: every broker uses the next layer
    (here Kafka's default), says so once, and keeps creating and serving topics."""
    first: Broker = two_brokers.brokers[0]
    await asyncio.to_thread(
        first.store.set_broker_configs,
        CLUSTER_DEFAULT,
        {"num.partitions": "many", "log.retention.ms": "forever"},
    )
    for broker in two_brokers.brokers:
        await wait_for(
            lambda b=broker: b.snapshot.dynamic_default_configs.get("num.partitions") == "many",
            message=f"broker {broker.broker_id} reads the stored value",
        )
        assert broker.config("num.partitions") == 1
        assert broker.config("log.retention.ms") == 604_800_000
    assert "ignoring DYNAMIC_DEFAULT_BROKER_CONFIG value of num.partitions" in caplog.text
    admin = _admin(two_brokers.bootstrap)
    await asyncio.to_thread(_create, admin, "after-bad-default", 2, 2)
    produced = await asyncio.to_thread(
        _produce_to_every_partition, two_brokers.bootstrap, "after-bad-default", 2
    )
    assert produced == 2
