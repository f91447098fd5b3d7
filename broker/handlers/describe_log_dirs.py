"""DescribeLogDirs (35, v1-v4): this broker's log directory and the size of every replica.

What ``kafka-log-dirs.sh --describe`` and capacity tools read. A broker here keeps all its
replicas in one directory (its data dir), so the answer has one result: each hosted
partition asked for (all when the request names no topics) with its size on disk, an
offset lag of 0 (no replica is being moved to a future directory, so none is a future
replica) and, from v4, the file system's total and usable bytes. DESCRIBE on the cluster
is required; without it the answer is empty, with CLUSTER_AUTHORIZATION_FAILED from v3
as in Kafka.
"""

from __future__ import annotations

import shutil
from typing import Any

from mirrorsim.broker.auth.enforcement import is_authorized
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode

DESCRIBE_LOG_DIRS_KEY = 35


@handles(DESCRIBE_LOG_DIRS_KEY, min_version=1, max_version=4)
async def handle(ctx: RequestContext, body: Any) -> Any:
    if not await is_authorized(
        ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    ):
        return respond(
            body,
            {
                "throttle_time": NO_THROTTLE,
                "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "results": [],
            },
        )
    wanted = None
    if body.topics is not None:
        wanted = {(t.topic, int(p)) for t in body.topics for p in t.partitions}
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": ErrorCode.NONE,
            "results": [_log_dir(ctx.broker, wanted)],
        },
    )


def _log_dir(broker: HandlerBroker, wanted: set[tuple[str, int]] | None) -> dict[str, Any]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for partition in sorted(broker.replica_manager.partitions(), key=lambda p: (p.topic, p.index)):
        key = (partition.topic, partition.index)
        if wanted is not None and key not in wanted:
            continue
        by_topic.setdefault(key[0], []).append(
            {
                "partition_index": key[1],
                "partition_size": partition.log.size_in_bytes,
                "offset_lag": 0,
                "is_future_key": False,
            }
        )
    usage = shutil.disk_usage(broker.data_dir)
    return {
        "error_code": ErrorCode.NONE,
        "log_dir": str(broker.data_dir.resolve()),
        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
        "total_bytes": usage.total,
        "usable_bytes": usage.free,
    }
