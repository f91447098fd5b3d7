"""Helpers shared by the mirroring integration tests (two in-process clusters)."""

from __future__ import annotations

import datetime
import functools
import time
from typing import Any

from aiokafka import AIOKafkaProducer

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.protocol.records import RawBatch, Record, build_batch

MIRROR = "my-mirror"
MIRROR_CONFIGS = {"mirror.topic.num.partitions": 3, "mirror.fetch.max.wait.ms": 50}


def broker_of(cluster: Any) -> Any:
    return cluster.brokers[0]


def partition_log(cluster: Any, topic: str, partition: int) -> Any:
    return broker_of(cluster).replica_manager.partition(topic, partition).log


def batches_of(cluster: Any, topic: str, partition: int) -> list[RawBatch]:
    return list(partition_log(cluster, topic, partition).batches())


def mirrored_up_to(source: Any, destination: Any, topic: str, partition: int) -> bool:
    """The destination log ends where the source's does (and holds something)."""
    try:
        copied = partition_log(destination, topic, partition).log_end_offset
    except Exception:
        return False
    return copied == partition_log(source, topic, partition).log_end_offset and copied > 0


def mirror_state(cluster: Any, topic: str, partition: int) -> str | None:
    status = broker_of(cluster).mirrors.partitions.get((topic, partition))
    return None if status is None else status.state.name


async def produce(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    compression_type: str | None = None,
    tag: str = "",
    partitions: int | None = None,
) -> None:
    """``count`` records, one send batch per partition round, linger so batches hold several."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, compression_type=compression_type, acks=-1, linger_ms=5
    )
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                f"{tag}-{i}".encode(),
                key=f"k{i}".encode(),
                partition=None if partitions is None else i % partitions,
            )
            for i in range(count)
        ]
        for future in futures:
            await future
    finally:
        await producer.stop()


async def mirror_new_topic(
    source: Any, destination: Any, topic: str, partitions: int, wait_for: Any
) -> None:
    """Create ``topic`` on the source with two records per partition, mirror it to the
    destination (mirror ``MIRROR``) and wait until every partition is copied."""
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(topic, partitions, 1)])).all()
    await produce(source.bootstrap, topic, 2 * partitions, partitions=partitions)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [topic])).all()
    for p in range(partitions):
        await wait_for(lambda p=p: mirrored_up_to(source, destination, topic, p), timeout=20)


async def produce_error_code(
    bootstrap: str, topic: str, partition: int = 0, *, node: int | None = None
) -> int:
    """The error code a Produce of one record gets (0 when it is accepted), sent to
    ``node`` (the partition's leader) or, on a one-broker cluster, to any broker."""
    batch = build_batch([Record(0, int(time.time() * 1000), b"k", b"local")])
    async with ClusterClient(bootstrap, client_id="mirror-test-producer") as client:
        send = client.send_to_any if node is None else functools.partial(client.send_to_node, node)
        response = await send(
            RequestSpec(
                0,
                {
                    "transactional_id": None,
                    "acks": -1,
                    "timeout": datetime.timedelta(seconds=5),
                    "topic_data": [
                        {
                            "name": topic,
                            "partition_data": [{"index": partition, "records": batch.data}],
                        }
                    ],
                },
                versions=(9,),
            )
        )
    return int(response.responses[0].partition_responses[0].error_code)
