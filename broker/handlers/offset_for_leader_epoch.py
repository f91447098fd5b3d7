"""OffsetForLeaderEpoch (api key 23, v2..v4): where a leader epoch ends on this log.

Followers and mirror fetchers use the answer to find the offset where their log diverges
from the leader's and truncate there. As in Kafka, CLUSTER_ACTION on the cluster (replicas)
or DESCRIBE on the topic (consumers) is needed.
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import authorize, is_authorized
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

OFFSET_FOR_LEADER_EPOCH_KEY = 23
DEBUGGING_REPLICA_ID = -2


@handles(OFFSET_FOR_LEADER_EPOCH_KEY, min_version=2, max_version=4)
async def handle(ctx: RequestContext, body: Any) -> Any:
    manager: ReplicaManager = ctx.broker.replica_manager
    replica_id = int(getattr(body, "replica_id", DEBUGGING_REPLICA_ID))
    replica_action = await is_authorized(
        ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    )
    topics = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            try:
                if not replica_action:
                    await authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.topic)
                epoch, end_offset = manager.last_offset_for_leader_epoch(
                    topic.topic,
                    p.partition,
                    int(p.leader_epoch),
                    current_leader_epoch=int(p.current_leader_epoch),
                    replica_id=replica_id,
                )
            except KafkaError as exc:
                partitions.append(
                    {
                        "error_code": exc.code,
                        "partition": p.partition,
                        "leader_epoch": -1,
                        "end_offset": -1,
                    }
                )
                continue
            partitions.append(
                {
                    "error_code": ErrorCode.NONE,
                    "partition": p.partition,
                    "leader_epoch": epoch,
                    "end_offset": end_offset,
                }
            )
        topics.append({"topic": topic.topic, "partitions": partitions})
    return respond(body, {"throttle_time": NO_THROTTLE, "topics": topics})
