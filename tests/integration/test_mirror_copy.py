"""Mirroring between two in-process clusters: first copy, read-only mirror topics, codecs."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError as AIOKafkaError
from helpers.mirrors import (
    MIRROR,
    MIRROR_CONFIGS,
    batches_of,
    mirrored_up_to,
    partition_log,
    produce,
    produce_error_code,
)

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records import RawBatch

CODECS = (None, "gzip", "snappy", "lz4", "zstd")


def _fingerprint(batch: RawBatch) -> tuple[int, int, int, bytes]:
    return batch.base_offset, batch.last_offset, batch.partition_leader_epoch, bytes(batch.data)


async def test_first_mirroring_copies_every_codec_byte_for_byte(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 3, 1)])).all()
    for codec in CODECS:
        await produce(source.bootstrap, "orders", 12, compression_type=codec, tag=str(codec))
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
        described = await admin.describe_topics(["orders"])
    async with Admin(bootstrap=source.bootstrap) as admin:
        source_described = await admin.describe_topics(["orders"])
    assert described["orders"].topic_id == source_described["orders"].topic_id

    for p in range(3):
        await wait_for(lambda p=p: mirrored_up_to(source, destination, "orders", p), timeout=20)
        copied = [_fingerprint(b) for b in batches_of(destination, "orders", p)]
        original = [_fingerprint(b) for b in batches_of(source, "orders", p)]
        assert copied == original
    compressions = {b.compression for p in range(3) for b in batches_of(destination, "orders", p)}
    assert len(compressions) == len(CODECS)


async def test_produce_to_a_mirror_topic_is_refused(start_cluster: Any, wait_for: Any) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    await produce(source.bootstrap, "orders", 3)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
    await wait_for(lambda: mirrored_up_to(source, destination, "orders", 0), timeout=20)
    assert await produce_error_code(destination.bootstrap, "orders") == ErrorCode.READ_ONLY_TOPIC
    producer = AIOKafkaProducer(bootstrap_servers=destination.bootstrap, acks=1)
    await producer.start()
    try:
        with pytest.raises(AIOKafkaError):
            await producer.send_and_wait("orders", b"refused", partition=0)
    finally:
        await producer.stop()
    assert partition_log(destination, "orders", 0).log_end_offset == 3
