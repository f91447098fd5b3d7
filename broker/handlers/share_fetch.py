"""ShareFetch (78) and ShareAcknowledge (79), KIP-932, v1 as Kafka 4.1 serves them.

The share session (`ShareSessionCache`) says which partitions the member fetches from
this broker; `SharePartitionManager` acquires records for it and applies its
acknowledgements. Acknowledgements ride on ShareFetch too, and are applied before the
fetch, so a consumer's next batch can include records it has just released. A session
that ends (epoch -1) or is replaced (epoch 0 again) gives back what its member still
holds. READ on the group and on each topic is needed, as in Kafka.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from mirrorsim.broker.auth.enforcement import is_authorized
from mirrorsim.broker.group.share_sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    SharePartitionKey,
    ShareSession,
    ShareSessionError,
)
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.consumer_groups import topic_catalog
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.share.manager import ShareKey, ShareRead
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

SHARE_FETCH = 78
SHARE_ACKNOWLEDGE = 79

Acks = dict[SharePartitionKey, list[tuple[int, int, tuple[int, ...]]]]


@handles(SHARE_FETCH, min_version=1, max_version=1)
async def handle_share_fetch(ctx: RequestContext, body: Any) -> Any:
    group_id, member_id, epoch = body.group_id or "", body.member_id or "", body.share_session_epoch
    acks = _acks(body.topics, "acknowledgement_batches")
    requested = [
        SharePartitionKey(t.topic_id, p.partition_index) for t in body.topics for p in t.partitions
    ]
    forgotten = [
        SharePartitionKey(t.topic_id, p) for t in body.forgotten_topics_data for p in t.partitions
    ]
    refusal = await _refusal(ctx, group_id, member_id)
    if refusal is None and epoch == INITIAL_EPOCH and any(acks.values()):
        refusal = (ErrorCode.INVALID_REQUEST, "A share session cannot open with acknowledgements")
    if refusal is not None:
        return _fetch_error(body, *refusal)
    try:
        session = await _session_for_fetch(ctx, group_id, member_id, epoch, requested, forgotten)
    except ShareSessionError as exc:
        return _fetch_error(body, exc.error, exc.message)
    keys, errors = await _resolve(ctx, group_id, session.partitions | set(acks))
    ack_errors = await _acknowledge(ctx, member_id, acks, keys, errors)
    reads: dict[SharePartitionKey, ShareRead] = {}
    if epoch == FINAL_EPOCH:
        await ctx.broker.share_partitions.release_member(group_id, member_id)
    else:
        fetched = await ctx.broker.share_partitions.fetch(
            member_id,
            [keys[p] for p in session.partitions if p in keys],
            max_wait_ms=int(body.max_wait / timedelta(milliseconds=1)),
            min_bytes=int(body.min_bytes),
            max_bytes=int(body.max_bytes),
            max_records=max(1, int(body.max_records)),
        )
        reads = {SharePartitionKey(k.topic_id, k.partition): read for k, read in fetched.items()}
    answered = (
        set(requested)
        | set(acks)
        | set(errors)
        | {p for p, read in reads.items() if read.acquired or read.error != ErrorCode.NONE}
    )
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "acquisition_lock_timeout": timedelta(
                milliseconds=ctx.broker.share_partitions.lock_duration_ms(group_id)
            ),
            "responses": _by_topic(
                {
                    p: _fetched_partition(ctx, p, keys, errors, ack_errors, reads.get(p))
                    for p in answered
                }
            ),
            "node_endpoints": [],
        },
    )


@handles(SHARE_ACKNOWLEDGE, min_version=1, max_version=1)
async def handle_share_acknowledge(ctx: RequestContext, body: Any) -> Any:
    group_id, member_id, epoch = body.group_id or "", body.member_id or "", body.share_session_epoch
    acks = _acks(body.topics, "acknowledgement_batches")
    refusal = await _refusal(ctx, group_id, member_id)
    if refusal is None and epoch == INITIAL_EPOCH:
        refusal = (ErrorCode.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge needs a share session")
    if refusal is not None:
        return _acknowledge_error(body, *refusal)
    sessions = ctx.broker.share_sessions
    try:
        if epoch == FINAL_EPOCH:
            sessions.close(group_id, member_id)
        else:
            sessions.advance(group_id, member_id, epoch)
    except ShareSessionError as exc:
        return _acknowledge_error(body, exc.error, exc.message)
    keys, errors = await _resolve(ctx, group_id, set(acks))
    ack_errors = await _acknowledge(ctx, member_id, acks, keys, errors)
    if epoch == FINAL_EPOCH:
        await ctx.broker.share_partitions.release_member(group_id, member_id)
    partitions = {
        p: {
            "partition_index": p.partition,
            "error_code": errors.get(p, ack_errors.get(p, ErrorCode.NONE)),
            "error_message": None,
            "current_leader": _leader(ctx, keys.get(p)),
        }
        for p in acks
    }
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "responses": _by_topic(partitions),
            "node_endpoints": [],
        },
    )


async def _refusal(
    ctx: RequestContext, group_id: str, member_id: str
) -> tuple[ErrorCode, str] | None:
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, "The group id is empty"
    if not member_id:
        return ErrorCode.INVALID_REQUEST, "The member id is empty"
    if not await is_authorized(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, f"Not authorized to read group {group_id}"
    return None


async def _session_for_fetch(
    ctx: RequestContext,
    group_id: str,
    member_id: str,
    epoch: int,
    requested: list[SharePartitionKey],
    forgotten: list[SharePartitionKey],
) -> ShareSession:
    sessions = ctx.broker.share_sessions
    if epoch == INITIAL_EPOCH:
        session, replaced = sessions.open(group_id, member_id, requested, ctx.session)
        if ctx.session is not None:
            ctx.session.on_close[("share session", group_id, member_id)] = lambda: _disconnected(
                ctx, group_id, member_id
            )
        if replaced is not None:
            await ctx.broker.share_partitions.release_member(group_id, member_id)
        opened, _ = await _resolve(ctx, group_id, requested)
        ctx.broker.share_partitions.refresh_idle(list(opened.values()))
        return session
    if epoch == FINAL_EPOCH:
        return sessions.close(group_id, member_id)
    session = sessions.advance(group_id, member_id, epoch)
    session.partitions.update(requested)
    session.partitions.difference_update(forgotten)
    return session


async def _disconnected(ctx: RequestContext, group_id: str, member_id: str) -> None:
    if ctx.broker.share_sessions.disconnect(group_id, member_id, ctx.session) is not None:
        await ctx.broker.share_partitions.release_member(group_id, member_id)


def _acks(topics: Iterable[Any], field: str) -> Acks:
    return {
        SharePartitionKey(t.topic_id, p.partition_index): [
            (int(b.first_offset), int(b.last_offset), tuple(int(x) for x in b.acknowledge_types))
            for b in getattr(p, field)
        ]
        for t in topics
        for p in t.partitions
        if getattr(p, field)
    }


async def _resolve(
    ctx: RequestContext, group_id: str, partitions: Iterable[SharePartitionKey]
) -> tuple[dict[SharePartitionKey, ShareKey], dict[SharePartitionKey, ErrorCode]]:
    """Name each partition's topic from its id and check READ on it."""
    names = _names_by_id(ctx)
    keys: dict[SharePartitionKey, ShareKey] = {}
    errors: dict[SharePartitionKey, ErrorCode] = {}
    allowed: dict[str, bool] = {}
    for p in partitions:
        name = names.get(p.topic_id)
        if name is None:
            errors[p] = ErrorCode.UNKNOWN_TOPIC_ID
            continue
        if name not in allowed:
            allowed[name] = await is_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, name)
        if not allowed[name]:
            errors[p] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        keys[p] = ShareKey(group_id, name, p.topic_id, p.partition)
    return keys, errors


