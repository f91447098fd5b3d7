"""The mirror's group offset sync for the newer group protocols, between two in-process
clusters: a KIP-932 share group's start offset and a KIP-848 (`group.protocol=consumer`)
group's committed offsets reach the destination, and after a failover each kind of
consumer resumes there from what was synced. A share group and a consumer group of the
same name on the two sides are a conflict, reported, logged and counted.

confluent-kafka's calls block, so each runs in a worker thread while the brokers answer on
the test's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Consumer, ShareConsumer
from confluent_kafka import TopicPartition as ClientTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from helpers.metadata_sync import DESTINATION_CONFIGS, SOURCE_CONFIGS, manager_of, mirror_topic
from helpers.metrics import scrape
from helpers.mirrors import MIRROR, broker_of, mirror_state, mirrored_up_to, produce

from mirrorsim.broker.metrics.mirror import SyncError
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import TopicPartition as AdminTopicPartition
from mirrorsim.coordinator.sync import CommitGroupOffsets, GroupConflict, GroupType, TopicPartition

TIMEOUT_S = 30.0
ORDERS_0 = TopicPartition("orders", 0)
PARTITION = AdminTopicPartition("orders", 0)
"""The same partition as the Admin client names it."""
GROUP_PROTOCOL_CONFIGS = {
    "group.consumer.heartbeat.interval.ms": 500,
    "group.share.heartbeat.interval.ms": 500,
    "group.share.record.lock.duration.ms": 15_000,
}
ON_DEMAND_SYNC = {"mirror.metadata.refresh.interval.ms": 600_000}
"""Cycles run only when a test asks (``refresh_now``), so each report holds what the test
changed: a scheduled cycle in between would have synced it already."""
SYNC_ERRORS = ("kafka_server_mirror_consumer_group_offset_sync_error_total", ())

Delivery = tuple[int, int, bytes]
"""A share consumer's delivery: offset, delivery count, value."""


async def _clusters(start_cluster: Any, **source_configs: str) -> tuple[Any, Any]:
    source = await start_cluster(
        "primary", configs={**SOURCE_CONFIGS, **GROUP_PROTOCOL_CONFIGS, **source_configs}
    )
    destination = await start_cluster(
        "backup", configs={**DESTINATION_CONFIGS, **GROUP_PROTOCOL_CONFIGS, **ON_DEMAND_SYNC}
    )
    return source, destination


async def _fail_over(destination: Any, wait_for: Any) -> None:
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()
    await wait_for(lambda: mirror_state(destination, "orders", 0) == "STOPPED", timeout=20)


async def _start_offsets(cluster: Any, group: str) -> dict[AdminTopicPartition, int]:
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        offsets = await admin.list_share_group_offsets(group, ["orders"])
    return {tp: info.start_offset for tp, info in offsets.items()}


