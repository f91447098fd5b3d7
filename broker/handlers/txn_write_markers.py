"""WriteTxnMarkers (api key 27, v1..v2): the coordinator asks this partition leader to end
a producer's transaction.

Data partitions get a COMMIT/ABORT control batch (appended as leader, by the broker, with
the coordinator epoch in the marker value); producer state then closes the transaction,
the last stable offset moves and an abort lands in the aborted-transaction index. A
marker from an older coordinator epoch than the producer last saw is refused with
TRANSACTION_COORDINATOR_FENCED. The group offsets partition (``__consumer_offsets``)
releases or drops the transaction's pending group offsets. Only brokers send it: it needs
CLUSTER_ACTION on the cluster.
"""

from __future__ import annotations

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
    results = []
    for marker in body.markers:
        topics = []
        for topic in marker.topics:
            partitions = []
            for index in topic.partition_indexes:
                code = (
                    await _write(ctx.broker, marker, topic.name, int(index))
                    if allowed
                    else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                )
                partitions.append({"partition_index": int(index), "error_code": code})
            topics.append({"name": topic.name, "partitions": partitions})
        results.append({"producer_id": marker.producer_id, "topics": topics})
    return respond(body, {"markers": results})


async def _write(broker: HandlerBroker, marker: Any, topic: str, partition: int) -> ErrorCode:
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
        kind = ControlRecordType.COMMIT if marker.transaction_result else ControlRecordType.ABORT
        batch = build_control_batch(
            kind,
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            timestamp=wall_clock_ms(),
            coordinator_epoch=marker.coordinator_epoch,
        )
        manager.append_internal(topic, partition, [batch])
    except KafkaError as exc:
        return exc.code
    return ErrorCode.NONE
