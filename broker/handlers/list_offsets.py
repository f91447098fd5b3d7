"""ListOffsets (api key 2, v1..v11): earliest, latest, max-timestamp and by-timestamp lookups.

A partition listed twice in one request is answered with INVALID_REQUEST for both, as
Kafka does. ``replica_id`` -2 (a debugging client) may read a follower's log end offset.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

LIST_OFFSETS_KEY = 2


@handles(LIST_OFFSETS_KEY, min_version=1, max_version=11)
async def handle(ctx: RequestContext, body: Any) -> Any:
    manager: ReplicaManager = ctx.broker.replica_manager
    isolation_level = int(getattr(body, "isolation_level", 0))
    seen = Counter((t.name, p.partition_index) for t in body.topics for p in t.partitions)
    topics = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            if seen[(topic.name, p.partition_index)] > 1:
                partitions.append(_error(p.partition_index, ErrorCode.INVALID_REQUEST))
                continue
            try:
                await authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name)
                found = manager.list_offset(
                    topic.name,
                    p.partition_index,
                    int(p.timestamp),
                    isolation_level=isolation_level,
                    current_leader_epoch=int(getattr(p, "current_leader_epoch", -1)),
                    replica_id=int(body.replica_id),
                )
            except KafkaError as exc:
                partitions.append(_error(p.partition_index, exc.code))
                continue
            partitions.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": ErrorCode.NONE,
                    "timestamp": found.timestamp,
                    "offset": found.offset,
                    "leader_epoch": found.leader_epoch,
                }
            )
        topics.append({"name": topic.name, "partitions": partitions})
    return respond(body, {"throttle_time": NO_THROTTLE, "topics": topics})


def _error(index: int, code: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "timestamp": -1,
        "offset": -1,
        "leader_epoch": -1,
    }