def _read_from_earliest(bootstrap: str, group: str) -> None:
    """``share.auto.offset.reset=earliest`` for the share group (Kafka's default is
    latest): a destination that started the group on its own would deliver from 0."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    reset = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(
                "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
            )
        ],
    )
    for future in admin.incremental_alter_configs([reset]).values():
        future.result(timeout=TIMEOUT_S)


def _share_consumer(bootstrap: str, group: str) -> Any:
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe(["orders"])
    return consumer


def _share_consume(
    consumer: Any, until: set[int], decide: Callable[[int], AcknowledgeType] | None = None
) -> list[Delivery]:
    """Every delivery until each offset of ``until`` came at least once; ``decide(offset)``
    picks each acknowledgement (ACCEPT when None), committed after every poll."""
    deliveries: list[Delivery] = []
    deadline = time.monotonic() + TIMEOUT_S
    while not until <= {offset for offset, _, _ in deliveries}:
        assert time.monotonic() < deadline, f"only {deliveries} were delivered"
        for message in consumer.poll(0.2):
            assert message.error() is None, message.error()
            deliveries.append((message.offset(), message.delivery_count(), message.value()))
            kind = AcknowledgeType.ACCEPT if decide is None else decide(message.offset())
            consumer.acknowledge(message, kind)
        consumer.commit_sync(TIMEOUT_S)
    return deliveries


def _consumer(bootstrap: str, group: str, reset: str) -> Any:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": reset,
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["orders"])
    return consumer


def _consume(consumer: Any, count: int) -> list[tuple[int, bytes]]:
    records: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(records) < count:
        assert time.monotonic() < deadline, f"only {records} were consumed"
        message = consumer.poll(0.2)
        if message is None:
            continue
        assert message.error() is None, message.error()
        records.append((message.offset(), message.value()))
    return records


@pytest.mark.parametrize(
    "source_configs",
    [{}, {"test.hidden.api.keys": "90:0"}],
    ids=["describe-v1", "describe-v0"],
)
async def test_a_share_group_start_offset_is_synced_and_a_failed_over_consumer_starts_there(
    start_cluster: Any, wait_for: Any, source_configs: dict[str, str]
) -> None:
    """On the source the share consumer accepts offsets 0-3 and 6-9 and releases 4 and 5,
    so the start offset is 4 with acknowledged records above it. Only the start offset
    travels: on the destination the group reads 4-9 again, each as a first delivery, and
    nothing below 4. Re-processing is the source's in-flight window (4-9), 4 records of
    which (6-9) were already processed. A source serving DescribeShareGroupOffsets v0
    only is asked for the mirror's partitions by name, v1 for all it has state for."""
    source, destination = await _clusters(start_cluster, **source_configs)
    await mirror_topic(source.bootstrap, destination, "orders")
    for cluster in (source, destination):
        await asyncio.to_thread(_read_from_earliest, cluster.bootstrap, "jobs")
    await produce(source.bootstrap, "orders", 10, tag="r", partitions=1)
    await wait_for(lambda: mirrored_up_to(source, destination, "orders", 0), timeout=20)
    consumer = await asyncio.to_thread(_share_consumer, source.bootstrap, "jobs")
    try:
        on_source = await asyncio.to_thread(
            _share_consume,
            consumer,
            set(range(10)),
            lambda offset: AcknowledgeType.RELEASE if offset in (4, 5) else AcknowledgeType.ACCEPT,
        )
    finally:
        await asyncio.to_thread(consumer.close)
    assert await _start_offsets(source, "jobs") == {PARTITION: 4}

    report = await manager_of(destination).refresh_now(MIRROR)

    assert report.group_commits == [CommitGroupOffsets("jobs", GroupType.SHARE, {ORDERS_0: 4})]
    assert not report.errors
    assert await _start_offsets(destination, "jobs") == {PARTITION: 4}
    again = await manager_of(destination).refresh_now(MIRROR)
    assert (again.group_commits, again.errors) == ([], {})

    await _fail_over(destination, wait_for)
    consumer = await asyncio.to_thread(_share_consumer, destination.bootstrap, "jobs")
    try:
        on_destination = await asyncio.to_thread(_share_consume, consumer, set(range(4, 10)))
    finally:
        await asyncio.to_thread(consumer.close)
    assert sorted({(o, v) for o, _, v in on_destination}) == [
        (o, b"r-%d" % o) for o in range(4, 10)
    ]
    assert {count for _, count, _ in on_destination} == {1}
    accepted_on_source = {o for o, _, _ in on_source} - {4, 5}
    reprocessed = accepted_on_source & {o for o, _, _ in on_destination}
    assert reprocessed == {6, 7, 8, 9}


async def test_a_share_start_offset_never_moves_back_even_when_the_group_is_not_listed(
    start_cluster: Any, wait_for: Any
) -> None:
    """After a destination restart the share group is not listed there (its membership is
    not persisted) but its start offset is; a source reset to an earlier offset must not
    carry it back."""
    source, destination = await _clusters(start_cluster)
    await mirror_topic(source.bootstrap, destination, "orders")
    await asyncio.to_thread(_read_from_earliest, source.bootstrap, "jobs")
    await produce(source.bootstrap, "orders", 6, tag="r", partitions=1)
    consumer = await asyncio.to_thread(_share_consumer, source.bootstrap, "jobs")
    try:
        await asyncio.to_thread(_share_consume, consumer, set(range(6)))
    finally:
        await asyncio.to_thread(consumer.close)
    await manager_of(destination).refresh_now(MIRROR)
    assert await _start_offsets(destination, "jobs") == {PARTITION: 6}
    broker = broker_of(destination)
    await broker.stop()
    await broker.start()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        assert "jobs" not in {g.group_id for g in await admin.list_consumer_groups()}
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.alter_share_group_offsets("jobs", {PARTITION: 2})).all()

    report = await wait_for(
        lambda: manager_of(destination).refresh_now(MIRROR), timeout=20, message="a cycle"
    )

    assert (report.group_commits, report.errors) == ([], {})
    assert await _start_offsets(destination, "jobs") == {PARTITION: 6}


