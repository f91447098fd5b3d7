"""Mirrors with metadata sync: cluster configs, source-config changes and synced topic configs."""

from __future__ import annotations

from typing import Any

from helpers.mirrors import (
    MIRROR,
    broker_of,
)
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
)

REFRESH_MS = 200


SOURCE_CONFIGS = {"mirror.topic.num.partitions": 3}


DESTINATION_CONFIGS = {
    "mirror.topic.num.partitions": 3,
    "mirror.fetch.max.wait.ms": 50,
    "mirror.metadata.refresh.interval.ms": REFRESH_MS,
}


def manager_of(cluster: Any) -> Any:
    return broker_of(cluster).mirror_metadata


def topic_configs(cluster: Any, topic: str) -> dict[str, str]:
    return dict(broker_of(cluster).snapshot.topics[topic].configs)


async def mirror_topic(
    source_bootstrap: str, destination: Any, topic: str, partitions: int = 1, **configs: str
) -> None:
    async with Admin(bootstrap=source_bootstrap) as admin:
        (await admin.create_topics([NewTopic(topic, partitions, 1, configs)])).all()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source_bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [topic])).all()


async def set_source_config(bootstrap: str, topic: str, name: str, value: str) -> None:
    async with Admin(bootstrap=bootstrap) as admin:
        resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        (await admin.incremental_alter_configs({resource: [AlterConfigOp(name, value)]})).all()
