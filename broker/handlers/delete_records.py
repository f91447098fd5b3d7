"""DeleteRecords (api key 21, v0..v2): move log start offsets up (-1 means the high watermark)."""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

DELETE_RECORDS_KEY = 21


@handles(DELETE_RECORDS_KEY, min_version=0, max_version=2)
async def handle(ctx: RequestContext, body: Any) -> Any:
    manager: ReplicaManager = ctx.broker.replica_manager
    topics = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            try:
                await authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, topic.name)
                low_watermark = manager.delete_records(topic.name, p.partition_index, int(p.offset))
                code = ErrorCode.NONE
            except KafkaError as exc:
                low_watermark, code = -1, exc.code
            partitions.append(
                {
                    "partition_index": p.partition_index,
                    "low_watermark": low_watermark,
                    "error_code": code,
                }
            )
        topics.append({"name": topic.name, "partitions": partitions})
    return respond(body, {"throttle_time": NO_THROTTLE, "topics": topics})