async def test_a_source_without_describe_share_group_offsets_leaves_share_groups_unsynced(
    start_cluster: Any,
) -> None:
    """The spec's compatibility rule: "mirroring continues but share group offsets won't
    be synchronized". The share group is reported unread; the consumer group is synced."""
    source = await start_cluster(
        "primary",
        configs={**SOURCE_CONFIGS, **GROUP_PROTOCOL_CONFIGS, "test.hidden.api.keys": "90"},
    )
    destination = await start_cluster(
        "backup", configs={**DESTINATION_CONFIGS, **GROUP_PROTOCOL_CONFIGS, **ON_DEMAND_SYNC}
    )
    await mirror_topic(source.bootstrap, destination, "orders")
    await asyncio.to_thread(_read_from_earliest, source.bootstrap, "jobs")
    await produce(source.bootstrap, "orders", 4, tag="r", partitions=1)
    consumer = await asyncio.to_thread(_share_consumer, source.bootstrap, "jobs")
    try:
        await asyncio.to_thread(_share_consume, consumer, set(range(4)))
    finally:
        await asyncio.to_thread(consumer.close)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.alter_consumer_group_offsets("app", {PARTITION: 3})).all()

    report = await manager_of(destination).refresh_now(MIRROR)

    assert report.unread_groups == ["jobs"]
    assert report.group_commits == [CommitGroupOffsets("app", GroupType.CLASSIC, {ORDERS_0: 3})]
    assert not report.errors
    async with Admin(bootstrap=destination.bootstrap) as admin:
        assert await admin.list_share_group_offsets("jobs", ["orders"]) == {}


async def test_a_share_group_with_members_on_the_destination_is_left_alone(
    start_cluster: Any, wait_for: Any
) -> None:
    """The destination's member has read 0-1 (start offset 2) when the source's reader
    has read 0-5: the source is ahead, but the destination's consumers own the group."""
    source, destination = await _clusters(start_cluster)
    await mirror_topic(source.bootstrap, destination, "orders")
    for cluster in (source, destination):
        await asyncio.to_thread(_read_from_earliest, cluster.bootstrap, "jobs")
    await produce(source.bootstrap, "orders", 2, tag="r", partitions=1)
    await wait_for(lambda: mirrored_up_to(source, destination, "orders", 0), timeout=20)
    member = await asyncio.to_thread(_share_consumer, destination.bootstrap, "jobs")
    try:
        await asyncio.to_thread(_share_consume, member, {0, 1})
        await produce(source.bootstrap, "orders", 4, tag="s", partitions=1)
        reader = await asyncio.to_thread(_share_consumer, source.bootstrap, "jobs")
        try:
            await asyncio.to_thread(_share_consume, reader, set(range(6)))
        finally:
            await asyncio.to_thread(reader.close)

        report = await manager_of(destination).refresh_now(MIRROR)
    finally:
        await asyncio.to_thread(member.close)

    assert report.skipped_active_groups == ["jobs"]
    assert (report.group_commits, report.errors) == ([], {})
    assert await _start_offsets(destination, "jobs") == {PARTITION: 2}


