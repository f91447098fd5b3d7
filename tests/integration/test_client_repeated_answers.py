"""A repeated Metadata or DescribeConfigs answer is decoded once, and a changed one never
passes for the last: a mirror's sync asks its source both questions every cycle, and at
100,000 partitions decoding the same answers again was a fifth of an idle broker's CPU.
Against a real broker, through the project's client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    NewTopic,
)

CLIENT = {
    "retry.backoff.ms": "10",
    "retry.backoff.max.ms": "100",
    "default.api.timeout.ms": "10000",
}


@pytest.fixture
async def admin(start_cluster: Any) -> AsyncIterator[Admin]:
    cluster: ClusterRunner = await start_cluster()
    async with Admin(bootstrap=cluster.bootstrap, config=CLIENT) as started:
        (await started.create_topics([NewTopic("orders", 3, 1), NewTopic("audit", 1, 1)])).all()
        yield started


async def test_an_unchanged_metadata_answer_gives_the_same_view(admin: Admin) -> None:
    first = await admin.cluster.refresh_metadata(["orders", "audit"])
    again = await admin.cluster.refresh_metadata(["orders", "audit"])
    assert again is first
    assert sorted(again.topics["orders"].partitions) == [0, 1, 2]


async def test_a_changed_metadata_answer_is_read_afresh(admin: Admin) -> None:
    first = await admin.cluster.refresh_metadata(["orders", "audit"])
    (await admin.create_partitions({"orders": 5})).all()
    grown = await admin.cluster.refresh_metadata(["orders", "audit"])
    assert grown is not first
    assert sorted(grown.topics["orders"].partitions) == [0, 1, 2, 3, 4]
    assert await admin.cluster.refresh_metadata(["orders", "audit"]) is grown


async def test_a_changed_configs_answer_is_read_afresh(admin: Admin) -> None:
    topics = [ConfigResource(ConfigResourceType.TOPIC, n) for n in ("orders", "audit")]
    first = await admin.describe_configs(topics)
    assert first[topics[0]]["retention.ms"].value == "604800000"
    orders_retention = {topics[0]: [AlterConfigOp("retention.ms", "60000")]}
    (await admin.incremental_alter_configs(orders_retention)).all()
    altered = await admin.describe_configs(topics)
    assert altered[topics[0]]["retention.ms"].value == "60000"
    assert altered[topics[1]]["retention.ms"].value == "604800000"
    cluster_default = ConfigResource(ConfigResourceType.BROKER, "")
    default_retention = {cluster_default: [AlterConfigOp("log.retention.ms", "120000")]}
    (await admin.incremental_alter_configs(default_retention)).all()
    defaulted = (await admin.describe_configs(topics))[topics[1]]["retention.ms"]
    assert (defaulted.value, defaulted.source) == (
        "120000",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
