"""confluent-kafka (librdkafka) against the broker: every codec, group resume, the
idempotent producer surviving a broker restart mid-stream, and a read_committed consumer
over a transaction aborted across segment rolls.

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


TXN_RECORDS = 1_001
TXN_SEGMENT_BYTES = 16_384


def _create_small_segment_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, 1, 1, config={"segment.bytes": str(TXN_SEGMENT_BYTES)})
    for future in admin.create_topics([new], request_timeout=TIMEOUT_S).values():
        future.result(timeout=TIMEOUT_S)


def _transaction(producer: Producer, topic: str, values: list[bytes], *, commit: bool) -> None:
    producer.begin_transaction()
    for value in values:
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0
    if commit:
        producer.commit_transaction(TIMEOUT_S)
    else:
        producer.abort_transaction(TIMEOUT_S)


def _read_committed(bootstrap: str, topic: str, end: int) -> list[bytes]:
    """Every record a read_committed consumer delivers from offset 0 until its position
    reaches ``end``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        for _ in range(int(TIMEOUT_S / 0.1)):
            for m in consumer.consume(500, timeout=0.1):
                if m.error() is not None:
                    raise KafkaException(m.error())
                values.append(m.value())
            if consumer.position([TopicPartition(topic, 0)])[0].offset >= end:
                return values
        raise AssertionError(f"consumer stuck before offset {end} after {len(values)} records")
    finally:
        consumer.close()


async def test_read_committed_drops_a_transaction_aborted_across_segment_rolls(
    cluster: Any, topic_names: str, wait_for: Any
) -> None:
    """A transaction of 1,001 records over several segments is aborted: its ABORT marker
    is indexed in the last segment, and a fetch that ends at an earlier segment roll must
    still name it, or librdkafka delivers the aborted records."""
    topic = topic_names
    await asyncio.to_thread(_create_small_segment_topic, cluster.bootstrap, topic)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": topic,
            "linger.ms": 5,
            "batch.num.messages": 50,
        }
    )
    try:
        await asyncio.to_thread(producer.init_transactions, TIMEOUT_S)
        aborted = [f"aborted-{i:04d}-".encode() + b"." * 64 for i in range(TXN_RECORDS)]
        await asyncio.to_thread(_transaction, producer, topic, aborted, commit=False)
        partition = cluster.brokers[0].replica_manager.partition(topic, 0)

        def settled() -> int:
            stable = partition.last_stable_offset == partition.high_watermark
            return int(partition.high_watermark) if stable else 0

        end = await wait_for(settled, timeout=TIMEOUT_S, message="the abort to be stable")
        assert end == TXN_RECORDS + 1
        assert len(partition.log.segments) > 2, "the transaction should span segment rolls"
        assert await asyncio.to_thread(_read_committed, cluster.bootstrap, topic, end) == []

        committed = [f"committed-{i}".encode() for i in range(10)]
        await asyncio.to_thread(_transaction, producer, topic, committed, commit=True)
        end = await wait_for(settled, timeout=TIMEOUT_S, message="the commit to be stable")
        assert end == TXN_RECORDS + 1 + len(committed) + 1
        assert await asyncio.to_thread(_read_committed, cluster.bootstrap, topic, end) == committed
    finally:
        await asyncio.to_thread(producer.close)


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
