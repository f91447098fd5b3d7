"""Where replicas live: AlterReplicaLogDirs (34, v1-v2) and ListPartitionReassignments
(46, v0).

A broker here keeps every replica in one log directory (its data dir) and moves no
replica between brokers, so both answers are short and true. AlterReplicaLogDirs accepts
the directory a replica already lives in (Kafka treats that as a no-op) and answers
LOG_DIR_NOT_FOUND for any other path, as Kafka does for a directory outside
``log.dirs``; it needs ALTER on the cluster. ListPartitionReassignments reports no
reassignment in progress (there never is one); it needs DESCRIBE on the cluster.
AlterPartitionReassignments is not offered, so ApiVersions tells clients not to send it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mirrorsim.broker.auth.enforcement import is_authorized
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

ALTER_REPLICA_LOG_DIRS_KEY = 34
LIST_PARTITION_REASSIGNMENTS_KEY = 46


@handles(ALTER_REPLICA_LOG_DIRS_KEY, min_version=1, max_version=2)
async def alter_replica_log_dirs(ctx: RequestContext, body: Any) -> Any:
    allowed = await is_authorized(
        ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    )
    own = ctx.broker.data_dir.resolve()
    results: dict[str, list[dict[str, Any]]] = {}
    for directory in body.dirs:
        if not allowed:
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        elif Path(directory.path).resolve() == own:
            code = ErrorCode.NONE
        else:
            code = ErrorCode.LOG_DIR_NOT_FOUND
        for topic in directory.topics:
            results.setdefault(topic.name, []).extend(
                {"partition_index": int(p), "error_code": code} for p in topic.partitions
            )
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "results": [
                {"topic_name": name, "partitions": partitions}
                for name, partitions in results.items()
            ],
        },
    )


@handles(LIST_PARTITION_REASSIGNMENTS_KEY, min_version=0, max_version=0)
async def list_partition_reassignments(ctx: RequestContext, body: Any) -> Any:
    if not await is_authorized(
        ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    ):
        refused = KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(refused), "topics": []})
    return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(None), "topics": []})
