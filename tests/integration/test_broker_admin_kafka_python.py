"""Admin operations through kafka-python's KafkaAdminClient (a blocking client, so every
call runs in a thread while the broker serves on the test's event loop)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pytest
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import (
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
)

T = TypeVar("T")


class Admin:
    def __init__(self, client: KafkaAdminClient) -> None:
        self.client = client

    async def __call__(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(method, *args, **kwargs)


@pytest.fixture
async def cluster(start_cluster: Any) -> Any:
    return await start_cluster(configs={"log.retention.ms": 3_600_000})


@pytest.fixture
async def admin(cluster: Any) -> AsyncIterator[tuple[Admin, KafkaAdminClient]]:
    client = await asyncio.to_thread(
        KafkaAdminClient, bootstrap_servers=cluster.bootstrap, request_timeout_ms=10_000
    )
    yield Admin(client), client
    await asyncio.to_thread(client.close)


def _topic_configs(client: KafkaAdminClient, topic: str, synonyms: bool = False) -> dict:
    result = client.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic)],
        include_synonyms=synonyms,
        config_filter="all",
    )
    return result["topic"][topic]


async def test_create_topics_validation_errors(admin: tuple[Admin, KafkaAdminClient]) -> None:
    call, client = admin
    with pytest.raises(InvalidTopicError):
        await call(client.create_topics, {"bad name!": {"num_partitions": 1}})
    with pytest.raises(InvalidPartitionsError):
        await call(client.create_topics, {"t0": {"num_partitions": 0}})
    with pytest.raises(InvalidReplicationFactorError):
        await call(client.create_topics, {"t1": {"num_partitions": 1, "replication_factor": 3}})
    with pytest.raises(InvalidConfigurationError):
        await call(client.create_topics, {"t2": {"configs": {"retention.ms": "soon"}}})
    with pytest.raises(InvalidConfigurationError):
        await call(client.create_topics, {"t3": {"configs": {"no.such.config": "1"}}})
    assert not {"t0", "t1", "t2", "t3"} & set(await call(client.list_topics))


async def test_validate_only_creates_nothing(admin: tuple[Admin, KafkaAdminClient]) -> None:
    call, client = admin
    await call(client.create_topics, {"dry": {"num_partitions": 2}}, validate_only=True)
    assert "dry" not in await call(client.list_topics)


async def test_describe_configs_sources_and_synonyms(
    admin: tuple[Admin, KafkaAdminClient],
) -> None:
    call, client = admin
    await call(client.create_topics, {"syn": {"configs": {"segment.ms": "60000"}}})
    configs = await call(_topic_configs, client, "syn", True)
    segment_ms = configs["segment.ms"]
    assert segment_ms["value"] == "60000"
    assert segment_ms["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    retention = configs["retention.ms"]
    assert retention["value"] == "3600000"
    assert retention["config_source"] == "STATIC_BROKER_CONFIG"
    assert [s["name"] for s in retention["synonyms"]] == ["log.retention.ms", "log.retention.ms"]
    assert [s["source"] for s in retention["synonyms"]] == [
        "STATIC_BROKER_CONFIG",
        "DEFAULT_CONFIG",
    ]


async def test_incremental_alter_topic_configs(admin: tuple[Admin, KafkaAdminClient]) -> None:
    call, client = admin
    await call(client.create_topics, {"alter": {"num_partitions": 1}})
    resource = ConfigResource(
        ConfigResourceType.TOPIC,
        "alter",
        {
            "retention.ms": (AlterConfigOp.SET, "5000"),
            "cleanup.policy": (AlterConfigOp.APPEND, "compact"),
        },
    )
    await call(client.alter_configs, [resource], raise_on_unknown=False, incremental=True)
    configs = await call(_topic_configs, client, "alter")
    assert configs["retention.ms"]["value"] == "5000"
    assert configs["cleanup.policy"]["value"] == "delete,compact"

    reset = ConfigResource(
        ConfigResourceType.TOPIC,
        "alter",
        {
            "retention.ms": (AlterConfigOp.DELETE, None),
            "cleanup.policy": (AlterConfigOp.SUBTRACT, "delete"),
        },
    )
    await call(client.alter_configs, [reset], raise_on_unknown=False, incremental=True)
    configs = await call(_topic_configs, client, "alter")
    assert configs["retention.ms"]["value"] == "3600000"
    assert configs["cleanup.policy"]["value"] == "compact"


async def test_incremental_alter_rejects_bad_values_and_mirror_name(
    admin: tuple[Admin, KafkaAdminClient], cluster: Any
) -> None:
    call, client = admin
    await call(client.create_topics, {"strict": {"num_partitions": 1}})
    for configs in (
        {"retention.ms": (AlterConfigOp.SET, "-7")},
        {"retention.ms": (AlterConfigOp.APPEND, "1")},
        {"mirror.name": (AlterConfigOp.SET, "m1")},
    ):
        resource = ConfigResource(ConfigResourceType.TOPIC, "strict", configs)
        result = await call(
            client.alter_configs, [resource], raise_on_unknown=False, incremental=True
        )
        assert result["topic"]["strict"] is not None
    assert cluster.brokers[0].snapshot.topics["strict"].configs == {}


async def test_incremental_alter_broker_config_is_seen_by_topics(
    admin: tuple[Admin, KafkaAdminClient],
) -> None:
    call, client = admin
    await call(client.create_topics, {"inherit": {"num_partitions": 1}})
    resource = ConfigResource(
        ConfigResourceType.BROKER, "1", {"log.retention.ms": (AlterConfigOp.SET, "120000")}
    )
    await call(client.alter_configs, [resource], raise_on_unknown=False, incremental=True)
    retention = (await call(_topic_configs, client, "inherit"))["retention.ms"]
    assert retention["value"] == "120000"
    assert retention["config_source"] == "DYNAMIC_BROKER_CONFIG"


async def test_acl_create_describe_delete(admin: tuple[Admin, KafkaAdminClient]) -> None:
    call, client = admin
    acl = ACL(
        principal="User:alice",
        host="*",
        operation=ACLOperation.READ,
        permission_type=ACLPermissionType.ALLOW,
        resource_pattern=ResourcePattern(
            ResourceType.TOPIC, "orders-", ACLResourcePatternType.PREFIXED
        ),
    )
    created = await call(client.create_acls, [acl])
    assert created["failed"] == []
    match_filter = ACLFilter(
        principal=None,
        host=None,
        operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(
            ResourceType.TOPIC, "orders-eu", ACLResourcePatternType.MATCH
        ),
    )
    found, error = await call(client.describe_acls, match_filter)
    assert [a.principal for a in found] == ["User:alice"]
    assert error.errno == 0
    deleted = await call(client.delete_acls, [match_filter])
    assert len(deleted[0][1]) == 1
    found, _ = await call(client.describe_acls, match_filter)
    assert found == []
