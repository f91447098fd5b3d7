"""Transactions end to end with real clients: aiokafka and confluent-kafka transactional
producers, read_committed / read_uncommitted consumers, offsets in transactions, zombie
fencing, timeouts, and the operator APIs."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError as AioKafkaError
from aiokafka.errors import ProducerFenced
from confluent_kafka import Consumer, KafkaException, Producer

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import TransactionListing
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode

TOPIC = "orders"


@pytest.fixture
async def cluster(start_cluster: Any) -> Any:
    return await start_cluster(
        configs={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 100}
    )


@pytest.fixture
async def admin(cluster: Any) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    await client.start()
    yield client
    await client.close()


@pytest.fixture
async def topic(admin: AIOKafkaAdminClient) -> str:
    response = await admin.create_topics([NewTopic(TOPIC, 1, 1)])
    assert [e[1] for e in response.topic_errors] == [ErrorCode.NONE]
    return TOPIC


def broker_partition(cluster: Any, topic: str) -> Any:
    return cluster.brokers[0].replica_manager.partition(topic, 0)


async def settled(cluster: Any, wait_for: Any, topic: str) -> int:
    """Wait until no transaction is open on the partition; returns its high watermark."""
    partition = broker_partition(cluster, topic)
    await wait_for(
        lambda: partition.last_stable_offset == partition.high_watermark,
        message="the last stable offset to reach the high watermark",
    )
    return int(partition.high_watermark)


async def read_values(bootstrap: str, topic: str, end: int, isolation: str) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level=isolation,
    )
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        values: list[bytes] = []
        while await consumer.position(tp) < end:
            batch = await asyncio.wait_for(consumer.getmany(timeout_ms=200), 10)
            values.extend(m.value for messages in batch.values() for m in messages)
        return values
    finally:
        await consumer.stop()


async def send_raw(bootstrap: str, api_key: int, version: int, fields: dict[str, Any]) -> Any:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    connection = BrokerConnection(host, int(port), client_id="txn-test")
    await connection.connect()
    try:
        return await connection.send(build_request(api_key, version, fields))
    finally:
        await connection.close()


async def test_aiokafka_commit_and_abort(cluster: Any, topic: str, wait_for: Any) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="tx-a")
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed-1")
            await producer.send_and_wait(topic, b"committed-2")
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"aborted-1")
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed-3")
    finally:
        await producer.stop()
    end = await settled(cluster, wait_for, topic)
    assert end == 7  # 4 data records and 3 markers
    committed = await read_values(cluster.bootstrap, topic, end, "read_committed")
    assert committed == [b"committed-1", b"committed-2", b"committed-3"]
    everything = await read_values(cluster.bootstrap, topic, end, "read_uncommitted")
    assert everything == [b"committed-1", b"committed-2", b"aborted-1", b"committed-3"]


async def test_open_transaction_holds_the_last_stable_offset(
    cluster: Any, topic: str, wait_for: Any
) -> None:
    plain = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap)
    txn = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="tx-lso")
    await plain.start()
    await txn.start()
    try:
        await plain.send_and_wait(topic, b"before")
        await txn.begin_transaction()
        await txn.send_and_wait(topic, b"pending")
        await plain.send_and_wait(topic, b"after")
        partition = broker_partition(cluster, topic)
        assert (partition.last_stable_offset, partition.high_watermark) == (1, 3)
        lso = await send_raw(
            cluster.bootstrap,
            2,
            5,
            {
                "replica_id": -1,
                "isolation_level": 1,
                "topics": [
                    {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}
                ],
            },
        )
        assert lso.topics[0].partitions[0].offset == 1
        await txn.commit_transaction()
    finally:
        await txn.stop()
        await plain.stop()
    end = await settled(cluster, wait_for, topic)
    assert await read_values(cluster.bootstrap, topic, end, "read_committed") == [
        b"before",
        b"pending",
        b"after",
    ]


async def test_aiokafka_offsets_commit_with_the_transaction(
    cluster: Any, topic: str, wait_for: Any, admin: AIOKafkaAdminClient
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="tx-off")
    await producer.start()
    tp = TopicPartition(topic, 0)
    try:
        async with producer.transaction():
            await producer.send_and_wait(topic, b"x")
            await producer.send_offsets_to_transaction({tp: 5}, "readers")
        await wait_for(
            lambda: cluster.brokers[0].groups.fetch_offsets("readers", [(topic, 0)])[(topic, 0)],
            message="the transaction's offsets to be committed",
        )
        await producer.begin_transaction()
        await producer.send_offsets_to_transaction({tp: 9}, "readers")
        await producer.abort_transaction()
    finally:
        await producer.stop()
    await settled(cluster, wait_for, topic)
    offsets = await admin.list_consumer_group_offsets("readers")
    assert offsets[tp].offset == 5


async def test_second_producer_fences_the_first(cluster: Any, topic: str, wait_for: Any) -> None:
    zombie = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="tx-z")
    await zombie.start()
    successor = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="tx-z")
    try:
        await zombie.begin_transaction()
        await zombie.send_and_wait(topic, b"zombie")
        await successor.start()  # bumps the epoch and aborts the zombie's transaction
        async with successor.transaction():
            await successor.send_and_wait(topic, b"successor")
        with pytest.raises((ProducerFenced, AioKafkaError)):
            await zombie.commit_transaction()
    finally:
        await successor.stop()
        await zombie.stop()
    end = await settled(cluster, wait_for, topic)
    assert await read_values(cluster.bootstrap, topic, end, "read_committed") == [b"successor"]


async def test_expired_transaction_is_aborted_and_fenced(
    cluster: Any, topic: str, wait_for: Any
) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=cluster.bootstrap, transactional_id="tx-slow", transaction_timeout_ms=300
    )
    await producer.start()
    try:
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"too-late")
        coordinator = cluster.brokers[0].transactions.coordinator
        await wait_for(
            lambda: _state(coordinator, "tx-slow"), message="the timeout to abort the transaction"
        )
        with pytest.raises((ProducerFenced, AioKafkaError)):
            await producer.commit_transaction()
    finally:
        await producer.stop()
    end = await settled(cluster, wait_for, topic)
    assert await read_values(cluster.bootstrap, topic, end, "read_committed") == []


async def _state(coordinator: Any, transactional_id: str) -> bool:
    meta = await coordinator.describe(transactional_id)
    return meta.state.value == "CompleteAbort"


def _confluent_run(bootstrap: str, topic: str) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "tx-c", "linger.ms": 0}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce(topic, b"c-committed")
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "c-readers", "enable.auto.commit": False}
    )
    try:
        from confluent_kafka import TopicPartition as CTopicPartition

        producer.send_offsets_to_transaction(
            [CTopicPartition(topic, 0, 1)], consumer.consumer_group_metadata(), 10
        )
        producer.commit_transaction(10)
        producer.begin_transaction()
        producer.produce(topic, b"c-aborted")
        producer.flush(10)
        producer.abort_transaction(10)
    finally:
        consumer.close()


def _confluent_read(bootstrap: str, topic: str, isolation: str, end: int) -> list[bytes]:
    from confluent_kafka import TopicPartition as CTopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([CTopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        for _ in range(100):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
            position = consumer.position([CTopicPartition(topic, 0)])[0].offset
            if position >= end:
                return values
        raise AssertionError(f"consumer stuck before offset {end}: {values}")
    finally:
        consumer.close()


async def test_confluent_kafka_commit_abort_and_offsets(
    cluster: Any, topic: str, wait_for: Any, admin: AIOKafkaAdminClient
) -> None:
    try:
        await asyncio.to_thread(_confluent_run, cluster.bootstrap, topic)
    except KafkaException as exc:  # pragma: no cover - shows librdkafka's reason
        pytest.fail(str(exc))
    end = await settled(cluster, wait_for, topic)
    committed = await asyncio.to_thread(
        _confluent_read, cluster.bootstrap, topic, "read_committed", end
    )
    assert committed == [b"c-committed"]
    everything = await asyncio.to_thread(
        _confluent_read, cluster.bootstrap, topic, "read_uncommitted", end
    )
    assert everything == [b"c-committed", b"c-aborted"]
    offsets = await admin.list_consumer_group_offsets("c-readers")
    assert offsets[TopicPartition(topic, 0)].offset == 1


async def test_operator_apis(cluster: Any, topic: str, wait_for: Any) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="tx-ops")
    await producer.start()
    try:
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"open")
        listed = await send_raw(cluster.bootstrap, 66, 1, {"state_filters": ["Ongoing"]})
        assert [(s.transactional_id, s.transaction_state) for s in listed.transaction_states] == [
            ("tx-ops", "Ongoing")
        ]
        described = await send_raw(
            cluster.bootstrap, 65, 0, {"transactional_ids": ["tx-ops", "nope"]}
        )
        ops, nope = described.transaction_states
        assert ops.transaction_state == "Ongoing"
        assert [(t.topic, list(t.partitions)) for t in ops.topics] == [(topic, [0])]
        assert nope.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        producers = await send_raw(
            cluster.bootstrap, 61, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]}
        )
        (active,) = producers.topics[0].partitions[0].active_producers
        assert (active.producer_id, active.current_txn_start_offset) == (ops.producer_id, 0)
        too_long = await send_raw(
            cluster.bootstrap,
            22,
            4,
            {
                "transactional_id": "tx-long",
                "transaction_timeout": datetime.timedelta(hours=1),
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        assert too_long.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
        await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 1}, "ops-group")
        fetch = {
            "group_id": "ops-group",
            "topics": [{"name": topic, "partition_indexes": [0]}],
            "require_stable": True,
        }
        pending = await send_raw(cluster.bootstrap, 9, 7, fetch)
        assert pending.topics[0].partitions[0].error_code == ErrorCode.UNSTABLE_OFFSET_COMMIT
        await producer.commit_transaction()
    finally:
        await producer.stop()
    await settled(cluster, wait_for, topic)
    await wait_for(
        lambda: cluster.brokers[0].groups.fetch_offsets("ops-group", None),
        message="the group offsets to be materialized",
    )
    stable = await send_raw(cluster.bootstrap, 9, 7, fetch)
    (partition,) = stable.topics[0].partitions
    assert (partition.error_code, partition.committed_offset) == (ErrorCode.NONE, 1)


async def test_admin_lists_transactions_by_state(cluster: Any, topic: str, wait_for: Any) -> None:
    """``Admin.list_transactions`` asks every broker and filters by state: an open
    transaction is Ongoing, and the same id is CompleteCommit once its markers are in."""
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="tx-listed")
    await producer.start()
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        try:
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"open")
            assert [(t.transactional_id, t.state) for t in await admin.list_transactions()] == [
                ("tx-listed", "Ongoing")
            ]
            assert await admin.list_transactions(["CompleteCommit"]) == []
            await producer.commit_transaction()
        finally:
            await producer.stop()

        async def complete() -> list[TransactionListing]:
            return await admin.list_transactions(["CompleteCommit"])

        (listed,) = await wait_for(complete, message="the transaction listed complete")
    assert listed.transactional_id == "tx-listed"
    assert listed.producer_id >= 0
