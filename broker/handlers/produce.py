"""Produce (api key 0, v3..v13): append each partition's batch through the replica manager.

Every partition is appended as the request is read, then one wait covers every acks=all
partition of the request (Kafka's DelayedProduce): a partition whose ISR already has its
append (one replica, or acks=1) costs no wait at all. v13 names topics by id. The answer
is encoded straight from the outcomes (``ProduceResponseBody``). With acks=0 the client
expects no response at all, so the handler returns None; when a partition fails, the
connection is closed instead, as Kafka does, which is the only signal that makes the
producer refresh its metadata.

The request's size counts against the caller's ``producer_byte_rate`` once the appends are
done, as in Kafka; over the quota, the response carries the throttle time and the
connection is muted for it (acks=0 too, with no response).
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import denial
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.quota_throttle import record_and_throttle
from mirrorsim.broker.quotas.entity import PRODUCER_BYTE_RATE
from mirrorsim.broker.replica import AppendResult, ReplicaManager
from mirrorsim.broker.replica.partition import Partition
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError, RecordErrorsError
from mirrorsim.protocol.messages.produce_response import (
    FIRST_WITH_TOPIC_ID,
    PartitionProduceOutcome,
    ProduceResponseBody,
    TopicProduceOutcome,
)

PRODUCE_KEY = 0
ACKS_ALL = -1


@handles(PRODUCE_KEY, min_version=3, max_version=13)
async def handle(ctx: RequestContext, body: Any) -> ProduceResponseBody | None:
    manager: ReplicaManager = ctx.broker.replica_manager
    version = ctx.header.api_version
    by_id = version >= FIRST_WITH_TOPIC_ID
    unknown = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    acks = body.acks
    topics: list[TopicProduceOutcome] = []
    waiting: list[tuple[list[PartitionProduceOutcome], int, Partition, int]] = []
    for topic_data in body.topic_data:
        name = manager.topic_name(topic_data.topic_id) if by_id else topic_data.name
        denied = await denial(ctx, AclOperation.WRITE, ResourceType.TOPIC, name or "")
        outcomes: list[PartitionProduceOutcome] = []
        for data in topic_data.partition_data:
            try:
                if denied:
                    raise denied
                if name is None:
                    raise KafkaError(unknown)
                if data.records is None:
                    raise KafkaError(ErrorCode.INVALID_RECORD, "Produce request carries no records")
                result, target = manager.append_produced(
                    name, data.index, bytes(data.records), required_acks=acks
                )
            except KafkaError as exc:
                outcomes.append(_failed(data.index, exc))
                continue
            if acks == ACKS_ALL:
                waiting.append((outcomes, len(outcomes), target, result.last_offset))
            outcomes.append(_succeeded(data.index, result))
        topics.append(
            TopicProduceOutcome(
                None if by_id else name, topic_data.topic_id if by_id else None, outcomes
            )
        )
    if waiting:
        timeout_ms = int(body.timeout.total_seconds() * 1000)
        errors = await manager.await_isr([(t, last) for _, _, t, last in waiting], timeout_ms)
        for (outcomes, at, _, _), error in zip(waiting, errors, strict=True):
            if error is not None:
                outcomes[at] = _failed(outcomes[at].index, error)
    throttle_ms = record_and_throttle(ctx, PRODUCER_BYTE_RATE, ctx.request_size)
    if acks == 0:
        failed = [
            f"{topic.name or topic.topic_id}-{p.index}: {ErrorCode(p.error_code).name}"
            for topic in topics
            for p in topic.partitions
            if p.error_code != ErrorCode.NONE
        ]
        if failed and ctx.session is not None:
            ctx.session.close_reason = "acks=0 produce failed (" + ", ".join(failed) + ")"
        return None
    return ProduceResponseBody(version, topics, throttle_ms=throttle_ms)


def _succeeded(index: int, result: AppendResult) -> PartitionProduceOutcome:
    return PartitionProduceOutcome(
        index,
        ErrorCode.NONE,
        result.base_offset,
        result.log_append_time_ms,
        result.log_start_offset,
    )


def _failed(index: int, error: KafkaError) -> PartitionProduceOutcome:
    record_errors = error.record_errors if isinstance(error, RecordErrorsError) else ()
    return PartitionProduceOutcome(
        index,
        error.code,
        record_errors=tuple(record_errors),
        error_message=error.message,
    )
