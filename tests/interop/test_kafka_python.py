"""kafka-python against the broker: every codec, keyed records with headers, group resume.

kafka-python is blocking, so each step runs in a worker thread while the broker keeps
serving on the test's event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
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
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata

pytestmark = pytest.mark.interop
CLIENT = "kafka-python"
RECEIVE_TIMEOUT_MS = 30_000


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()


def _produce(bootstrap: str, topic: str, codec: str, count: int) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
    )
    try:
        sent = [
            producer.send(
                topic,
                record_value(i),
                key=record_key(i),
                headers=list(record_headers(i, CLIENT)),
            )
            for i in range(count)
        ]
        producer.flush()
        for future in sent:
            future.get(timeout=RECEIVE_TIMEOUT_MS / 1000)
    finally:
        producer.close()


def _consume(bootstrap: str, topic: str, group: str, limit: int) -> list[Consumed]:
    """Process up to ``limit`` records in arrival order, commit exactly those, leave."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    processed: list[Consumed] = []
    try:
        while len(processed) < limit:
            batches = consumer.poll(timeout_ms=RECEIVE_TIMEOUT_MS)
            assert batches, "no records within the receive timeout"
            for tp, messages in batches.items():
                for m in messages[: limit - len(processed)]:
                    headers = tuple((k, bytes(v)) for k, v in m.headers)
                    processed.append(Consumed(tp.partition, m.offset, m.key, m.value, headers))
        consumer.commit(
            {
                TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                for p, o in committed_after(processed).items()
            }
        )
    finally:
        consumer.close(autocommit=False)
    return processed


@pytest.mark.parametrize("count", counts())
@pytest.mark.parametrize("codec", CODECS)
async def test_produce_consume_resume(
    cluster: Any, topic_names: str, codec: str, count: int
) -> None:
    topic = group = topic_names
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic)
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, codec, count)
    first = await asyncio.to_thread(
        _consume, cluster.bootstrap, topic, group, first_run_size(count)
    )
    assert await group_offsets(cluster.bootstrap, group, topic) == committed_after(first)
    second = await asyncio.to_thread(_consume, cluster.bootstrap, topic, group, count - len(first))
    assert_delivered(count, CLIENT, first, second)
    assert await group_offsets(cluster.bootstrap, group, topic) == committed_after(first + second)
