"""DescribeTopicPartitions (75, v0): topics and their partitions a page at a time.

Kafka 3.7 added it (KIP-966) so that describing a topic of many thousand partitions does
not need one Metadata answer holding them all; Kafka's Admin client uses it for
``describeTopics`` when the broker offers it. Topics come sorted by name; no names
means every topic the caller may DESCRIBE (``__consumer_offsets`` included, as Metadata
presents it), a named topic the caller may not describe is TOPIC_AUTHORIZATION_FAILED
and an unknown one UNKNOWN_TOPIC_OR_PARTITION. An answer holds at most
``ResponsePartitionLimit`` partitions, capped by ``max.request.partition.size.limit``;
when more remain, ``NextCursor`` names the topic and partition to ask from next. Each
topic carries the caller's authorized operations. The eligible leader replicas are
empty: the broker keeps no ELR.
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import authorized_names, authorized_operations
from mirrorsim.broker.group.offsets_topic import OFFSETS_TOPIC
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.handlers.topic_descriptions import (
    described_offsets_topic,
    described_topic,
    undescribed_topic,
)
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode

DESCRIBE_TOPIC_PARTITIONS_KEY = 75
_NO_ELR = {"eligible_leader_replicas": [], "last_known_elr": []}


@handles(DESCRIBE_TOPIC_PARTITIONS_KEY, min_version=0, max_version=0)
async def handle(ctx: RequestContext, body: Any) -> Any:
    broker = ctx.broker
    known = [*broker.snapshot.topics, OFFSETS_TOPIC]
    wanted = sorted({t.name for t in body.topics}) if body.topics else sorted(known)
    allowed = set(await authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, wanted))
    if not body.topics:
        wanted = [name for name in wanted if name in allowed]
    cursor = body.cursor
    if cursor is not None:
        wanted = [name for name in wanted if name >= cursor.topic_name]
    room = min(
        int(body.response_partition_limit), int(broker.config("max.request.partition.size.limit"))
    )
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in wanted:
        if name not in allowed:
            topics.append(undescribed_topic(name, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        topic = _describe(broker, name)
        if topic is None:
            topics.append(undescribed_topic(name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        partitions = [p for p in topic["partitions"] if p["partition_index"] >= first]
        if room == 0:
            next_cursor = {"topic_name": name, "partition_index": first}
            break
        page, rest = partitions[:room], partitions[room:]
        room -= len(page)
        topic["partitions"] = [{**p, **_NO_ELR} for p in page]
        topic["topic_authorized_operations"] = await authorized_operations(
            ctx, ResourceType.TOPIC, name
        )
        topics.append(topic)
        if rest:
            next_cursor = {"topic_name": name, "partition_index": rest[0]["partition_index"]}
            break
    return respond(
        body, {"throttle_time": NO_THROTTLE, "topics": topics, "next_cursor": next_cursor}
    )


def _describe(broker: HandlerBroker, name: str) -> dict[str, Any] | None:
    if name == OFFSETS_TOPIC:
        return described_offsets_topic(broker)
    record = broker.snapshot.topics.get(name)
    if record is None:
        return None
    return described_topic(record, {b.broker_id for b in broker.live_brokers()})
