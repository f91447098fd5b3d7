"""The classic group APIs: map each wire version onto `GroupCoordinator` and back.

Every API naming a group first asks the coordinator to `acquire` it: a broker that does
not coordinate the group answers NOT_COORDINATOR and the client looks it up again. Before
that, `_admit` checks Kafka's group ACL: READ to join, sync, heartbeat, leave and commit,
DESCRIBE to fetch offsets and describe, DELETE to delete groups or their offsets.
Deleting a share group deletes its stored share state as well (`forget_share_state`).

OffsetCommit v10 and OffsetFetch v10 name topics by id only; they are not advertised
until topic ids can be resolved here, so clients stay on v9.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any, TypeVar

from mirrorsim.broker.auth.enforcement import authorized_names, is_authorized
from mirrorsim.broker.group import CommittedOffset, GroupCoordinator, TopicPartition
from mirrorsim.broker.group.messages import (
    JoinRequest,
    JoinResult,
    LeavingMember,
    SyncRequest,
    SyncResult,
)
from mirrorsim.broker.group.share_messages import SHARE_GROUP_TYPE
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.consumer_groups import topic_catalog
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.broker.handlers.share_group_offsets import forget_share_state
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
DELETE_GROUPS = 42
OFFSET_DELETE = 47

NO_OFFSET = -1

_V = TypeVar("_V")


def _coordinator(ctx: RequestContext) -> GroupCoordinator:
    coordinator: GroupCoordinator = ctx.broker.groups
    return coordinator


async def _admit(ctx: RequestContext, operation: AclOperation, group_id: str) -> ErrorCode:
    if not await is_authorized(ctx, operation, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return await _coordinator(ctx).acquire(group_id)


async def _denied_topics(
    ctx: RequestContext, operation: AclOperation, topics: Iterable[str]
) -> set[str]:
    names = set(topics)
    return names - await authorized_names(ctx, operation, ResourceType.TOPIC, list(names))


async def _unknown_partitions(
    ctx: RequestContext, partitions: Iterable[TopicPartition]
) -> set[TopicPartition]:
    """The partitions that do not exist, as Kafka's metadata cache answers for an offset
    commit (UNKNOWN_TOPIC_OR_PARTITION); the store is read once more before a partition
    this broker has not seen yet is called unknown."""
    wanted = set(partitions)
    unknown = _missing(ctx.broker.snapshot.topics, wanted)
    if unknown:
        await ctx.broker.refresh_metadata()
        unknown = _missing(ctx.broker.snapshot.topics, unknown)
    return unknown


def _missing(topics: Any, partitions: set[TopicPartition]) -> set[TopicPartition]:
    return {
        tp
        for tp in partitions
        if tp.topic not in topics or not 0 <= tp.partition < len(topics[tp.topic].partitions)
    }


def _ms(value: timedelta) -> int:
    return int(value / timedelta(milliseconds=1))


def _version(body: Any) -> int:
    return int(body.__version__)


@handles(JOIN_GROUP, min_version=0, max_version=9)
async def handle_join_group(ctx: RequestContext, body: Any) -> Any:
    session_timeout_ms = _ms(body.session_timeout)
    rebalance_timeout = getattr(body, "rebalance_timeout", None)
    error = await _admit(ctx, AclOperation.READ, body.group_id)
    result = (
        JoinResult(error, body.member_id)
        if error is not ErrorCode.NONE
        else await _coordinator(ctx).join_group(
            JoinRequest(
                group_id=body.group_id,
                member_id=body.member_id,
                group_instance_id=getattr(body, "group_instance_id", None),
                client_id=ctx.header.client_id or "",
                client_host=f"/{ctx.client_host}",
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=session_timeout_ms
                if rebalance_timeout is None
                else _ms(rebalance_timeout),
                protocol_type=body.protocol_type,
                protocols=tuple((p.name, p.metadata) for p in body.protocols),
                require_known_member_id=_version(body) >= 4,
            ),
            topic_catalog(ctx),
        )
    )
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": result.error,
            "generation_id": result.generation_id,
            "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name
            if result.protocol_name is not None or _version(body) >= 7
            else "",
            "leader": result.leader_id,
            "skip_assignment": result.skip_assignment,
            "member_id": result.member_id,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "metadata": m.metadata,
                }
                for m in result.members
            ],
        },
    )


@handles(SYNC_GROUP, min_version=0, max_version=5)
async def handle_sync_group(ctx: RequestContext, body: Any) -> Any:
    error = await _admit(ctx, AclOperation.READ, body.group_id)
    result = (
        SyncResult(error)
        if error is not ErrorCode.NONE
        else await _coordinator(ctx).sync_group(
            SyncRequest(
                group_id=body.group_id,
                generation_id=body.generation_id,
                member_id=body.member_id,
                group_instance_id=getattr(body, "group_instance_id", None),
                protocol_type=getattr(body, "protocol_type", None),
                protocol_name=getattr(body, "protocol_name", None),
                assignments=tuple((a.member_id, a.assignment) for a in body.assignments),
            )
        )
    )
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": result.error,
            "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name,
            "assignment": result.assignment,
        },
    )


@handles(HEARTBEAT, min_version=0, max_version=4)
async def handle_heartbeat(ctx: RequestContext, body: Any) -> Any:
    error = await _admit(ctx, AclOperation.READ, body.group_id)
    if error is not ErrorCode.NONE:
        return respond(body, {"throttle_time": NO_THROTTLE, "error_code": error})
    error = _coordinator(ctx).heartbeat(
        body.group_id,
        body.member_id,
        getattr(body, "group_instance_id", None),
        body.generation_id,
    )
    return respond(body, {"throttle_time": NO_THROTTLE, "error_code": error})


@handles(LEAVE_GROUP, min_version=0, max_version=5)
async def handle_leave_group(ctx: RequestContext, body: Any) -> Any:
    error = await _admit(ctx, AclOperation.READ, body.group_id)
    if error is not ErrorCode.NONE:
        return respond(body, {"throttle_time": NO_THROTTLE, "error_code": error, "members": []})
    if _version(body) < 3:
        (error,) = _coordinator(ctx).leave_group(body.group_id, [LeavingMember(body.member_id)])
        return respond(body, {"throttle_time": NO_THROTTLE, "error_code": error})
    leaving = [LeavingMember(m.member_id, m.group_instance_id) for m in body.members]
    errors = _coordinator(ctx).leave_group(body.group_id, leaving)
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": ErrorCode.NONE,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "error_code": error,
                }
                for m, error in zip(leaving, errors, strict=True)
            ],
        },
    )


@handles(OFFSET_COMMIT, min_version=2, max_version=9)
async def handle_offset_commit(ctx: RequestContext, body: Any) -> Any:
    offsets = {
        TopicPartition(topic.name, p.partition_index): CommittedOffset(
            committed_offset=p.committed_offset,
            leader_epoch=getattr(p, "committed_leader_epoch", -1),
            metadata=p.committed_metadata,
        )
        for topic in body.topics
        for p in topic.partitions
    }
    error = await _admit(ctx, AclOperation.READ, body.group_id)
    denied = await _denied_topics(ctx, AclOperation.READ, (tp.topic for tp in offsets))
    unknown = await _unknown_partitions(ctx, (tp for tp in offsets if tp.topic not in denied))
    results = (
        dict.fromkeys(offsets, error)
        if error is not ErrorCode.NONE
        else await _coordinator(ctx).commit_offsets(
            body.group_id,
            body.generation_id_or_member_epoch,
            body.member_id,
            getattr(body, "group_instance_id", None),
            {tp: o for tp, o in offsets.items() if tp.topic not in denied and tp not in unknown},
            api_version=_version(body),
        )
    )
    if error is ErrorCode.NONE:
        results.update(
            dict.fromkeys(
                (tp for tp in offsets if tp.topic in denied), ErrorCode.TOPIC_AUTHORIZATION_FAILED
            )
        )
        results.update(dict.fromkeys(unknown, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": p, "error_code": error} for p, error in partitions
                    ],
                }
                for topic, partitions in _by_topic(results.items())
            ],
        },
    )


@handles(OFFSET_FETCH, min_version=1, max_version=9)
async def handle_offset_fetch(ctx: RequestContext, body: Any) -> Any:
    coordinator = _coordinator(ctx)
    if _version(body) < 8:
        fields = await _fetch_group(ctx, coordinator, body, body.group_id, body.topics)
        return respond(body, {"throttle_time": NO_THROTTLE, **fields})
    groups = [
        {"group_id": g.group_id, **await _fetch_group(ctx, coordinator, body, g.group_id, g.topics)}
        for g in body.groups
    ]
    return respond(body, {"throttle_time": NO_THROTTLE, "groups": groups})


async def _fetch_group(
    ctx: RequestContext,
    coordinator: GroupCoordinator,
    body: Any,
    group_id: str,
    topics: Iterable[Any] | None,
) -> dict[str, Any]:
    error = await _admit(ctx, AclOperation.DESCRIBE, group_id)
    if error is ErrorCode.NONE and _version(body) >= 9:
        member = next(g for g in body.groups if g.group_id == group_id)
        error = coordinator.validate_offset_fetch(group_id, member.member_id, member.member_epoch)
    if error is not ErrorCode.NONE:
        return _unfetched_group(error, topics)
    unstable = await _unstable(ctx, body, group_id)
    return _fetched_group(coordinator, group_id, topics, unstable)


def _unfetched_group(error: ErrorCode, topics: Iterable[Any] | None) -> dict[str, Any]:
    """The group-level error, repeated per partition for versions without one (v0-v1)."""
    return {
        "error_code": error,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": NO_OFFSET,
                        "committed_leader_epoch": -1,
                        "metadata": "",
                        "error_code": error,
                    }
                    for p in t.partition_indexes
                ],
            }
            for t in topics or ()
        ],
    }


async def _unstable(ctx: RequestContext, body: Any, group_id: str) -> set[TopicPartition]:
    """require_stable (KIP-447): partitions with offsets pending in an open transaction
    answer UNSTABLE_OFFSET_COMMIT until the transaction ends."""
    if not getattr(body, "require_stable", False):
        return set()
    return await ctx.broker.transactions.pending_offsets.unstable_partitions(group_id)


def _fetched_group(
    coordinator: GroupCoordinator,
    group_id: str,
    topics: Iterable[Any] | None,
    unstable: set[TopicPartition],
) -> dict[str, Any]:
    partitions = (
        None
        if topics is None
        else [TopicPartition(t.name, p) for t in topics for p in t.partition_indexes]
    )
    fetched = coordinator.fetch_offsets(group_id, partitions)
    return {
        "error_code": ErrorCode.NONE,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": NO_OFFSET if c is None else c.committed_offset,
                        "committed_leader_epoch": -1 if c is None else c.leader_epoch,
                        "metadata": "" if c is None else c.metadata,
                        "error_code": ErrorCode.UNSTABLE_OFFSET_COMMIT
                        if TopicPartition(topic, p) in unstable
                        else ErrorCode.NONE,
                    }
                    for p, c in committed
                ],
            }
            for topic, committed in _by_topic(fetched.items())
        ],
    }


@handles(LIST_GROUPS, min_version=0, max_version=5)
async def handle_list_groups(ctx: RequestContext, body: Any) -> Any:
    groups = _coordinator(ctx).list_groups(
        getattr(body, "states_filter", ()), getattr(body, "types_filter", ())
    )
    if not await is_authorized(
        ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    ):
        described = await authorized_names(
            ctx, AclOperation.DESCRIBE, ResourceType.GROUP, [g.group_id for g in groups]
        )
        groups = [g for g in groups if g.group_id in described]
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": ErrorCode.NONE,
            "groups": [
                {
                    "group_id": g.group_id,
                    "protocol_type": g.protocol_type,
                    "group_state": g.state,
                    "group_type": g.group_type,
                }
                for g in groups
            ],
        },
    )


@handles(DESCRIBE_GROUPS, min_version=0, max_version=6)
async def handle_describe_groups(ctx: RequestContext, body: Any) -> Any:
    described = []
    for group_id in body.groups:
        error = await _admit(ctx, AclOperation.DESCRIBE, group_id)
        if error is not ErrorCode.NONE:
            described.append(
                {
                    "error_code": error,
                    "group_id": group_id,
                    "group_state": "",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                }
            )
            continue
        group = _coordinator(ctx).describe_group(group_id)
        if group is None:
            missing = _version(body) >= 6
            found = _coordinator(ctx).group_type(group_id) is not None
            message = (
                f"Group {group_id} is not a classic group."
                if found
                else f"Group {group_id} not found."
            )
            described.append(
                {
                    "error_code": ErrorCode.GROUP_ID_NOT_FOUND if missing else ErrorCode.NONE,
                    "error_message": message if missing else None,
                    "group_id": group_id,
                    "group_state": "Dead",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                }
            )
            continue
        described.append(
            {
                "error_code": ErrorCode.NONE,
                "group_id": group_id,
                "group_state": group.state,
                "protocol_type": group.protocol_type,
                "protocol_data": group.protocol_name,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in group.members
                ],
            }
        )
    return respond(body, {"throttle_time": NO_THROTTLE, "groups": described})


@handles(DELETE_GROUPS, min_version=0, max_version=2)
async def handle_delete_groups(ctx: RequestContext, body: Any) -> Any:
    coordinator = _coordinator(ctx)
    results: dict[str, ErrorCode] = {}
    for group_id in body.groups_names:
        error = await _admit(ctx, AclOperation.DELETE, group_id)
        if error is not ErrorCode.NONE:
            results[group_id] = error
            continue
        was_share_group = coordinator.group_type(group_id) == SHARE_GROUP_TYPE
        outcome = (await coordinator.delete_groups([group_id]))[group_id]
        results[group_id] = await forget_share_state(ctx, group_id, was_share_group, outcome)
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "results": [
                {"group_id": group_id, "error_code": error} for group_id, error in results.items()
            ],
        },
    )


@handles(OFFSET_DELETE, min_version=0, max_version=0)
async def handle_offset_delete(ctx: RequestContext, body: Any) -> Any:
    partitions = [
        TopicPartition(topic.name, p.partition_index)
        for topic in body.topics
        for p in topic.partitions
    ]
    error = await _admit(ctx, AclOperation.DELETE, body.group_id)
    error, results = (
        (error, {})
        if error is not ErrorCode.NONE
        else await _coordinator(ctx).delete_offsets(body.group_id, partitions)
    )
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": error,
            "topics": [
                {
                    "name": topic,
                    "partitions": [{"partition_index": p, "error_code": e} for p, e in partitions],
                }
                for topic, partitions in _by_topic(results.items())
            ],
        },
    )


def _by_topic(
    items: Iterable[tuple[TopicPartition, _V]],
) -> list[tuple[str, list[tuple[int, _V]]]]:
    grouped: dict[str, list[tuple[int, _V]]] = {}
    for tp, value in items:
        grouped.setdefault(tp.topic, []).append((tp.partition, value))
    return list(grouped.items())
