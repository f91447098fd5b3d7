"""The source cluster id guard outlives the broker that first saw the source: it is stored
with the mirror, so another destination broker and a restarted one still detect a source
replaced behind the same address, and ListMirrors reports the stored id everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.metadata_sync import DESTINATION_CONFIGS, mirror_topic
from helpers.mirrors import MIRROR

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.broker.metrics.mirror import SyncError
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.coordinator.sync import ClusterIdCheck
from mirrorsim.protocol.errors import KafkaError


def coordinator_and_other(cluster: ClusterRunner) -> tuple[Any, Any]:
    coordinator_id = cluster.brokers[0].mirror_metadata.coordinator_of(MIRROR)
    coordinator = next(b for b in cluster.brokers if b.broker_id == coordinator_id)
    other = next(b for b in cluster.brokers if b.broker_id != coordinator_id)
    return coordinator, other


async def listed_cluster_ids(bootstrap: str) -> list[str]:
    async with Admin(bootstrap=bootstrap) as admin:
        return [listing.source_cluster_id for listing in await admin.list_mirrors()]


async def replace_source(original: ClusterRunner, replacement: ClusterRunner) -> None:
    bootstrap = original.bootstrap
    await original.stop()
    await replacement.start()
    assert replacement.bootstrap == bootstrap
    async with Admin(bootstrap=bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1, {"retention.ms": "1000"})])).all()


async def test_another_and_a_restarted_broker_detect_a_replaced_source(
    start_cluster: Any, free_port: Any, tmp_path: Path
) -> None:
    port = free_port()
    destination = await start_cluster("backup", brokers=2, configs=DESTINATION_CONFIGS)
    original = ClusterRunner(ClusterSpec("original", tmp_path / "original", port=port))
    replacement = ClusterRunner(ClusterSpec("replacement", tmp_path / "replacement", port=port))
    await original.start()
    try:
        original_id = original.cluster_id
        await mirror_topic(original.bootstrap, destination, "orders")
        coordinator, other = coordinator_and_other(destination)
        first = await coordinator.mirror_metadata.refresh_now(MIRROR)
        assert first.cluster_id_check is ClusterIdCheck.OK  # stored when add_topics connected
        for broker in destination.brokers:
            assert await listed_cluster_ids(broker.bootstrap) == [original_id]
        await replace_source(original, replacement)

        async with Admin(bootstrap=replacement.bootstrap) as source:
            config = {"bootstrap.servers": replacement.bootstrap}
            on_other = await other.mirror_metadata.executor.run_cycle(MIRROR, config, source)
        assert on_other.halted
        assert on_other.source_cluster_id == replacement.cluster_id

        await destination.stop()
        await destination.start()
        coordinator, _ = coordinator_and_other(destination)
        after_restart = await coordinator.mirror_metadata.refresh_now(MIRROR)

        assert after_restart.halted
        assert after_restart.errors == {SyncError.METADATA_REFRESH: 1}
        assert after_restart.topic_operations == []
        assert "retention.ms" not in coordinator.snapshot.topics["orders"].configs
        for broker in destination.brokers:
            assert await listed_cluster_ids(broker.bootstrap) == [original_id]
    finally:
        await replacement.stop()
        await original.stop()


async def test_a_deleted_mirror_forgets_its_source_cluster_id(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary")
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    async with Admin(bootstrap=destination.bootstrap) as admin:
        assert [m.source_cluster_id for m in await admin.list_mirrors()] == [source.cluster_id]
        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()

        async def deleted() -> bool:
            try:
                await admin.delete_mirror(MIRROR)
            except KafkaError:
                return False
            return True

        await wait_for(deleted, timeout=20, message="the mirror deleted once stopped")
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (listing,) = await admin.list_mirrors()
    assert listing.source_cluster_id == ""


async def test_a_cycle_of_a_mirror_deleted_meanwhile_ends_without_an_error(
    start_cluster: Any,
) -> None:
    """A sync cycle that started before a DeleteMirror records the source cluster id of a
    mirror that is gone: the store refuses it (KeyError), and the cycle ends there, with
    no error counted and nothing synced, instead of failing the job with a traceback."""
    source = await start_cluster("primary")
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    executor = destination.brokers[0].mirror_metadata.executor
    async with Admin(bootstrap=source.bootstrap) as admin:
        report = await executor.run_cycle(
            "deleted-mirror", {"bootstrap.servers": source.bootstrap}, admin
        )
    assert (report.errors, report.topic_operations, report.acl_operations) == ({}, [], [])
    assert report.source_cluster_id is None
