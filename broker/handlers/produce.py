"""Produce (api key 0, v3..v13): append each partition's batch through the replica manager.

Partitions are appended concurrently so that acks=all waits overlap. v13 names topics by
id. With acks=0 the client expects no response at all, so the handler returns None; when
a partition fails, the connection is closed instead, as Kafka does, which is the only
signal that makes the producer refresh its metadata.

The request's size counts against the caller's ``producer_byte_rate`` once the appends are
done, as in Kafka; over the quota, the response carries the throttle time and the
connection is muted for it (acks=0 too, with no response).
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from mirrorsim.broker.auth.enforcement import denial
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.quota_throttle import as_throttle_time, record_and_throttle
from mirrorsim.broker.handlers.response import respond
from mirrorsim.broker.quotas.entity import PRODUCER_BYTE_RATE
from mirrorsim.broker.replica import AppendResult, ReplicaManager
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError, RecordErrorsError

PRODUCE_KEY = 0


@handles(PRODUCE_KEY, min_version=3, max_version=13)
async def handle(ctx: RequestContext, body: Any) -> Any:
    manager: ReplicaManager = ctx.broker.replica_manager
    by_id = ctx.header.api_version >= 13
    pending = []
    for topic_data in body.topic_data:
        name = manager.topic_name(topic_data.topic_id) if by_id else topic_data.name
        unknown = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        denied = await denial(ctx, AclOperation.WRITE, ResourceType.TOPIC, name or "")
        for data in topic_data.partition_data:
            pending.append(
                _refused(data.index, denied)
                if denied
                else _produce_partition(manager, name, data, body, unknown)
            )
    results = iter(await asyncio.gather(*pending))
    responses = [
        {
            "name": getattr(topic_data, "name", None),
            "topic_id": getattr(topic_data, "topic_id", None),
            "partition_responses": [next(results) for _ in topic_data.partition_data],
        }
        for topic_data in body.topic_data
    ]
    throttle_ms = record_and_throttle(ctx, PRODUCER_BYTE_RATE, ctx.request_size)
    if body.acks == 0:
        failed = [
            f"{topic['name'] or topic['topic_id']}-{p['index']}: {ErrorCode(p['error_code']).name}"
            for topic in responses
            for p in topic["partition_responses"]
            if p["error_code"] != ErrorCode.NONE
        ]
        if failed and ctx.session is not None:
            ctx.session.close_reason = "acks=0 produce failed (" + ", ".join(failed) + ")"
        return None
    return respond(body, {"responses": responses, "throttle_time": as_throttle_time(throttle_ms)})


async def _produce_partition(
    manager: ReplicaManager, topic: str | None, data: Any, body: Any, unknown: ErrorCode
) -> dict[str, Any]:
    try:
        if topic is None:
            raise KafkaError(unknown)
        if data.records is None:
            raise KafkaError(ErrorCode.INVALID_RECORD, "Produce request carries no records")
        result = await manager.append_records(
            topic,
            data.index,
            bytes(data.records),
            required_acks=body.acks,
            timeout_ms=int(body.timeout.total_seconds() * 1000),
        )
    except KafkaError as exc:
        return _partition_error(data.index, exc)
    return _partition_success(data.index, result)


async def _refused(index: int, error: KafkaError) -> dict[str, Any]:
    return _partition_error(index, error)


def _partition_success(index: int, result: AppendResult) -> dict[str, Any]:
    append_time = None
    if result.log_append_time_ms >= 0:
        append_time = datetime.datetime.fromtimestamp(
            result.log_append_time_ms / 1000, tz=datetime.UTC
        )
    return {
        "index": index,
        "error_code": ErrorCode.NONE,
        "base_offset": result.base_offset,
        "log_append_time": append_time,
        "log_start_offset": result.log_start_offset,
        "record_errors": (),
        "error_message": None,
    }


def _partition_error(index: int, error: KafkaError) -> dict[str, Any]:
    record_errors = error.record_errors if isinstance(error, RecordErrorsError) else ()
    return {
        "index": index,
        "error_code": error.code,
        "base_offset": -1,
        "log_append_time": None,
        "log_start_offset": -1,
        "record_errors": [
            {"batch_index": batch_index, "batch_index_error_message": why}
            for batch_index, why in record_errors
        ],
        "error_message": error.message,
    }
