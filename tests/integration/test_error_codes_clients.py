"""Error codes Kafka clients rely on, checked with the clients themselves: committing an
offset for a partition that does not exist, keyless records to a compacted topic
(KIP-467 per-record errors) and the authorized operations of DescribeTopics and
DescribeCluster."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TIMEOUT_S = 30.0


@pytest.fixture
async def cluster(start_cluster: Any) -> Any:
    return await start_cluster()


def _create(bootstrap: str, topic: str, partitions: int, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])
    for future in futures.values():
        future.result(timeout=TIMEOUT_S)


def _alter_group_offsets(bootstrap: str, group: str, offsets: list[TopicPartition]) -> list[Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, offsets)]
    ).values()
    try:
        return list(future.result(timeout=TIMEOUT_S).topic_partitions)
    except Exception as exc:  # librdkafka fails the whole group on a partition error
        return [exc]


def _list_group_offsets(bootstrap: str, group: str, offsets: list[TopicPartition]) -> list[Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, offsets)]
    ).values()
    return list(future.result(timeout=TIMEOUT_S).topic_partitions)


async def test_committing_offsets_of_a_missing_partition_is_unknown_topic_or_partition(
    cluster: Any,
) -> None:
    await asyncio.to_thread(_create, cluster.bootstrap, "present", 1, {})
    offsets = [
        TopicPartition("present", 0, 5),
        TopicPartition("present", 3, 5),
        TopicPartition("absent", 0, 5),
    ]
    results = await asyncio.to_thread(_alter_group_offsets, cluster.bootstrap, "committer", offsets)
    errors = _partition_errors(results)
    assert errors == {
        ("present", 0): None,
        ("present", 3): KafkaError.UNKNOWN_TOPIC_OR_PART,
        ("absent", 0): KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
    stored = await asyncio.to_thread(
        _list_group_offsets,
        cluster.bootstrap,
        "committer",
        [TopicPartition(tp.topic, tp.partition) for tp in offsets],
    )
    assert {(tp.topic, tp.partition): tp.offset for tp in stored} == {
        ("present", 0): 5,
        ("present", 3): -1001,
        ("absent", 0): -1001,
    }


def _partition_errors(results: list[Any]) -> dict[tuple[str, int], int | None]:
    if results and isinstance(results[0], Exception):
        pytest.fail(f"the group failed as a whole: {results[0]}")
    return {
        (tp.topic, tp.partition): None if tp.error is None else tp.error.code() for tp in results
    }


def _produce_mixed_batch(bootstrap: str, topic: str) -> dict[bytes, int | None]:
    """Five records in one batch, the second and fourth without a key: each record's
    delivery error code (None when delivered)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 500,
            "enable.idempotence": False,
            "retries": 0,
        }
    )
    reports: dict[bytes, int | None] = {}

    def delivered(error: Any, message: Any) -> None:
        reports[message.value()] = None if error is None else error.code()

    for i in range(5):
        key = None if i in (1, 3) else f"k{i}".encode()
        producer.produce(topic, f"v{i}".encode(), key=key, partition=0, on_delivery=delivered)
    assert producer.flush(TIMEOUT_S) == 0
    return reports


async def test_keyless_records_to_a_compacted_topic_fail_alone(cluster: Any) -> None:
    """KIP-467: the broker names the keyless records (INVALID_RECORD for them); the
    client fails the rest of the batch as _INVALID_DIFFERENT_RECORD, and nothing of
    the batch is appended."""
    await asyncio.to_thread(
        _create, cluster.bootstrap, "compacted", 1, {"cleanup.policy": "compact"}
    )
    reports = await asyncio.to_thread(_produce_mixed_batch, cluster.bootstrap, "compacted")
    assert reports == {
        b"v0": KafkaError._INVALID_DIFFERENT_RECORD,
        b"v1": KafkaError.INVALID_RECORD,
        b"v2": KafkaError._INVALID_DIFFERENT_RECORD,
        b"v3": KafkaError.INVALID_RECORD,
        b"v4": KafkaError._INVALID_DIFFERENT_RECORD,
    }
    (partition,) = [
        p for p in cluster.brokers[0].replica_manager.partitions() if p.topic == "compacted"
    ]
    assert partition.log.log_end_offset == 0
