"""Metadata: brokers, topics with ids, partition leaders, epochs, ISR and offline replicas.

Topics a client names that do not exist are auto-created when both the request and
``auto.create.topics.enable`` allow it and the caller may CREATE on the cluster or the
topic (else TOPIC_AUTHORIZATION_FAILED), with the broker's default partition count and
replication factor, as Kafka does. On request (v8+) each topic and the cluster carry the
caller's authorized operations as Kafka's bit field. ``__consumer_offsets`` is presented
as Kafka's internal topic (``broker/group/offsets_topic.py``).
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import (
    authorized_names,
    authorized_operations,
    is_authorized,
)
from mirrorsim.broker.config import topic_name_error
from mirrorsim.broker.group.offsets_topic import OFFSETS_TOPIC, offsets_topic_id
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.handlers.topic_descriptions import (
    described_offsets_topic,
    described_topic,
    undescribed_topic,
)
from mirrorsim.broker.network.advertised import advertised_brokers
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import UNSET_AUTHORIZED_OPERATIONS

METADATA_KEY = 3


@handles(METADATA_KEY, min_version=0, max_version=13)
async def handle(ctx: RequestContext, body: Any) -> Any:
    broker = ctx.broker
    version = int(body.__version__)
    requested = body.topics
    all_topics = requested is None or (version == 0 and not requested)
    topics: list[dict[str, Any]] = []
    if all_topics:
        described = await authorized_names(
            ctx,
            AclOperation.DESCRIBE,
            ResourceType.TOPIC,
            [*broker.snapshot.topics, OFFSETS_TOPIC],
        )
        topics = [
            described_topic(record, broker)
            for name, record in sorted(broker.snapshot.topics.items())
            if name in described
        ]
        if OFFSETS_TOPIC in described:
            topics.append(described_offsets_topic(broker))
    else:
        allow_create = getattr(body, "allow_auto_topic_creation", True)
        for wanted in requested:
            if wanted.name is not None and not await is_authorized(
                ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, wanted.name
            ):
                denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                topics.append(undescribed_topic(wanted.name, None, denied))
                continue
            topics.append(await _requested_topic(ctx, wanted, allow_create))
    if getattr(body, "include_topic_authorized_operations", False):
        for topic in topics:
            if topic["error_code"] == ErrorCode.NONE:
                topic["topic_authorized_operations"] = await authorized_operations(
                    ctx, ResourceType.TOPIC, topic["name"]
                )
    cluster_operations = UNSET_AUTHORIZED_OPERATIONS
    if getattr(body, "include_cluster_authorized_operations", False):
        cluster_operations = await authorized_operations(
            ctx, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
        )
    live = await advertised_brokers(ctx, broker.live_brokers())
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "brokers": [
                {"node_id": b.broker_id, "host": host, "port": port, "rack": b.rack}
                for b, host, port in live
            ],
            "cluster_id": broker.cluster_id,
            "controller_id": broker.controller_id(),
            "topics": topics,
            "cluster_authorized_operations": cluster_operations,
            "error_code": ErrorCode.NONE,
        },
    )


async def _requested_topic(ctx: RequestContext, wanted: Any, allow_create: bool) -> dict[str, Any]:
    broker = ctx.broker
    topic_id = getattr(wanted, "topic_id", None)
    if wanted.name == OFFSETS_TOPIC or (
        wanted.name is None and topic_id == offsets_topic_id(broker.cluster_id)
    ):
        return described_offsets_topic(broker)
    if wanted.name is None:
        record = broker.snapshot.topic_by_id(topic_id)
        if record is None:
            return undescribed_topic(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
        return described_topic(record, broker)
    record = broker.snapshot.topics.get(wanted.name)
    if record is not None:
        return described_topic(record, broker)
    if topic_name_error(wanted.name):
        return undescribed_topic(wanted.name, None, ErrorCode.INVALID_TOPIC_EXCEPTION)
    if not (allow_create and broker.config("auto.create.topics.enable")):
        return undescribed_topic(wanted.name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not await _may_create(ctx, wanted.name):
        return undescribed_topic(wanted.name, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    try:
        record = await broker.controller.create_topic(wanted.name)
    except KafkaError as exc:
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            return undescribed_topic(wanted.name, None, exc.code)
        record = broker.snapshot.topics.get(wanted.name)
        if record is None:
            return undescribed_topic(wanted.name, None, ErrorCode.LEADER_NOT_AVAILABLE)
    return described_topic(record, broker)


async def _may_create(ctx: RequestContext, topic: str) -> bool:
    """Kafka's rule for auto-creation: CREATE on the cluster, or else on the topic."""
    return await is_authorized(
        ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    ) or await is_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, topic)
