"""Kafka's ``ConfigResource.Type`` numbering, shared by the config handlers."""

from __future__ import annotations

import enum
from typing import Any

from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError


class ConfigResourceType(enum.IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32
    MIRROR = 64


def unsupported_in_version(
    resource_type: int, api_version: int, mirror_since: int
) -> KafkaError | None:
    """A MIRROR resource in a version older than the one KIP-1279 bumped to is a type that
    version does not know: Kafka answers a resource type it does not support with
    INVALID_REQUEST for that resource, before authorization. None when it is fine."""
    if resource_type != ConfigResourceType.MIRROR or api_version >= mirror_since:
        return None
    return KafkaError(
        ErrorCode.INVALID_REQUEST,
        f"Unsupported resource type MIRROR ({resource_type}) before version {mirror_since}",
    )


def acl_resource(resource_type: int, name: str) -> tuple[ResourceType, str] | None:
    """The ACL resource whose DESCRIBE_CONFIGS/ALTER_CONFIGS a config resource needs, as
    Kafka checks it: topics and groups themselves, brokers through the cluster, mirrors
    through their ClusterMirror. None for types the config handlers refuse anyway."""
    if resource_type == ConfigResourceType.TOPIC:
        return ResourceType.TOPIC, name
    if resource_type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER):
        return ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    if resource_type == ConfigResourceType.MIRROR:
        return ResourceType.CLUSTER_MIRROR, name
    if resource_type == ConfigResourceType.GROUP:
        return ResourceType.GROUP, name
    return None


def group_name(name: str) -> str:
    """A GROUP resource's group id; INVALID_REQUEST for an empty one, as Kafka answers."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    return name


async def current_topic(broker: HandlerBroker, name: str) -> Any:
    """The topic's record, reading the store once more if this broker's snapshot lacks it:
    a topic created through another broker a moment ago is not reported unknown."""
    topic = broker.snapshot.topics.get(name)
    if topic is None:
        await broker.refresh_metadata()
        topic = broker.snapshot.topics.get(name)
    return topic
