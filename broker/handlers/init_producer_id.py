"""InitProducerId (api key 22, v0..v6) for idempotent producers.

Without a transactional id Kafka always hands out a fresh producer id at epoch 0, even when
the producer sends its old id and epoch (KIP-360): sequence state lives in the partitions,
and a new id starts every partition at sequence 0. Transactional ids belong to the
transaction coordinator; until this broker hosts one it answers COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.protocol.errors import ErrorCode

INIT_PRODUCER_ID_KEY = 22


@handles(INIT_PRODUCER_ID_KEY, min_version=0, max_version=6)
async def handle(ctx: RequestContext, body: Any) -> Any:
    manager: ReplicaManager = ctx.broker.replica_manager
    if body.transactional_id is not None:
        return _response(body, ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, -1)
    return _response(body, ErrorCode.NONE, manager.producer_ids.allocate(), 0)


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
