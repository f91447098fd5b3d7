"""AddOffsetsToTxn (api key 25) and EndTxn (api key 26): the transaction coordinator's
remaining producer requests. Both need WRITE on the transactional id, AddOffsetsToTxn
also READ on the group, as in Kafka."""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.handlers.txn_errors import for_version
from mirrorsim.broker.txn.coordinator import TransactionCoordinator
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

ADD_OFFSETS_TO_TXN_KEY = 25
END_TXN_KEY = 26
_FENCED_SINCE = 2


@handles(ADD_OFFSETS_TO_TXN_KEY, min_version=0, max_version=4)
async def handle_add_offsets(ctx: RequestContext, body: Any) -> Any:
    coordinator: TransactionCoordinator = ctx.broker.transactions.coordinator
    code = ErrorCode.NONE
    try:
        await authorize(
            ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
        )
        await authorize(ctx, AclOperation.READ, ResourceType.GROUP, body.group_id)
        await coordinator.add_offsets(
            body.transactional_id, body.producer_id, body.producer_epoch, body.group_id
        )
    except KafkaError as exc:
        code = exc.code
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": for_version(code, int(body.__version__), _FENCED_SINCE),
        },
    )


@handles(END_TXN_KEY, min_version=0, max_version=4)
async def handle_end_txn(ctx: RequestContext, body: Any) -> Any:
    coordinator: TransactionCoordinator = ctx.broker.transactions.coordinator
    code = ErrorCode.NONE
    try:
        await authorize(
            ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
        )
        await coordinator.end_txn(
            body.transactional_id, body.producer_id, body.producer_epoch, body.committed
        )
    except KafkaError as exc:
        code = exc.code
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": for_version(code, int(body.__version__), _FENCED_SINCE),
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
