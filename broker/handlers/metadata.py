"""Metadata: brokers, topics with ids, partition leaders, epochs, ISR and offline replicas.

Topics a client names that do not exist are auto-created when both the request and
``auto.create.topics.enable`` allow it and the caller may CREATE on the cluster or the
topic (else TOPIC_AUTHORIZATION_FAILED), with the broker's default partition count and
replication factor, as Kafka does. On request (v8+) each topic and the cluster carry the
caller's authorized operations as Kafka's bit field. ``__consumer_offsets`` is presented
as Kafka's internal topic (``broker/group/offsets_topic.py``).

A topic the snapshot holds is answered from the broker's encoded entries when its record,
the live brokers and the caller's operations on it are unchanged (``metadata_cache.py``):
describing, building and encoding every partition again cost about 1.5 s of CPU a
response at 100,000 partitions. The answer is a ``SplicedMetadataResponse``.
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
from mirrorsim.broker.metadata.models import TopicRecord
from mirrorsim.broker.network.advertised import advertised_brokers
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import UNSET_AUTHORIZED_OPERATIONS
from mirrorsim.protocol.messages.metadata_topics import (
    EncodedTopic,
    SplicedMetadataResponse,
    encode_topic,
)

METADATA_KEY = 3


@handles(METADATA_KEY, min_version=0, max_version=13)
async def handle(ctx: RequestContext, body: Any) -> SplicedMetadataResponse:
    broker = ctx.broker
    version = int(body.__version__)
    requested = body.topics
    all_topics = requested is None or (version == 0 and not requested)
    live_brokers = broker.live_brokers()
    live = frozenset(b.broker_id for b in live_brokers)
    broker.metadata_topic_cache.prune(broker.snapshot.topics)
    encoder = _TopicEncoder(
        ctx, version, live, bool(getattr(body, "include_topic_authorized_operations", False))
    )
    topics: list[EncodedTopic] = []
    if all_topics:
        described = await authorized_names(
            ctx,
            AclOperation.DESCRIBE,
            ResourceType.TOPIC,
            [*broker.snapshot.topics, OFFSETS_TOPIC],
        )
        for name, record in sorted(broker.snapshot.topics.items()):
            if name in described:
                topics.append(await encoder.encode(record))
        if OFFSETS_TOPIC in described:
            topics.append(await encoder.encode(described_offsets_topic(broker)))
    else:
        allow_create = getattr(body, "allow_auto_topic_creation", True)
        for wanted in requested:
            if wanted.name is not None and not await is_authorized(
                ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, wanted.name
            ):
                denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                topics.append(await encoder.encode(undescribed_topic(wanted.name, None, denied)))
                continue
            found = await _requested_topic(ctx, wanted, allow_create, live)
            topics.append(await encoder.encode(found))
    cluster_operations = UNSET_AUTHORIZED_OPERATIONS
    if getattr(body, "include_cluster_authorized_operations", False):
        cluster_operations = await authorized_operations(
            ctx, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
        )
    advertised = await advertised_brokers(ctx, live_brokers)
    rest = respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "brokers": [
                {"node_id": b.broker_id, "host": host, "port": port, "rack": b.rack}
                for b, host, port in advertised
            ],
            "cluster_id": broker.cluster_id,
            "controller_id": broker.controller_id(),
            "topics": [],
            "cluster_authorized_operations": cluster_operations,
            "error_code": ErrorCode.NONE,
        },
    )
    return SplicedMetadataResponse(rest, tuple(topics))


class _TopicEncoder:
    """Encodes the topic entries of one response, through the broker's cache for topics
    the snapshot holds (``metadata_cache.py``). Other answers (errors, the offsets topic,
    a topic just auto-created) are encoded each time: they are few, or they change."""

    def __init__(
        self, ctx: RequestContext, version: int, live: frozenset[int], with_operations: bool
    ) -> None:
        self._ctx = ctx
        self._version = version
        self._live = live
        self._with_operations = with_operations
        self._cache = ctx.broker.metadata_topic_cache

    async def encode(self, topic: TopicRecord | dict[str, Any]) -> EncodedTopic:
        if isinstance(topic, TopicRecord):
            return await self._encode_record(topic)
        if self._with_operations and topic["error_code"] == ErrorCode.NONE:
            topic = {**topic, "topic_authorized_operations": await self._operations(topic["name"])}
        return encode_topic(self._version, topic)

    async def _encode_record(self, record: TopicRecord) -> EncodedTopic:
        operations = (
            await self._operations(record.name)
            if self._with_operations
            else UNSET_AUTHORIZED_OPERATIONS
        )
        encoded = self._cache.get(self._version, record, self._live, operations)
        if encoded is None:
            described = described_topic(record, self._live)
            described["topic_authorized_operations"] = operations
            encoded = encode_topic(self._version, described)
            self._cache.put(self._version, record, self._live, operations, encoded)
        return encoded

    async def _operations(self, topic: str) -> int:
        return await authorized_operations(self._ctx, ResourceType.TOPIC, topic)


async def _requested_topic(
    ctx: RequestContext, wanted: Any, allow_create: bool, live: frozenset[int]
) -> TopicRecord | dict[str, Any]:
    """The snapshot's record of a topic the request names, or its description when it
    has none (an error, the offsets topic, a topic auto-created now)."""
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
        return record
    record = broker.snapshot.topics.get(wanted.name)
    if record is not None:
        return record
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
    return described_topic(record, live)


async def _may_create(ctx: RequestContext, topic: str) -> bool:
    """Kafka's rule for auto-creation: CREATE on the cluster, or else on the topic."""
    return await is_authorized(
        ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    ) or await is_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, topic)
