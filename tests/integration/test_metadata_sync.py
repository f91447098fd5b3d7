"""MirrorMetadataManager between two in-process clusters: topic configs, partitions,
consumer group offsets, ACLs and the source cluster id guard."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from helpers.metadata_sync import (
    DESTINATION_CONFIGS,
    SOURCE_CONFIGS,
    manager_of,
    mirror_topic,
    set_source_config,
    topic_configs,
)
from helpers.mirrors import (
    MIRROR,
    broker_of,
    mirror_state,
    mirrored_up_to,
    partition_log,
    produce,
    produce_error_code,
)

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.broker.metrics.mirror import SyncError
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    NewTopic,
    ResourceType,
)
from mirrorsim.client.admin_types import TopicPartition as AdminTopicPartition
from mirrorsim.coordinator.source_deletions import SourceDeletionStopper
from mirrorsim.coordinator.sync import (
    AlterTopicConfigs,
    ClusterIdCheck,
    StopMirrorPartitions,
    StopReason,
)

ALICE_READS_ORDERS = AclBinding(ResourceType.TOPIC, "orders", "User:alice", AclOperation.READ)


async def _consume(consumer: AIOKafkaConsumer, tp: TopicPartition, count: int) -> list[Any]:
    seen: list[Any] = []
    while len(seen) < count:
        batch = await consumer.getmany(tp, timeout_ms=1000, max_records=count - len(seen))
        seen += batch.get(tp, [])
    return seen


async def test_a_source_config_change_reaches_the_destination_on_schedule(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders", **{"retention.ms": "3600000"})
    assert topic_configs(destination, "orders")["retention.ms"] == "3600000"

    await set_source_config(source.bootstrap, "orders", "retention.ms", "7200000")
    await set_source_config(source.bootstrap, "orders", "max.message.bytes", "65536")

    def synced() -> bool:
        configs = topic_configs(destination, "orders")
        wanted = {"retention.ms": "7200000", "max.message.bytes": "65536"}
        return all(configs.get(name) == value for name, value in wanted.items())

    await wait_for(synced, timeout=10, message="the source configs on the destination")
    assert topic_configs(destination, "orders")["mirror.name"] == MIRROR


async def test_a_cycle_over_equal_clusters_changes_nothing(start_cluster: Any) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders", **{"retention.ms": "3600000"})
    await manager_of(destination).refresh_now(MIRROR)

    report = await manager_of(destination).refresh_now(MIRROR)

    assert report.cluster_id_check is ClusterIdCheck.OK
    assert report.source_cluster_id == source.cluster_id
    assert (report.topic_operations, report.group_commits, report.acl_operations) == ([], [], [])
    assert not report.errors


async def test_a_destination_only_override_is_reset_and_excluded_ones_are_kept(
    start_cluster: Any,
) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    await set_source_config(destination.bootstrap, "orders", "segment.ms", "60000")
    await set_source_config(destination.bootstrap, "orders", "min.insync.replicas", "1")

    report = await manager_of(destination).refresh_now(MIRROR)

    assert report.topic_operations == [AlterTopicConfigs("orders", {}, frozenset({"segment.ms"}))]
    configs = topic_configs(destination, "orders")
    assert "segment.ms" not in configs
    assert configs["min.insync.replicas"] == "1"


async def test_a_partition_added_at_the_source_is_mirrored_with_its_data(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders", partitions=2)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_partitions({"orders": 3})).all()
    await produce(source.bootstrap, "orders", 9, partitions=3)

    await manager_of(destination).refresh_now(MIRROR)

    assert len(broker_of(destination).snapshot.topics["orders"].partitions) == 3
    await wait_for(lambda: mirrored_up_to(source, destination, "orders", 2), timeout=20)


async def test_group_offsets_follow_the_source_and_a_failed_over_consumer_resumes(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    await produce(source.bootstrap, "orders", 10, tag="r", partitions=1)
    tp = TopicPartition("orders", 0)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=source.bootstrap,
        group_id="app",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        consumer.assign([tp])
        seen = await asyncio.wait_for(_consume(consumer, tp, 4), timeout=20)
        assert [r.offset for r in seen] == [0, 1, 2, 3]
        await consumer.commit({tp: 4})
    finally:
        await consumer.stop()
    await wait_for(lambda: mirrored_up_to(source, destination, "orders", 0), timeout=20)

    report = await manager_of(destination).refresh_now(MIRROR)

    assert [c.group_id for c in report.group_commits] == ["app"]
    async with Admin(bootstrap=destination.bootstrap) as admin:
        committed = await admin.list_consumer_group_offsets("app")
    assert committed[AdminTopicPartition("orders", 0)].offset == 4
    failed_over = AIOKafkaConsumer(
        bootstrap_servers=destination.bootstrap,
        group_id="app",
        enable_auto_commit=False,
        auto_offset_reset="latest",
    )
    await failed_over.start()
    try:
        failed_over.assign([tp])
        record = await asyncio.wait_for(failed_over.getone(), timeout=20)
    finally:
        await failed_over.stop()
    assert (record.offset, record.value) == (4, b"r-4")


async def test_group_offsets_never_move_backwards(start_cluster: Any) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    partition = AdminTopicPartition("orders", 0)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.alter_consumer_group_offsets("app", {partition: 7})).all()
        await manager_of(destination).refresh_now(MIRROR)
        (await admin.alter_consumer_group_offsets("app", {partition: 2})).all()

    report = await manager_of(destination).refresh_now(MIRROR)

    assert report.group_commits == []
    async with Admin(bootstrap=destination.bootstrap) as admin:
        assert (await admin.list_consumer_group_offsets("app"))[partition].offset == 7


async def test_an_acl_created_then_deleted_on_the_source_follows_on_the_destination(
    start_cluster: Any,
) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    manager = manager_of(destination)
    async with (
        Admin(bootstrap=source.bootstrap) as source_admin,
        Admin(bootstrap=destination.bootstrap) as destination_admin,
    ):
        (await source_admin.create_acls([ALICE_READS_ORDERS])).all()
        await manager.refresh_now(MIRROR)
        assert await destination_admin.describe_acls() == [ALICE_READS_ORDERS]

        await source_admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, "orders")])
        await manager.refresh_now(MIRROR)
        assert await destination_admin.describe_acls() == []


async def test_a_replaced_source_cluster_halts_the_sync_of_the_mirror(
    start_cluster: Any, free_port: Any, tmp_path: Path
) -> None:
    port = free_port()
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    original = ClusterRunner(ClusterSpec("original", tmp_path / "original", port=port))
    replacement = ClusterRunner(ClusterSpec("replacement", tmp_path / "replacement", port=port))
    await original.start()
    try:
        bootstrap, original_id = original.bootstrap, original.cluster_id
        await mirror_topic(bootstrap, destination, "orders")
        manager = manager_of(destination)
        first = await manager.refresh_now(MIRROR)
        assert first.source_cluster_id == original_id
        await original.stop()
        await replacement.start()
        assert replacement.bootstrap == bootstrap
        assert replacement.cluster_id != original_id
        async with Admin(bootstrap=bootstrap) as admin:
            (await admin.create_topics([NewTopic("orders", 1, 1, {"retention.ms": "1000"})])).all()
        errors_before = manager.error_counts[SyncError.METADATA_REFRESH]

        report = await manager.refresh_now(MIRROR)

        assert report.halted
        assert report.source_cluster_id == replacement.cluster_id
        assert report.topic_operations == []
        assert report.errors == {SyncError.METADATA_REFRESH: 1}
        assert manager.error_counts[SyncError.METADATA_REFRESH] > errors_before
        assert "retention.ms" not in topic_configs(destination, "orders")
    finally:
        await replacement.stop()
        await original.stop()


async def test_a_topic_deleted_at_the_source_stops_its_partitions_and_no_other_topic(
    start_cluster: Any, wait_for: Any
) -> None:
    """The destination keeps the data instead of following the deletion; the topic stays
    in the mirror, STOPPED and writable, until the operator removes it."""
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("payments", 1, 1)])).all()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.add_topics_to_mirror(MIRROR, ["payments"])).all()
    for topic in ("orders", "payments"):
        await produce(source.bootstrap, topic, 5, partitions=1)
        await wait_for(lambda t=topic: mirrored_up_to(source, destination, t, 0), timeout=20)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.delete_topics(["orders"])).all()

    report = await manager_of(destination).refresh_now(MIRROR)

    assert report.topic_operations == [
        StopMirrorPartitions("orders", StopReason.SOURCE_TOPIC_DELETED)
    ]
    await wait_for(lambda: mirror_state(destination, "orders", 0) == "STOPPED", timeout=20)
    assert topic_configs(destination, "orders")["mirror.name"] == MIRROR
    assert partition_log(destination, "orders", 0).log_end_offset >= 5
    assert await produce_error_code(destination.bootstrap, "orders") == 0
    await produce(source.bootstrap, "payments", 3, partitions=1)
    await wait_for(lambda: mirrored_up_to(source, destination, "payments", 0), timeout=20)
    assert mirror_state(destination, "payments", 0) == "MIRRORING"
    again = await manager_of(destination).refresh_now(MIRROR)
    assert (again.topic_operations, again.errors) == ([], {})
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (listing,) = await admin.list_mirrors()
        assert listing.topic_count == 2
        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()
    await broker_of(destination).refresh_metadata()
    assert mirror_state(destination, "orders", 0) == "STOPPED"


async def test_stopping_a_topic_deleted_here_meanwhile_is_not_an_error(
    start_cluster: Any,
) -> None:
    """The sync decided to stop a mirror topic whose source was deleted, but the topic was
    deleted on the destination too before the stop was written (the snapshot the sync
    read still had it): nothing is left to stop, and the sync stage does not fail."""
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    broker = broker_of(destination)
    broker.store.delete_topic("orders")
    assert "orders" in broker.snapshot.topics

    await SourceDeletionStopper(broker).stop_mirror_topic(
        MIRROR, "orders", StopReason.SOURCE_TOPIC_DELETED
    )

    await broker.refresh_metadata()
    assert "orders" not in broker.snapshot.topics
