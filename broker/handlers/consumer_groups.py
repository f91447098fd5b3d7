"""The KIP-848 consumer group APIs: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe
(69), mapped onto `GroupCoordinator`.

The wire names topics by id; this adapter resolves them against the broker's metadata
view (ids the view does not know are dropped from a member's owned partitions, as Kafka
ignores deleted topics) and hands the coordinator the topics it may assign. READ on the
group is needed to heartbeat, DESCRIBE to describe, as in Kafka.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from mirrorsim.broker.auth.enforcement import is_authorized
from mirrorsim.broker.group import GroupCoordinator, TopicPartition
from mirrorsim.broker.group.consumer_messages import (
    ConsumerGroupDescription,
    ConsumerHeartbeat,
    ConsumerHeartbeatResult,
    TopicInfo,
)
from mirrorsim.broker.group.share_messages import ShareHeartbeatResult
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.group_describe import describe_group
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode

CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69
CLASSIC_MEMBER_TYPE = 0
"""ConsumerGroupDescribe v1's member type of a member still using the classic protocol."""
CONSUMER_MEMBER_TYPE = 1


def _coordinator(ctx: RequestContext) -> GroupCoordinator:
    coordinator: GroupCoordinator = ctx.broker.groups
    return coordinator


_catalogs: dict[int, tuple[object, Mapping[str, TopicInfo]]] = {}
"""The catalog of each metadata view's topics, by the identity of its topics mapping."""
_CATALOGS_KEPT = 16


def topic_catalog(ctx: RequestContext) -> Mapping[str, TopicInfo]:
    """Every topic of the broker's metadata view, with its id and partition count.

    A refresh that finds no change keeps the view's topics mapping, so the catalog is
    built once per change and the same object is handed to the coordinator, which then
    skips recomputing each group's subscribed topics (`ConsumerGroupCoordinator`)."""
    topics = ctx.broker.snapshot.topics
    cached = _catalogs.get(id(topics))
    if cached is not None and cached[0] is topics:
        return cached[1]
    catalog = MappingProxyType(
        {
            name: TopicInfo(record.topic_id, len(record.partitions))
            for name, record in topics.items()
        }
    )
    if len(_catalogs) >= _CATALOGS_KEPT:
        del _catalogs[next(iter(_catalogs))]
    _catalogs[id(topics)] = (topics, catalog)
    return catalog


def _owned(
    wire: Iterable[Any] | None, by_id: Mapping[uuid.UUID, str]
) -> frozenset[TopicPartition] | None:
    if wire is None:
        return None
    return frozenset(
        TopicPartition(by_id[t.topic_id], p)
        for t in wire
        if t.topic_id in by_id
        for p in t.partitions
    )


def wire_partitions(
    partitions: Iterable[TopicPartition], topics: Mapping[str, TopicInfo], *, named: bool
) -> list[dict[str, Any]]:
    """Partitions by topic id; ``named`` adds the topic name, which the describe APIs
    (ConsumerGroupDescribe, ShareGroupDescribe) carry and the heartbeats do not."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        if tp.topic in topics:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [
        {
            "topic_id": topics[name].topic_id,
            **({"topic_name": name} if named else {}),
            "partitions": sorted(parts),
        }
        for name, parts in sorted(by_topic.items())
    ]


@handles(CONSUMER_GROUP_HEARTBEAT, min_version=0, max_version=1)
async def handle_consumer_group_heartbeat(ctx: RequestContext, body: Any) -> Any:
    return heartbeat_response(ctx, body, await _heartbeat(ctx, body))


def heartbeat_response(
    ctx: RequestContext, body: Any, result: ConsumerHeartbeatResult | ShareHeartbeatResult
) -> Any:
    """The answer to a ConsumerGroupHeartbeat or a ShareGroupHeartbeat: the same fields,
    the assignment by topic id and only when it changed."""
    topics = topic_catalog(ctx)
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": result.error,
            "error_message": result.message,
            "member_id": result.member_id or body.member_id,
            "member_epoch": result.member_epoch,
            "heartbeat_interval": timedelta(milliseconds=result.heartbeat_interval_ms),
            "assignment": None
            if result.assignment is None
            else {"topic_partitions": wire_partitions(result.assignment, topics, named=False)},
        },
    )


async def _heartbeat(ctx: RequestContext, body: Any) -> ConsumerHeartbeatResult:
    if not await is_authorized(ctx, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return ConsumerHeartbeatResult(
            ErrorCode.GROUP_AUTHORIZATION_FAILED, body.member_id, body.member_epoch
        )
    error = await _coordinator(ctx).acquire(body.group_id)
    if error is not ErrorCode.NONE:
        return ConsumerHeartbeatResult(error, body.member_id, body.member_epoch)
    topics = topic_catalog(ctx)
    by_id = {info.topic_id: name for name, info in topics.items()}
    rebalance_timeout = body.rebalance_timeout
    return _coordinator(ctx).consumer_group_heartbeat(
        ConsumerHeartbeat(
            group_id=body.group_id,
            member_id=body.member_id,
            member_epoch=body.member_epoch,
            instance_id=body.instance_id,
            rack_id=body.rack_id,
            rebalance_timeout_ms=int(rebalance_timeout / timedelta(milliseconds=1)),
            subscribed_topic_names=None
            if body.subscribed_topic_names is None
            else tuple(body.subscribed_topic_names),
            subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None),
            server_assignor=body.server_assignor,
            owned=_owned(body.topic_partitions, by_id),
            client_id=ctx.header.client_id or "",
            client_host=f"/{ctx.client_host}",
        ),
        topics,
    )


@handles(CONSUMER_GROUP_DESCRIBE, min_version=0, max_version=1)
async def handle_consumer_group_describe(ctx: RequestContext, body: Any) -> Any:
    topics = topic_catalog(ctx)
    described = [
        await describe_group(
            ctx,
            group_id,
            include_authorized_operations=body.include_authorized_operations,
            kind="consumer",
            describe=lambda g: _coordinator(ctx).describe_consumer_group(g, topics),
            render=lambda group, operations: _described(group, topics, operations),
        )
        for group_id in body.group_ids
    ]
    return respond(body, {"throttle_time": NO_THROTTLE, "groups": described})


def _described(
    group: ConsumerGroupDescription, topics: Mapping[str, TopicInfo], operations: int
) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "group_id": group.group_id,
        "group_state": group.state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": group.assignor_name,
        "members": [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "subscribed_topic_regex": m.subscribed_topic_regex,
                "assignment": {
                    "topic_partitions": wire_partitions(m.assignment, topics, named=True)
                },
                "target_assignment": {
                    "topic_partitions": wire_partitions(m.target_assignment, topics, named=True)
                },
                "member_type": CLASSIC_MEMBER_TYPE
                if m.uses_classic_protocol
                else CONSUMER_MEMBER_TYPE,
            }
            for m in group.members
        ],
        "authorized_operations": operations,
    }
