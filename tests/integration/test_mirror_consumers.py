"""What consumers see across a failover: same offsets, and no hanging transaction."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from helpers.mirrors import (
    MIRROR,
    MIRROR_CONFIGS,
    batches_of,
    broker_of,
    mirror_state,
    mirrored_up_to,
    partition_log,
    produce,
)

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic, OffsetAndMetadata, TopicPartition
from mirrorsim.protocol.records import (
    decode_control_batch,
    decode_records,
)
from mirrorsim.protocol.records.control import MirrorPidReset


async def _fail_over(destination: Any, source: Any, topics: list[str], wait_for: Any) -> None:
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, topics)).all()
    for topic in topics:
        await wait_for(lambda t=topic: mirror_state(destination, t, 0) == "STOPPED", timeout=20)


async def test_a_group_resumes_at_the_same_offset_after_failover(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    tp = TopicPartition("orders", 0)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
        await produce(source.bootstrap, "orders", 10)
        (await admin.alter_consumer_group_offsets("billing", {tp: 6})).all()
        committed = (await admin.list_consumer_group_offsets("billing"))[tp].offset
    expected = next(
        r for b in batches_of(source, "orders", 0) for r in decode_records(b) if r.offset == 6
    )
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
        await wait_for(lambda: mirrored_up_to(source, destination, "orders", 0), timeout=20)
        await _fail_over(destination, source, ["orders"], wait_for)
        offsets = {tp: OffsetAndMetadata(committed)}
        (await admin.alter_consumer_group_offsets("billing", offsets)).all()

    consumer = AIOKafkaConsumer(
        "orders",
        bootstrap_servers=destination.bootstrap,
        group_id="billing",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        first = await asyncio.wait_for(consumer.getone(), 20)
    finally:
        await consumer.stop()
    assert (first.offset, first.key, first.value) == (6, expected.key, expected.value)


async def test_failover_truncates_to_the_last_stable_offset(
    start_cluster: Any, wait_for: Any
) -> None:
    """Source: 0 plain, 1 T1 data, 2 T2 data, 3 T1 COMMIT. Its LSO is 2 (T2 is open).

    The mirror copies only below the source LSO: offsets 0 and 1, where T1 is still open
    on the destination (its marker was above the source LSO). Failover must cut the
    destination at its own LSO, 1, so no transaction is left hanging.
    """
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("payments", 1, 1)])).all()
    await produce(source.bootstrap, "payments", 1)
    first = AIOKafkaProducer(bootstrap_servers=source.bootstrap, transactional_id="t1")
    second = AIOKafkaProducer(bootstrap_servers=source.bootstrap, transactional_id="t2")
    await first.start()
    await second.start()
    try:
        await first.begin_transaction()
        await first.send_and_wait("payments", b"t1", partition=0)
        await second.begin_transaction()
        await second.send_and_wait("payments", b"t2", partition=0)
        await first.commit_transaction()
        source_partition = broker_of(source).replica_manager.partition("payments", 0)
        await wait_for(lambda: source_partition.log_end_offset == 4, timeout=10)
        assert source_partition.last_stable_offset == 2
        await _mirror_and_fail_over(source, destination, wait_for)
    finally:
        await second.abort_transaction()
        await first.stop()
        await second.stop()


async def _mirror_and_fail_over(source: Any, destination: Any, wait_for: Any) -> None:
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["payments"])).all()
    await wait_for(
        lambda: partition_log(destination, "payments", 0).log_end_offset == 2, timeout=20
    )
    copied = broker_of(destination).replica_manager.partition("payments", 0)
    assert copied.last_stable_offset == 1
    await _fail_over(destination, source, ["payments"], wait_for)

    batches = batches_of(destination, "payments", 0)
    assert [b.base_offset for b in batches] == [0, 1]
    assert isinstance(decode_control_batch(batches[1]), MirrorPidReset)
    assert copied.last_stable_offset == copied.high_watermark == 2
