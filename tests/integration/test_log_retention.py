"""Log retention on a running broker: the periodic pass deletes what Kafka's would.

Each broker checks its partitions every ``log.retention.check.interval.ms``: segments
below the log start (after DeleteRecords) go, and under ``cleanup.policy=delete`` so do
those past ``retention.ms`` or ``retention.bytes``; a compacted topic keeps its data.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from helpers.mirrors import MIRROR, partition_log

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic, OffsetSpec, TopicPartition

CHECK_EVERY = {"log.retention.check.interval.ms": 100}
SMALL_SEGMENTS = {"segment.bytes": "2000"}
HOUR_AGO_MS = int(time.time() * 1000) - 3_600_000


async def produce(
    bootstrap: str, topic: str, count: int, *, timestamp_ms: int | None = None
) -> None:
    """``count`` records of about 100 bytes, each acknowledged, in several small batches."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=-1, max_batch_size=600)
    await producer.start()
    try:
        for i in range(count):
            await producer.send_and_wait(
                topic, b"v" * 100, key=f"k{i}".encode(), timestamp_ms=timestamp_ms
            )
    finally:
        await producer.stop()


async def offsets(bootstrap: str, topic: str) -> tuple[int, int]:
    """(earliest, latest) of partition 0, as a client sees them."""
    tp = TopicPartition(topic, 0)
    async with Admin(bootstrap=bootstrap) as admin:
        earliest = (await admin.list_offsets({tp: OffsetSpec.EARLIEST}))[tp].offset
        latest = (await admin.list_offsets({tp: OffsetSpec.LATEST}))[tp].offset
    return earliest, latest


async def consumed_offsets(bootstrap: str, topic: str, until: int) -> list[int]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    seen: list[int] = []
    try:
        while not seen or seen[-1] < until - 1:
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                seen += [r.offset for r in records]
    finally:
        await consumer.stop()
    return seen


def trimmed(cluster: Any, topic: str, retention_bytes: int) -> bool:
    """A retention pass ran after the last append: dropping the oldest segment now would
    take the log under ``retention_bytes`` (Kafka's rule for ``retention.bytes``)."""
    log = partition_log(cluster, topic, 0)
    return log.log_start_offset > 0 and log.size_in_bytes - log.segments[0].size < retention_bytes


def segment_files(cluster: Any, topic: str) -> list[Path]:
    return sorted(partition_log(cluster, topic, 0).dir.glob("*.log"))


async def create(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    async with Admin(bootstrap=bootstrap) as admin:
        (await admin.create_topics([NewTopic(topic, 1, 1, configs)])).all()


async def test_retention_bytes_deletes_the_oldest_segments_and_moves_the_log_start(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(configs=CHECK_EVERY)
    await create(cluster.bootstrap, "capped", {**SMALL_SEGMENTS, "retention.bytes": "4000"})
    await produce(cluster.bootstrap, "capped", 120)
    await wait_for(
        lambda: trimmed(cluster, "capped", 4000), timeout=10, message="retention.bytes applied"
    )
    log = partition_log(cluster, "capped", 0)
    assert log.size_in_bytes >= 4000
    earliest, latest = await offsets(cluster.bootstrap, "capped")
    assert latest == 120
    assert earliest == log.segments[0].base_offset
    assert await consumed_offsets(cluster.bootstrap, "capped", latest) == list(
        range(earliest, latest)
    )


async def test_retention_ms_deletes_old_records_and_the_log_takes_new_ones_at_its_end(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(configs=CHECK_EVERY)
    await create(cluster.bootstrap, "expiring", {**SMALL_SEGMENTS, "retention.ms": "60000"})
    await create(cluster.bootstrap, "kept", SMALL_SEGMENTS)
    for topic in ("expiring", "kept"):
        await produce(cluster.bootstrap, topic, 60, timestamp_ms=HOUR_AGO_MS)

    async def expired() -> bool:
        return (await offsets(cluster.bootstrap, "expiring")) == (60, 60)

    await wait_for(expired, timeout=10, message="every hour-old record of 'expiring' deleted")
    assert len(segment_files(cluster, "expiring")) == 1
    await produce(cluster.bootstrap, "expiring", 3)
    assert await offsets(cluster.bootstrap, "expiring") == (60, 63)
    assert await consumed_offsets(cluster.bootstrap, "expiring", 63) == [60, 61, 62]
    # the default retention (7 days) keeps the hour-old records of the other topic
    assert await offsets(cluster.bootstrap, "kept") == (0, 60)
    assert len(segment_files(cluster, "kept")) > 1


async def test_deleted_records_free_their_segments_and_a_compacted_topic_keeps_its_own(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(configs=CHECK_EVERY)
    await create(cluster.bootstrap, "trimmed", SMALL_SEGMENTS)
    await create(
        cluster.bootstrap,
        "compacted",
        {**SMALL_SEGMENTS, "cleanup.policy": "compact", "retention.ms": "60000"},
    )
    for topic in ("trimmed", "compacted"):
        await produce(cluster.bootstrap, topic, 60, timestamp_ms=HOUR_AGO_MS)
    files = len(segment_files(cluster, "trimmed"))
    tp = TopicPartition("trimmed", 0)
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        assert await admin.delete_records({tp: 40}) == {tp: 40}

    def freed() -> bool:
        return partition_log(cluster, "trimmed", 0).segments[0].base_offset > 0

    await wait_for(freed, timeout=10, message="segments below the new log start deleted")
    log = partition_log(cluster, "trimmed", 0)
    assert log.segments[0].base_offset <= 40
    assert len(segment_files(cluster, "trimmed")) < files
    assert await offsets(cluster.bootstrap, "trimmed") == (40, 60)
    # retention.ms does not apply under cleanup.policy=compact
    assert await offsets(cluster.bootstrap, "compacted") == (0, 60)


async def test_a_mirror_follows_the_log_start_its_source_moved_by_retention(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("source", configs=CHECK_EVERY)
    destination = await start_cluster("destination")
    await create(source.bootstrap, "events", {**SMALL_SEGMENTS, "retention.bytes": "4000"})
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["events"])).all()
    await produce(source.bootstrap, "events", 120)
    await wait_for(
        lambda: trimmed(source, "events", 4000), timeout=10, message="retention.bytes applied"
    )

    async def followed() -> bool:
        start, end = await offsets(source.bootstrap, "events")
        return await offsets(destination.bootstrap, "events") == (start, end)

    await wait_for(followed, timeout=20, message="the mirror at the source's log start and end")
    earliest, latest = await offsets(destination.bootstrap, "events")
    assert latest == 120
    assert await consumed_offsets(destination.bootstrap, "events", latest) == list(
        range(earliest, latest)
    )
