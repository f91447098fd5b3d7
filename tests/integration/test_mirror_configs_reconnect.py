"""Changing a mirror's ``bootstrap.servers`` points the mirror at the new source."""

from __future__ import annotations

from typing import Any

import pytest
from test_mirror_helpers import MIRROR, MIRROR_CONFIGS, broker_of, partition_log, produce

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


@pytest.mark.xfail(
    strict=True,
    reason="running fetchers keep their source connection: MirrorCoordinator does not "
    "restart a mirror's fetchers when its connection settings change",
)
async def test_running_fetchers_move_to_the_new_bootstrap(
    moved: tuple[Any, Any, Any], wait_for: Any
) -> None:
    _, new, destination = moved
    new_address = new.bootstrap.rpartition(":")[2]

    def fetching_from_new() -> bool:
        fetchers = broker_of(destination).mirrors.fetchers.fetchers.values()
        return bool(fetchers) and all(
            str(port) == new_address for f in fetchers for _, port in f.client.bootstrap
        )

    await wait_for(fetching_from_new, timeout=5, message="fetchers on the new source")
