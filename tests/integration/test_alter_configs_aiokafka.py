"""AlterConfigs (API 33) through aiokafka's ``alter_configs``, which speaks nothing else:
the given configs replace a resource's overrides, a refused value answers INVALID_CONFIG
and stores nothing, and broker resources reach the broker they name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from mirrorsim.broker.config import ConfigSource
from mirrorsim.protocol.errors import ErrorCode

TOPIC_CONFIG_SOURCE = int(ConfigSource.TOPIC_CONFIG)


@pytest.fixture
async def cluster(start_cluster: Any) -> Any:
    return await start_cluster(brokers=2)


@pytest.fixture
async def admin(cluster: Any) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    await client.start()
    yield client
    await client.close()


async def _topic_overrides(admin: AIOKafkaAdminClient, topic: str) -> dict[str, str]:
    (response,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    (result,) = response.resources
    assert result[0] == ErrorCode.NONE
    # entries (v1+): (name, value, read_only, config_source, is_sensitive, synonyms)
    return {e[0]: e[1] for e in result[4] if e[3] == TOPIC_CONFIG_SOURCE}


def _errors(responses: list[Any]) -> list[tuple[int, str]]:
    return [(r[0], r[3]) for response in responses for r in response.resources]


async def test_alter_configs_replaces_a_topics_overrides(
    admin: AIOKafkaAdminClient, cluster: Any, wait_for: Any
) -> None:
    await admin.create_topics(
        [NewTopic("legacy", 1, 1, topic_configs={"retention.ms": "1000", "flush.ms": "5"})]
    )
    responses = await admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, "legacy", {"segment.ms": "60000"})]
    )
    assert _errors(responses) == [(ErrorCode.NONE, "legacy")]
    await wait_for(
        lambda: all(
            "legacy" in b.snapshot.topics
            and b.snapshot.topics["legacy"].configs == {"segment.ms": "60000"}
            for b in cluster.brokers
        ),
        message="the new overrides known to both brokers",
    )
    assert await _topic_overrides(admin, "legacy") == {"segment.ms": "60000"}


async def test_a_refused_value_stores_nothing(admin: AIOKafkaAdminClient) -> None:
    await admin.create_topics([NewTopic("kept", 1, 1, topic_configs={"retention.ms": "1000"})])
    responses = await admin.alter_configs(
        [
            ConfigResource(
                ConfigResourceType.TOPIC,
                "kept",
                {"segment.ms": "60000", "cleanup.policy": "shred"},
            )
        ]
    )
    assert _errors(responses) == [(ErrorCode.INVALID_CONFIG, "kept")]
    assert await _topic_overrides(admin, "kept") == {"retention.ms": "1000"}


async def test_alter_configs_on_an_unknown_topic(admin: AIOKafkaAdminClient) -> None:
    responses = await admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, "nowhere", {"segment.ms": "60000"})]
    )
    assert _errors(responses) == [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "nowhere")]


async def test_alter_configs_on_a_broker(admin: AIOKafkaAdminClient, cluster: Any) -> None:
    responses = await admin.alter_configs(
        [ConfigResource(ConfigResourceType.BROKER, "2", {"log.retention.ms": "7200000"})]
    )
    assert _errors(responses) == [(ErrorCode.NONE, "2")]
    second = next(b for b in cluster.brokers if b.broker_id == 2)
    await second.refresh_metadata()
    assert second.config("log.retention.ms") == 7_200_000
    first = next(b for b in cluster.brokers if b.broker_id == 1)
    await first.refresh_metadata()
    assert first.config("log.retention.ms") == 604_800_000

    static = await admin.alter_configs(
        [ConfigResource(ConfigResourceType.BROKER, "2", {"num.replica.fetchers": "4"})]
    )
    assert _errors(static) == [(ErrorCode.INVALID_CONFIG, "2")]