async def test_a_share_group_and_a_consumer_group_of_one_name_conflict_and_others_sync(
    start_cluster: Any, wait_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Source: share group `jobs`, consumer group `app`. Destination: consumer group
    `jobs`. The conflict is reported, logged and counted; `app` is synced all the same."""
    source, destination = await _clusters(start_cluster)
    await mirror_topic(source.bootstrap, destination, "orders")
    await asyncio.to_thread(_read_from_earliest, source.bootstrap, "jobs")
    await produce(source.bootstrap, "orders", 4, tag="r", partitions=1)
    consumer = await asyncio.to_thread(_share_consumer, source.bootstrap, "jobs")
    try:
        await asyncio.to_thread(_share_consume, consumer, set(range(4)))
    finally:
        await asyncio.to_thread(consumer.close)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.alter_consumer_group_offsets("app", {PARTITION: 3})).all()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.alter_consumer_group_offsets("jobs", {PARTITION: 1})).all()
    metrics_port = broker_of(destination).metrics.port
    counted_before = (await scrape(metrics_port))[SYNC_ERRORS]

    with caplog.at_level(logging.WARNING, logger="mirrorsim.coordinator.sync_executor"):
        report = await manager_of(destination).refresh_now(MIRROR)

    assert report.group_conflicts == [GroupConflict("jobs", GroupType.SHARE, GroupType.CLASSIC)]
    assert report.errors == {SyncError.CONSUMER_GROUP_OFFSET: 1}
    assert (await scrape(metrics_port))[SYNC_ERRORS] == counted_before + 1
    assert "group jobs is a share group on the source but a classic group" in caplog.text
    assert [commit.group_id for commit in report.group_commits] == ["app"]
    async with Admin(bootstrap=destination.bootstrap) as admin:
        assert (await admin.list_consumer_group_offsets("jobs"))[PARTITION].offset == 1
        assert (await admin.list_consumer_group_offsets("app"))[PARTITION].offset == 3


async def test_a_consumer_group_on_the_source_conflicts_with_a_share_group_here(
    start_cluster: Any, wait_for: Any
) -> None:
    source, destination = await _clusters(start_cluster)
    await mirror_topic(source.bootstrap, destination, "orders")
    await produce(source.bootstrap, "orders", 4, tag="r", partitions=1)
    await wait_for(lambda: mirrored_up_to(source, destination, "orders", 0), timeout=20)
    await asyncio.to_thread(_read_from_earliest, destination.bootstrap, "jobs")
    member = await asyncio.to_thread(_share_consumer, destination.bootstrap, "jobs")
    try:
        await asyncio.to_thread(_share_consume, member, {0})
    finally:
        await asyncio.to_thread(member.close)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.alter_consumer_group_offsets("jobs", {PARTITION: 3})).all()

    report = await manager_of(destination).refresh_now(MIRROR)

    assert report.group_conflicts == [GroupConflict("jobs", GroupType.CLASSIC, GroupType.SHARE)]
    assert report.errors == {SyncError.CONSUMER_GROUP_OFFSET: 1}
    assert report.group_commits == []


async def test_a_consumer_protocol_group_is_synced_and_resumes_after_failover(
    start_cluster: Any, wait_for: Any
) -> None:
    """A KIP-848 group is listed as type `consumer` and read with an admin's OffsetFetch
    (no member id) while its member is live; the destination takes the simple commit,
    and a `group.protocol=consumer` member resumes there at the synced offset."""
    source, destination = await _clusters(start_cluster)
    await mirror_topic(source.bootstrap, destination, "orders")
    await produce(source.bootstrap, "orders", 10, tag="r", partitions=1)
    await wait_for(lambda: mirrored_up_to(source, destination, "orders", 0), timeout=20)
    consumer = await asyncio.to_thread(_consumer, source.bootstrap, "app", "earliest")
    try:
        seen = await asyncio.to_thread(_consume, consumer, 4)
        assert [offset for offset, _ in seen] == [0, 1, 2, 3]
        await asyncio.to_thread(
            consumer.commit, offsets=[ClientTopicPartition("orders", 0, 4)], asynchronous=False
        )
        async with Admin(bootstrap=source.bootstrap) as admin:
            (listing,) = [g for g in await admin.list_consumer_groups() if g.group_id == "app"]
        assert (listing.group_type, listing.state) == ("consumer", "Stable")

        report = await manager_of(destination).refresh_now(MIRROR)
    finally:
        await asyncio.to_thread(consumer.close)

    assert report.group_commits == [CommitGroupOffsets("app", GroupType.CONSUMER, {ORDERS_0: 4})]
    assert not report.errors
    async with Admin(bootstrap=destination.bootstrap) as admin:
        committed = await admin.list_consumer_group_offsets("app")
    assert committed[PARTITION].offset == 4

    await _fail_over(destination, wait_for)
    consumer = await asyncio.to_thread(_consumer, destination.bootstrap, "app", "latest")
    try:
        resumed = await asyncio.to_thread(_consume, consumer, 1)
    finally:
        await asyncio.to_thread(consumer.close)
    assert resumed == [(4, b"r-4")]
