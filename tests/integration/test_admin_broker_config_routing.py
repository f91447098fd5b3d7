"""A BROKER config resource is answered by the broker it names, as Kafka's Admin routes it:
describing or altering broker 2 works whatever broker the client bootstrapped from."""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.config import ConfigSource
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
)

TRIES = 6


async def test_broker_configs_are_described_and_altered_by_the_named_broker(
    start_cluster: Any,
) -> None:
    cluster = await start_cluster(brokers=3)
    second = ConfigResource(ConfigResourceType.BROKER, "2")
    topic = ConfigResource(ConfigResourceType.TOPIC, "routed")
    for broker in cluster.brokers:
        async with Admin(bootstrap=broker.bootstrap) as admin:
            (await admin.create_topics([NewTopic(f"routed-{broker.broker_id}", 1, 1)])).all()
            for _ in range(TRIES):
                described = await admin.describe_configs([second])
                assert described[second]["broker.id"].value == "2"
    async with Admin(bootstrap=cluster.brokers[0].bootstrap) as admin:
        (await admin.create_topics([NewTopic("routed", 1, 1)])).all()
        ops = [AlterConfigOp("log.retention.ms", "7200000", AlterConfigOpType.SET)]
        outcome = await admin.incremental_alter_configs({second: ops, topic: []})
        outcome.all()
        described = await admin.describe_configs([second, topic])
    entry = described[second]["log.retention.ms"]
    assert (entry.value, entry.source) == ("7200000", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert "retention.ms" in described[topic]
