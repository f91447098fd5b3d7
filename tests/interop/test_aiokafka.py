"""aiokafka against the broker: every codec, keyed records with headers, group resume."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import OffsetAndMetadata
from helpers.interop import (
    CODECS,
    PARTITIONS,
    Consumed,
    assert_delivered,
    committed_after,
    counts,
    first_run_size,
    group_offsets,
    record_headers,
    record_key,
    record_value,
)

pytestmark = pytest.mark.interop
CLIENT = "aiokafka"
RECEIVE_TIMEOUT_S = 30


async def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        await admin.close()


async def _produce(bootstrap: str, topic: str, codec: str, count: int) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
    )
    await producer.start()
    try:
        sent = [
            await producer.send(
                topic,
                record_value(i),
                key=record_key(i),
                headers=list(record_headers(i, CLIENT)),
            )
            for i in range(count)
        ]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


async def _consume(bootstrap: str, topic: str, group: str, limit: int) -> list[Consumed]:
    """Process up to ``limit`` records in arrival order, commit exactly those, leave."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    processed: list[Consumed] = []
    try:
        while len(processed) < limit:
            batches = await asyncio.wait_for(consumer.getmany(timeout_ms=500), RECEIVE_TIMEOUT_S)
            for tp, messages in batches.items():
                for m in messages[: limit - len(processed)]:
                    headers = tuple((k, bytes(v)) for k, v in m.headers)
                    processed.append(Consumed(tp.partition, m.offset, m.key, m.value, headers))
        await consumer.commit(
            {
                TopicPartition(topic, p): OffsetAndMetadata(o, "")
                for p, o in committed_after(processed).items()
            }
        )
    finally:
        await consumer.stop()
    return processed


@pytest.mark.parametrize("count", counts())
@pytest.mark.parametrize("codec", CODECS)
async def test_produce_consume_resume(
    cluster: Any, topic_names: str, codec: str, count: int
) -> None:
    topic = group = topic_names
    await _create_topic(cluster.bootstrap, topic)
    await _produce(cluster.bootstrap, topic, codec, count)
    first = await _consume(cluster.bootstrap, topic, group, first_run_size(count))
    assert await group_offsets(cluster.bootstrap, group, topic) == committed_after(first)
    second = await _consume(cluster.bootstrap, topic, group, count - len(first))
    assert_delivered(count, CLIENT, first, second)
    assert await group_offsets(cluster.bootstrap, group, topic) == committed_after(first + second)
