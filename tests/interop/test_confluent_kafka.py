"""confluent-kafka (librdkafka) against the broker: every codec, group resume, and the
idempotent producer surviving a broker restart mid-stream.

confluent-kafka is blocking, so each step runs in a worker thread while the broker keeps
serving on the test's event loop.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import (
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
CLIENT = "confluent-kafka"
TIMEOUT_S = 30.0


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, PARTITIONS, 1)], request_timeout=TIMEOUT_S)
    for future in futures.values():
        future.result(timeout=TIMEOUT_S)


class _Delivery:
    """Collects delivery reports; the first failure is kept to fail the test with."""

    def __init__(self) -> None:
        self.acked = 0
        self.error: Any = None

    def __call__(self, error: Any, message: Any) -> None:
        if error is not None:
            self.error = self.error or error
        else:
            self.acked += 1


@dataclass(frozen=True, slots=True)
class _Midway:
    """A pause half way through the stream: ``reached`` is set by the producer, which
    then waits for ``resume`` before producing the second half."""

    reached: threading.Event = field(default_factory=threading.Event)
    resume: threading.Event = field(default_factory=threading.Event)


def _produce(
    config: dict[str, Any], topic: str, count: int, midway: _Midway | None = None
) -> _Delivery:
    producer = Producer(config)
    delivery = _Delivery()
    for i in range(count):
        if midway is not None and i == count // 2:
            midway.reached.set()
            assert midway.resume.wait(TIMEOUT_S), "never told to resume"
        while True:
            try:
                producer.produce(
                    topic,
                    record_value(i),
                    key=record_key(i),
                    headers=list(record_headers(i, CLIENT)),
                    on_delivery=delivery,
                )
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(TIMEOUT_S * 2)
    assert remaining == 0, f"{remaining} records not delivered"
    assert delivery.error is None, delivery.error
    return delivery


def _consume(bootstrap: str, topic: str, group: str, limit: int) -> list[Consumed]:
    """Process up to ``limit`` records in arrival order, commit exactly those, leave."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    processed: list[Consumed] = []
    try:
        while len(processed) < limit:
            messages = consumer.consume(min(500, limit - len(processed)), timeout=TIMEOUT_S)
            assert messages, "no records within the receive timeout"
            for m in messages:
                if m.error() is not None:
                    raise KafkaException(m.error())
                headers = tuple((k, bytes(v)) for k, v in m.headers() or ())
                processed.append(Consumed(m.partition(), m.offset(), m.key(), m.value(), headers))
        consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in committed_after(processed).items()],
            asynchronous=False,
        )
    finally:
        consumer.close()
    return processed


@pytest.mark.parametrize("count", counts())
@pytest.mark.parametrize("codec", CODECS)
async def test_produce_consume_resume(
    cluster: Any, topic_names: str, codec: str, count: int
) -> None:
    topic = group = topic_names
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic)
    config = {
        "bootstrap.servers": cluster.bootstrap,
        "acks": "all",
        "compression.type": codec,
        "linger.ms": 5,
        "partitioner": "murmur2_random",
    }
    await asyncio.to_thread(_produce, config, topic, count)
    first = await asyncio.to_thread(
        _consume, cluster.bootstrap, topic, group, first_run_size(count)
    )
    assert await group_offsets(cluster.bootstrap, group, topic) == committed_after(first)
    second = await asyncio.to_thread(_consume, cluster.bootstrap, topic, group, count - len(first))
    assert_delivered(count, CLIENT, first, second)
    assert await group_offsets(cluster.bootstrap, group, topic) == committed_after(first + second)


async def test_idempotent_producer_survives_a_broker_restart(
    cluster: Any, topic_names: str, wait_for: Any
) -> None:
    """The broker goes down and comes back (same port, data dir and metadata database)
    while an idempotent producer is mid-stream: every record lands exactly once."""
    topic = group = topic_names
    count = 20_000
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic)
    config = {
        "bootstrap.servers": cluster.bootstrap,
        "enable.idempotence": True,
        "linger.ms": 2,
        "batch.num.messages": 200,
        "message.timeout.ms": 60_000,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 200,
    }
    midway = _Midway()
    producing = asyncio.create_task(asyncio.to_thread(_produce, config, topic, count, midway))
    await wait_for(midway.reached.is_set, timeout=TIMEOUT_S, message="half the records sent")
    broker = cluster.brokers[0]
    await broker.stop()
    midway.resume.set()
    await broker.start()
    delivery = await asyncio.wait_for(producing, TIMEOUT_S * 3)
    assert delivery.acked == count
    records = await asyncio.to_thread(_consume, cluster.bootstrap, topic, group, count)
    assert_delivered(count, CLIENT, records, [])


def _list_topic_names(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return set(admin.list_topics(timeout=TIMEOUT_S).topics)


def _consume_by_pattern(
    bootstrap: str, pattern: str, group: str, limit: int
) -> tuple[list[str], set[str]]:
    """Topics of the first ``limit`` records a regex subscription receives, and the topics
    of the partitions assigned to it."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 500,
        }
    )
    consumer.subscribe([pattern])
    received: list[str] = []
    try:
        while len(received) < limit:
            messages = consumer.consume(limit - len(received), timeout=TIMEOUT_S)
            assert messages, "no records within the receive timeout"
            for m in messages:
                if m.error() is not None:
                    raise KafkaException(m.error())
                received.append(m.topic())
        assigned = {tp.topic for tp in consumer.assignment()}
    finally:
        consumer.close()
    return received, assigned


async def test_list_topics_answers_metadata_with_trailing_bytes(cluster: Any) -> None:
    """librdkafka 2.16 sends MetadataRequest v12 with three bytes after the body; Kafka
    ignores them and so must the broker, or ``list_topics()`` fails with _TRANSPORT."""
    names = ["ck-list-a", "ck-list-b"]
    for name in names:
        await asyncio.to_thread(_create_topic, cluster.bootstrap, name)
    listed = await asyncio.to_thread(_list_topic_names, cluster.bootstrap)
    assert set(names) <= listed


async def test_regex_subscription_consumes_matching_topics(cluster: Any) -> None:
    """``^ck.*`` matches the two ck topics and not the other one."""
    topics = {"ck-regex-a": 3, "ck-regex-b": 2, "other-regex": 4}
    for topic, count in topics.items():
        await asyncio.to_thread(_create_topic, cluster.bootstrap, topic)
        config = {"bootstrap.servers": cluster.bootstrap, "acks": "all"}
        await asyncio.to_thread(_produce, config, topic, count)
    received, assigned = await asyncio.to_thread(
        _consume_by_pattern, cluster.bootstrap, "^ck.*", "regex-group", 5
    )
    assert sorted(received) == ["ck-regex-a"] * 3 + ["ck-regex-b"] * 2
    assert assigned == {"ck-regex-a", "ck-regex-b"}
