"""InitProducerId (api key 22, v0..v6) for idempotent producers.

Without a transactional id Kafka always hands out a fresh producer id at epoch 0, even when
the producer sends its old id and epoch (KIP-360): sequence state lives in the partitions,
and a new id starts every partition at sequence 0. Transactional ids belong to the
transaction coordinator (``mirrorsim.broker.txn``), which bumps the epoch to fence older
instances of the producer; that needs WRITE on the transactional id.
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.handlers.txn_errors import for_version
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.broker.txn.coordinator import TransactionCoordinator
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

INIT_PRODUCER_ID_KEY = 22
_FENCED_SINCE = 4


@handles(INIT_PRODUCER_ID_KEY, min_version=0, max_version=6)
async def handle(ctx: RequestContext, body: Any) -> Any:
    manager: ReplicaManager = ctx.broker.replica_manager
    if body.transactional_id is not None:
        return await _transactional(ctx, body)
    return _response(body, ErrorCode.NONE, manager.producer_ids.allocate(), 0)


async def _transactional(ctx: RequestContext, body: Any) -> Any:
    coordinator: TransactionCoordinator = ctx.broker.transactions.coordinator
    try:
        await authorize(
            ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
        )
        producer_id, epoch = await coordinator.init_producer_id(
            body.transactional_id,
            int(body.transaction_timeout.total_seconds() * 1000),
            int(getattr(body, "producer_id", -1)),
            int(getattr(body, "producer_epoch", -1)),
        )
    except KafkaError as exc:
        code = for_version(exc.code, int(body.__version__), _FENCED_SINCE)
        return _response(body, code, -1, -1)
    return _response(body, ErrorCode.NONE, producer_id, epoch)


def _response(body: Any, code: ErrorCode, producer_id: int, producer_epoch: int) -> Any:
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": code,
            "producer_id": producer_id,
            "producer_epoch": producer_epoch,
            "ongoing_txn_producer_id": -1,
            "ongoing_txn_producer_epoch": -1,
        },
    )
