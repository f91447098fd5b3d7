"""Log compaction on a running broker: the cleaner runs every ``log.cleaner.backoff.ms``.

A consumer reading a compacted topic from its start sees at least the latest record of
every key, each at its original offset with its original content. A mirror topic is
the source's log, offset for offset: its destination compacts it only once it is
writable (the spec: "After failover, when the mirror topic becomes writable, log
compaction continues normally in the destination cluster").
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from helpers.mirrors import MIRROR, mirror_state, partition_log

from mirrorsim.broker.log.cleaner import CLEANER_CHECKPOINT
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.records import decode_records

CLEAN_OFTEN = {"log.cleaner.backoff.ms": 100}
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "2000"}
KEYS = 5
RECORDS = 120


def produced(i: int) -> tuple[bytes, bytes]:
    return f"k{i % KEYS}".encode(), f"value-{i}-".encode().ljust(60, b".")


async def produce(bootstrap: str, topic: str) -> None:
    """``RECORDS`` records over ``KEYS`` keys, each acknowledged, in small batches."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=-1, max_batch_size=400)
    await producer.start()
    try:
        for i in range(RECORDS):
            key, value = produced(i)
            await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()


async def consume(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of every record from the start to the end (offset RECORDS)."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    seen: list[tuple[int, bytes, bytes]] = []
    try:
        while not seen or seen[-1][0] < RECORDS - 1:
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                seen += [(r.offset, r.key, r.value) for r in records]
    finally:
        await consumer.stop()
    return seen


def records_in_log(cluster: Any, topic: str) -> int:
    return sum(
        len(decode_records(batch))
        for batch in partition_log(cluster, topic, 0).batches()
        if not batch.is_control
    )


def cleaned(cluster: Any, topic: str) -> bool:
    return (partition_log(cluster, topic, 0).dir / CLEANER_CHECKPOINT).exists()


def assert_compacted_view(records: list[tuple[int, bytes, bytes]]) -> None:
    """Kafka's guarantee: every record at its original offset with its original content,
    the latest of each key among them, and fewer records than were written."""
    assert len(records) < RECORDS
    assert all((key, value) == produced(offset) for offset, key, value in records)
    latest = {produced(i)[0]: i for i in range(RECORDS)}
    last_seen = {key: offset for offset, key, _ in records}
    assert last_seen == latest


async def create(bootstrap: str, topic: str) -> None:
    async with Admin(bootstrap=bootstrap) as admin:
        (await admin.create_topics([NewTopic(topic, 1, 1, COMPACTED)])).all()


async def test_the_cleaner_keeps_the_latest_record_of_each_key_at_its_offset(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(configs=CLEAN_OFTEN)
    await create(cluster.bootstrap, "compacted")
    await produce(cluster.bootstrap, "compacted")
    await wait_for(lambda: cleaned(cluster, "compacted"), timeout=10, message="a cleaning")
    log = partition_log(cluster, "compacted", 0)
    assert (log.log_start_offset, log.log_end_offset) == (0, RECORDS)
    assert_compacted_view(await consume(cluster.bootstrap, "compacted"))


def cleaner_jobs() -> list[str]:
    return [t.get_name() for t in asyncio.all_tasks() if t.get_name().endswith("log cleaner")]


async def test_log_cleaner_enable_false_starts_no_cleaner(start_cluster: Any) -> None:
    await start_cluster("on")
    assert cleaner_jobs() == ["broker 1 log cleaner"]
    await start_cluster("off", configs={"log.cleaner.enable": "false"})
    assert cleaner_jobs() == ["broker 1 log cleaner"]


async def test_a_mirror_topic_is_compacted_only_once_it_is_writable(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("source", configs={"log.cleaner.enable": "false"})
    destination = await start_cluster(
        "destination", configs={**CLEAN_OFTEN, "mirror.fetch.max.wait.ms": 50}
    )
    await create(source.bootstrap, "events")
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["events"])).all()
        await produce(source.bootstrap, "events")
        log = partition_log(destination, "events", 0)
        await wait_for(
            lambda: log.log_end_offset == RECORDS, timeout=20, message="the mirror caught up"
        )
        # the log is due a cleaning, but a pass of the cleaner leaves it whole
        assert log.plan_cleaning() is not None
        await destination.brokers[0].log_cleaner.clean()
        assert records_in_log(destination, "events") == RECORDS
        assert not cleaned(destination, "events")

        (await admin.remove_topics_from_mirror(MIRROR, ["events"])).all()
        await wait_for(lambda: mirror_state(destination, "events", 0) == "STOPPED", timeout=20)
    await wait_for(lambda: cleaned(destination, "events"), timeout=10, message="a cleaning")
    assert records_in_log(source, "events") == RECORDS
    assert_compacted_view(await consume(destination.bootstrap, "events"))
