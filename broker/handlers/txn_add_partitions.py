"""AddPartitionsToTxn (api key 24): v0..v3 from producers, v4+ batched from brokers.

v4+ carry several transactions and a ``verify_only`` flag (KIP-890 partition
verification: is the partition already in the transaction?). Both forms go to the
transaction coordinator; this module only translates. Each transaction needs WRITE on its
transactional id.
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.handlers.txn_errors import for_version
from mirrorsim.broker.txn.coordinator import TransactionCoordinator
from mirrorsim.broker.txn.state import TopicPartition
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

ADD_PARTITIONS_TO_TXN_KEY = 24
_FENCED_SINCE = 2
_BATCHED_SINCE = 4


@handles(ADD_PARTITIONS_TO_TXN_KEY, min_version=0, max_version=5)
async def handle(ctx: RequestContext, body: Any) -> Any:
    coordinator: TransactionCoordinator = ctx.broker.transactions.coordinator
    version = int(body.__version__)
    if version < _BATCHED_SINCE:
        results = await _add(
            ctx,
            coordinator,
            body.v3_and_below_transactional_id,
            body.v3_and_below_producer_id,
            body.v3_and_below_producer_epoch,
            body.v3_and_below_topics,
            verify_only=False,
            version=version,
        )
        return respond(
            body, {"throttle_time": NO_THROTTLE, "results_by_topic_v3_and_below": results}
        )
    by_transaction = [
        {
            "transactional_id": txn.transactional_id,
            "topic_results": await _add(
                ctx,
                coordinator,
                txn.transactional_id,
                txn.producer_id,
                txn.producer_epoch,
                txn.topics,
                verify_only=txn.verify_only,
                version=version,
            ),
        }
        for txn in body.transactions
    ]
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": ErrorCode.NONE,
            "results_by_transaction": by_transaction,
        },
    )


async def _add(
    ctx: RequestContext,
    coordinator: TransactionCoordinator,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: Any,
    *,
    verify_only: bool,
    version: int,
) -> list[dict[str, Any]]:
    wanted: list[TopicPartition] = [(t.name, int(p)) for t in topics for p in t.partitions]
    try:
        await authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)
        if verify_only:
            meta = await coordinator.describe(transactional_id)
            results = {
                tp: ErrorCode.NONE
                if meta.producer_id == producer_id
                and meta.producer_epoch == producer_epoch
                and tp in meta.partitions
                else ErrorCode.INVALID_TXN_STATE
                for tp in wanted
            }
        else:
            results = await coordinator.add_partitions(
                transactional_id, producer_id, producer_epoch, wanted
            )
    except KafkaError as exc:
        results = dict.fromkeys(wanted, exc.code)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), code in results.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "partition_error_code": for_version(code, version, _FENCED_SINCE),
            }
        )
    return [{"name": name, "results_by_partition": parts} for name, parts in by_topic.items()]
