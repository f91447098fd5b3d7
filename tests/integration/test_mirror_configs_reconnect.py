"""Changing a mirror's ``bootstrap.servers`` points the mirror at the new source."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.mirrors import MIRROR, MIRROR_CONFIGS, broker_of, partition_log, produce

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
)

RESOURCE = ConfigResource(ConfigResourceType.MIRROR, MIRROR)


@pytest.fixture
async def moved(start_cluster: Any, wait_for: Any) -> tuple[Any, Any, Any]:
    """A mirror copying ``orders`` from ``old``, then altered to bootstrap from ``new``."""
    old = await start_cluster("primary", configs=MIRROR_CONFIGS)
    new = await start_cluster("other", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=old.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    await produce(old.bootstrap, "orders", 5, tag="old")
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": old.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
        await wait_for(
            lambda: partition_log(destination, "orders", 0).log_end_offset == 5, timeout=20
        )
        change = {RESOURCE: [AlterConfigOp("bootstrap.servers", new.bootstrap)]}
        (await admin.incremental_alter_configs(change)).all()
    return old, new, destination


async def _cluster_id(cluster: Any) -> str | None:
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        return (await admin.describe_cluster()).cluster_id


async def test_the_mirror_source_client_reconnects_to_the_new_bootstrap(
    moved: tuple[Any, Any, Any],
) -> None:
    _, new, destination = moved
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (listing,) = await admin.list_mirrors()
    assert listing.source_bootstrap == new.bootstrap
    source = await broker_of(destination).mirrors.sources.client(MIRROR)
    assert source.cluster_id == await _cluster_id(new)


async def test_running_fetchers_move_to_the_new_bootstrap(
    moved: tuple[Any, Any, Any], wait_for: Any
) -> None:
    """After the alter, the partition continues from its log end on the new source.

    The new source holds the same topic (same id) with five records the destination
    already has offsets for, then three more: exactly those three batches' bytes must
    arrive, which only a fetcher connected to the new source can deliver.
    """
    _, new, destination = moved
    topic_id = broker_of(destination).replica_manager.topic_id("orders")
    await broker_of(new).controller.create_topic(
        "orders", num_partitions=1, replication_factor=1, topic_id=topic_id
    )
    await produce(new.bootstrap, "orders", 5, tag="prefix")
    await produce(new.bootstrap, "orders", 3, tag="new")
    await wait_for(
        lambda: partition_log(destination, "orders", 0).log_end_offset == 8,
        timeout=20,
        message="the destination caught up from the new source",
    )
    copied = [b.data for b in partition_log(destination, "orders", 0).batches(5)]
    expected = [b.data for b in partition_log(new, "orders", 0).batches(5)]
    assert copied == expected
