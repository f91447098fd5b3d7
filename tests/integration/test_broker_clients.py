"""The whole broker serving real clients: produce, consume in a group, commit, restart."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition


async def test_committed_offsets_survive_a_broker_restart(start_cluster: Any) -> None:
    cluster = await start_cluster(configs={"group.initial.rebalance.delay.ms": 0})
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap)
    await producer.start()
    try:
        for i in range(3):
            await producer.send_and_wait("events", f"e{i}".encode())
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        "events",
        group_id="readers",
        bootstrap_servers=cluster.bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        values = [(await asyncio.wait_for(consumer.getone(), 20)).value for _ in range(3)]
        await consumer.commit()
    finally:
        await consumer.stop()
    assert values == [b"e0", b"e1", b"e2"]

    broker = cluster.brokers[0]
    await broker.stop()
    await broker.start()
    checker = AIOKafkaConsumer(group_id="readers", bootstrap_servers=cluster.bootstrap)
    await checker.start()
    try:
        assert await checker.committed(TopicPartition("events", 0)) == 3
    finally:
        await checker.stop()
