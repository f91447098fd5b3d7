"""Admin against a real in-process mirrorsim cluster: topics, configs, ACLs, offsets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    OffsetSpec,
    ResourceType,
    TopicPartition,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError

FAST = {"retry.backoff.ms": "10", "retry.backoff.max.ms": "100", "default.api.timeout.ms": "10000"}


@pytest.fixture
async def admin(start_cluster: Any) -> AsyncIterator[Admin]:
    cluster = await start_cluster("primary", brokers=2)
    async with Admin(bootstrap=cluster.bootstrap, config=FAST) as started:
        yield started


async def test_create_describe_and_delete_topics(admin: Admin) -> None:
    results = await admin.create_topics(
        [NewTopic("orders", 3, 2, {"retention.ms": "60000"}), NewTopic("audit", 1, 1)]
    )
    assert results == {"orders": None, "audit": None}
    assert {"orders", "audit"} <= set(await admin.list_topics())

    described = await admin.describe_topics(["orders"])
    orders = described["orders"]
    assert [p.partition for p in orders.partitions] == [0, 1, 2]
    assert all(len(p.replicas) == 2 and p.leader_id in p.replicas for p in orders.partitions)
    assert orders.topic_id is not None

    again = await admin.create_topics([NewTopic("orders", 1, 1)])
    assert again["orders"] is not None
    assert again["orders"].code is ErrorCode.TOPIC_ALREADY_EXISTS

    assert await admin.delete_topics(["audit"]) == {"audit": None}
    assert "audit" not in await admin.list_topics()
    with pytest.raises(KafkaError) as raised:
        await admin.describe_topics(["audit"])
    assert raised.value.code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_create_partitions_grows_a_topic(admin: Admin) -> None:
    (await admin.create_topics([NewTopic("grow", 1, 1)])).all()
    assert await admin.create_partitions({"grow": 3}) == {"grow": None}
    described = await admin.describe_topics(["grow"])
    assert len(described["grow"].partitions) == 3


async def test_topic_configs_round_trip(admin: Admin) -> None:
    (await admin.create_topics([NewTopic("configured", 1, 1)])).all()
    resource = ConfigResource(ConfigResourceType.TOPIC, "configured")
    altered = await admin.incremental_alter_configs(
        {resource: [AlterConfigOp("retention.ms", "12345")]}
    )
    assert altered == {resource: None}
    configs = (await admin.describe_configs([resource]))[resource]
    assert configs["retention.ms"].value == "12345"

    await admin.incremental_alter_configs(
        {resource: [AlterConfigOp("retention.ms", None, AlterConfigOpType.DELETE)]}
    )
    configs = (await admin.describe_configs([resource]))[resource]
    assert configs["retention.ms"].value != "12345"


async def test_describe_cluster_lists_every_broker(admin: Admin) -> None:
    described = await admin.describe_cluster()
    assert [b.node_id for b in described.brokers] == [1, 2]
    assert described.cluster_id
    assert described.controller_id in (1, 2)


async def test_acls_create_describe_delete(admin: Admin) -> None:
    binding = AclBinding(
        ResourceType.CLUSTER_MIRROR, "my-mirror", "User:mirror-admin", AclOperation.ALTER
    )
    assert await admin.create_acls([binding]) == {binding: None}
    mirror_acls = AclBindingFilter(resource_type=ResourceType.CLUSTER_MIRROR)
    assert await admin.describe_acls(mirror_acls) == [binding]
    deleted = await admin.delete_acls([mirror_acls])
    assert deleted == {mirror_acls: [binding]}
    assert await admin.describe_acls(mirror_acls) == []


async def test_list_offsets_and_delete_records_on_an_empty_topic(admin: Admin) -> None:
    (await admin.create_topics([NewTopic("empty", 2, 1)])).all()
    partitions = [TopicPartition("empty", p) for p in (0, 1)]
    latest = await admin.list_offsets({tp: OffsetSpec.LATEST for tp in partitions})
    earliest = await admin.list_offsets({tp: OffsetSpec.EARLIEST for tp in partitions})
    assert {tp: info.offset for tp, info in latest.items()} == {tp: 0 for tp in partitions}
    assert {tp: info.offset for tp, info in earliest.items()} == {tp: 0 for tp in partitions}
    assert await admin.delete_records({partitions[0]: 0}) == {partitions[0]: 0}
    with pytest.raises(KafkaError) as raised:
        await admin.list_offsets({TopicPartition("empty", 7): OffsetSpec.LATEST})
    assert raised.value.code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