def _names_by_id(ctx: RequestContext) -> Mapping[uuid.UUID, str]:
    return {info.topic_id: name for name, info in topic_catalog(ctx).items()}


async def _acknowledge(
    ctx: RequestContext,
    member_id: str,
    acks: Acks,
    keys: Mapping[SharePartitionKey, ShareKey],
    errors: Mapping[SharePartitionKey, ErrorCode],
) -> dict[SharePartitionKey, ErrorCode]:
    results: dict[SharePartitionKey, ErrorCode] = {}
    for p, batches in acks.items():
        if p in errors:
            results[p] = errors[p]
            continue
        results[p] = await ctx.broker.share_partitions.acknowledge(member_id, keys[p], batches)
    return results


def _fetched_partition(
    ctx: RequestContext,
    p: SharePartitionKey,
    keys: Mapping[SharePartitionKey, ShareKey],
    errors: Mapping[SharePartitionKey, ErrorCode],
    ack_errors: Mapping[SharePartitionKey, ErrorCode],
    read: ShareRead | None,
) -> dict[str, Any]:
    error = errors.get(p) or (read.error if read is not None else ErrorCode.NONE)
    return {
        "partition_index": p.partition,
        "error_code": error,
        "error_message": None,
        "acknowledge_error_code": ack_errors.get(p, ErrorCode.NONE),
        "acknowledge_error_message": None,
        "current_leader": _leader(ctx, keys.get(p)),
        "records": read.records if read is not None else b"",
        "acquired_records": [
            {
                "first_offset": r.first_offset,
                "last_offset": r.last_offset,
                "delivery_count": r.delivery_count,
            }
            for r in (read.acquired if read is not None else ())
        ],
    }


def _leader(ctx: RequestContext, key: ShareKey | None) -> dict[str, int]:
    """The partition's leader as this broker knows it, which a client that was told
    NOT_LEADER_OR_FOLLOWER fetches from next."""
    if key is not None:
        try:
            state = ctx.broker.replica_manager.partition(key.topic, key.partition).state
        except KafkaError:
            pass
        else:
            return {"leader_id": state.leader, "leader_epoch": state.leader_epoch}
    return {"leader_id": -1, "leader_epoch": -1}


def _by_topic(partitions: Mapping[SharePartitionKey, dict[str, Any]]) -> list[dict[str, Any]]:
    grouped: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for p, data in sorted(
        partitions.items(), key=lambda item: (str(item[0].topic_id), item[0].partition)
    ):
        grouped.setdefault(p.topic_id, []).append(data)
    return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in grouped.items()]


def _fetch_error(body: Any, error: ErrorCode, message: str) -> Any:
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": error,
            "error_message": message,
            "acquisition_lock_timeout": timedelta(0),
            "responses": [],
            "node_endpoints": [],
        },
    )


def _acknowledge_error(body: Any, error: ErrorCode, message: str) -> Any:
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": error,
            "error_message": message,
            "responses": [],
            "node_endpoints": [],
        },
    )
