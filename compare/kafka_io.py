"""The worker-side Kafka plumbing both replicators share (aiokafka, as a Connect worker uses
the Java clients): topic creation, partition discovery and a catch-up consume loop."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterable

from aiokafka import AIOKafkaConsumer, ConsumerRecord
from aiokafka.structs import TopicPartition as AioTopicPartition

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.errors import ErrorCode, KafkaError

FETCH_TIMEOUT_MS = 200


async def create_topics_if_missing(bootstrap: str, topics: dict[str, int]) -> None:
    """Create ``{name: partitions}`` with the cluster's default replication factor."""
    async with Admin(bootstrap=bootstrap) as admin:
        results = await admin.create_topics(
            [NewTopic(name, partitions) for name, partitions in topics.items()]
        )
    for error in results.failed.values():
        if not (isinstance(error, KafkaError) and error.code == ErrorCode.TOPIC_ALREADY_EXISTS):
            raise error


async def matching_topics(admin: Admin, pattern: str) -> dict[str, int]:
    """Topics whose whole name matches ``pattern``, with their partition counts."""
    regex = re.compile(pattern)
    names = [t for t in await admin.list_topics() if regex.fullmatch(t)]
    descriptions = await admin.describe_topics(names) if names else {}
    return {name: len(d.partitions) for name, d in descriptions.items()}


async def consume_until(
    consumer: AIOKafkaConsumer, end_offsets: dict[AioTopicPartition, int], timeout_s: float
) -> AsyncIterator[tuple[AioTopicPartition, list[ConsumerRecord]]]:
    """Yield fetched records per partition until every position reaches its end offset."""
    async with asyncio.timeout(timeout_s):
        while any(await _behind(consumer, end_offsets)):
            fetched = await consumer.getmany(*end_offsets, timeout_ms=FETCH_TIMEOUT_MS)
            for tp, records in fetched.items():
                if records:
                    yield tp, records


async def _behind(
    consumer: AIOKafkaConsumer, end_offsets: dict[AioTopicPartition, int]
) -> list[AioTopicPartition]:
    return [tp for tp, end in end_offsets.items() if await consumer.position(tp) < end]


def partitions_of(topics: dict[str, int]) -> Iterable[AioTopicPartition]:
    for topic, count in sorted(topics.items()):
        for partition in range(count):
            yield AioTopicPartition(topic, partition)
