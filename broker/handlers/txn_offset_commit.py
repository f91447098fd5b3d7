"""TxnOffsetCommit (api key 28, v0..v4): offsets that a transaction will commit.

The group coordinator checks the member (v3+ carry generation and member id, KIP-447)
and the offsets wait, pending, until the transaction's marker for the group's offsets
partition arrives (see ``mirrorsim.broker.txn.pending_offsets``).
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import denial
from mirrorsim.broker.group import GroupCoordinator
from mirrorsim.broker.group.offset_store import CommittedOffset, TopicPartition
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.txn.pending_offsets import PendingTxnOffsets
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode

TXN_OFFSET_COMMIT_KEY = 28


@handles(TXN_OFFSET_COMMIT_KEY, min_version=0, max_version=4)
async def handle(ctx: RequestContext, body: Any) -> Any:
    groups: GroupCoordinator = ctx.broker.groups
    pending: PendingTxnOffsets = ctx.broker.transactions.pending_offsets
    code = await _authorization_error(ctx, body)
    if code is ErrorCode.NONE:
        code = await groups.acquire(body.group_id)
    if code is ErrorCode.NONE:
        code = groups.validate_transactional_commit(
            body.group_id,
            getattr(body, "generation_id", -1),
            getattr(body, "member_id", ""),
            getattr(body, "group_instance_id", None),
        )
    offsets = {
        TopicPartition(topic.name, int(p.partition_index)): CommittedOffset(
            committed_offset=int(p.committed_offset),
            leader_epoch=int(getattr(p, "committed_leader_epoch", -1)),
            metadata=p.committed_metadata,
        )
        for topic in body.topics
        for p in topic.partitions
    }
    if code is ErrorCode.NONE:
        await pending.add(body.producer_id, body.group_id, offsets)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp in offsets:
        by_topic.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "error_code": code}
        )
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
        },
    )


async def _authorization_error(ctx: RequestContext, body: Any) -> ErrorCode:
    """Kafka's checks: WRITE on the transactional id, then READ on the group."""
    for operation, resource_type, name in (
        (AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id),
        (AclOperation.READ, ResourceType.GROUP, body.group_id),
    ):
        denied = await denial(ctx, operation, resource_type, name)
        if denied is not None:
            return denied.code
    return ErrorCode.NONE
