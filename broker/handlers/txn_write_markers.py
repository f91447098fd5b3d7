"""WriteTxnMarkers (api key 27, v1..v2): the coordinator asks this partition leader to end
a producer's transaction.

Data partitions get a COMMIT/ABORT control batch (appended as leader, by the broker, with
the coordinator epoch in the marker value); producer state then closes the transaction,
the last stable offset moves and an abort lands in the aborted-transaction index. As
in Kafka the append is acks=all: a partition answers once its ISR has the marker (the
high watermark passed it), so a leader change cannot lose a marker the coordinator took
for written; under ``min.insync.replicas`` it answers NOT_ENOUGH_REPLICAS and the
coordinator retries, as it does a timeout or a moved leader. A
marker from an older coordinator epoch than the producer last saw is refused with
TRANSACTION_COORDINATOR_FENCED. The group offsets partition (``__consumer_offsets``)
releases or drops the transaction's pending group offsets. Only brokers send it: it needs
CLUSTER_ACTION on the cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from mirrorsim.broker.auth.enforcement import CLUSTER, is_authorized
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.response import respond
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.broker.replica.manager import wall_clock_ms
from mirrorsim.broker.txn.pending_offsets import PendingTxnOffsets
from mirrorsim.broker.txn.state import GROUP_OFFSETS_TOPIC
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.records import ControlRecordType, build_control_batch

WRITE_TXN_MARKERS_KEY = 27


@handles(WRITE_TXN_MARKERS_KEY, min_version=1, max_version=2)
async def handle(ctx: RequestContext, body: Any) -> Any:
    allowed = await is_authorized(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER)
    timeout_ms = int(ctx.broker.config("replica.lag.time.max.ms"))
    results = []
    replicating: list[tuple[dict[str, Any], Awaitable[ErrorCode]]] = []
    for marker in body.markers:
        topics = []
        for topic in marker.topics:
            partitions = []
            for index in topic.partition_indexes:
                answer: dict[str, Any] = {"partition_index": int(index)}
                if not allowed:
                    answer["error_code"] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                else:
                    written = await _write(ctx.broker, marker, topic.name, int(index))
                    if isinstance(written, ErrorCode):
                        answer["error_code"] = written
                    else:
                        replicating.append(
                            (
                                answer,
                                _replicated(
                                    ctx.broker, topic.name, int(index), written, timeout_ms
                                ),
                            )
                        )
                partitions.append(answer)
            topics.append({"name": topic.name, "partitions": partitions})
        results.append({"producer_id": marker.producer_id, "topics": topics})
    codes = await asyncio.gather(*(wait for _, wait in replicating))
    for (answer, _), code in zip(replicating, codes, strict=True):
        answer["error_code"] = code
    return respond(body, {"markers": results})


async def _replicated(
    broker: HandlerBroker, topic: str, partition: int, last_offset: int, timeout_ms: int
) -> ErrorCode:
    """NONE once the ISR has the marker (the high watermark passed it), as Kafka appends
    markers with acks=all; otherwise the error the coordinator retries on."""
    try:
        await broker.replica_manager.wait_for_isr(topic, partition, last_offset, timeout_ms)
    except KafkaError as exc:
        return exc.code
    return ErrorCode.NONE


async def _write(broker: HandlerBroker, marker: Any, topic: str, partition: int) -> ErrorCode | int:
    """The marker's offset once the leader appended it (a data partition), or the answer."""
    if topic == GROUP_OFFSETS_TOPIC:
        pending: PendingTxnOffsets = broker.transactions.pending_offsets
        await pending.complete(marker.producer_id, partition, bool(marker.transaction_result))
        return ErrorCode.NONE
    manager: ReplicaManager = broker.replica_manager
    try:
        target = manager.partition(topic, partition)
        entry = target.log.producer_state.producers.get(marker.producer_id)
        if entry is not None and entry.coordinator_epoch > marker.coordinator_epoch:
            return ErrorCode.TRANSACTION_COORDINATOR_FENCED
        if target.under_min_isr:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        kind = ControlRecordType.COMMIT if marker.transaction_result else ControlRecordType.ABORT
        batch = build_control_batch(
            kind,
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            timestamp=wall_clock_ms(),
            coordinator_epoch=marker.coordinator_epoch,
        )
        return manager.append_internal(topic, partition, [batch]).last_offset
    except KafkaError as exc:
        return exc.code
