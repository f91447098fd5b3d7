"""The KIP-932 share group membership APIs: ShareGroupHeartbeat (76) and ShareGroupDescribe
(77), mapped onto `GroupCoordinator`.

Only version 1 is served: Kafka 4.1 made it the first production version (the member id is
the client's own), and Kafka 4.1 clients and librdkafka 2.16 send it. Assignments go out
by topic id, resolved against the broker's metadata view (`topic_catalog`). As in Kafka's
KafkaApis, a heartbeat needs READ on the group and DESCRIBE on every topic it subscribes
to (else TOPIC_AUTHORIZATION_FAILED, so a client cannot learn of topics it may not see);
describing needs DESCRIBE on the group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mirrorsim.broker.auth.enforcement import (
    authorized_names,
    is_authorized,
)
from mirrorsim.broker.group import GroupCoordinator
from mirrorsim.broker.group.consumer_messages import TopicInfo
from mirrorsim.broker.group.share_messages import (
    ShareGroupDescription,
    ShareHeartbeat,
    ShareHeartbeatResult,
)
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.consumer_groups import (
    heartbeat_response,
    topic_catalog,
    wire_partitions,
)
from mirrorsim.broker.handlers.group_describe import describe_group
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode

SHARE_GROUP_HEARTBEAT = 76
SHARE_GROUP_DESCRIBE = 77


def _coordinator(ctx: RequestContext) -> GroupCoordinator:
    coordinator: GroupCoordinator = ctx.broker.groups
    return coordinator


@handles(SHARE_GROUP_HEARTBEAT, min_version=1, max_version=1)
async def handle_share_group_heartbeat(ctx: RequestContext, body: Any) -> Any:
    return heartbeat_response(ctx, body, await _heartbeat(ctx, body))


async def _heartbeat(ctx: RequestContext, body: Any) -> ShareHeartbeatResult:
    if not await is_authorized(ctx, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return ShareHeartbeatResult(
            ErrorCode.GROUP_AUTHORIZATION_FAILED, body.member_id, body.member_epoch
        )
    names = list(body.subscribed_topic_names or ())
    if names and len(
        await authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    ) < len(set(names)):
        return ShareHeartbeatResult(
            ErrorCode.TOPIC_AUTHORIZATION_FAILED, body.member_id, body.member_epoch
        )
    error = await _coordinator(ctx).acquire(body.group_id)
    if error is not ErrorCode.NONE:
        return ShareHeartbeatResult(error, body.member_id, body.member_epoch)
    return _coordinator(ctx).share_group_heartbeat(
        ShareHeartbeat(
            group_id=body.group_id,
            member_id=body.member_id,
            member_epoch=body.member_epoch,
            rack_id=body.rack_id,
            subscribed_topic_names=None
            if body.subscribed_topic_names is None
            else tuple(body.subscribed_topic_names),
            client_id=ctx.header.client_id or "",
            client_host=f"/{ctx.client_host}",
        ),
        topic_catalog(ctx),
    )


@handles(SHARE_GROUP_DESCRIBE, min_version=1, max_version=1)
async def handle_share_group_describe(ctx: RequestContext, body: Any) -> Any:
    topics = topic_catalog(ctx)
    described = [
        await describe_group(
            ctx,
            group_id,
            include_authorized_operations=body.include_authorized_operations,
            kind="share",
            describe=_coordinator(ctx).describe_share_group,
            render=lambda group, operations: _described(group, topics, operations),
        )
        for group_id in body.group_ids
    ]
    return respond(body, {"throttle_time": NO_THROTTLE, "groups": described})


def _described(
    group: ShareGroupDescription, topics: Mapping[str, TopicInfo], operations: int
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
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "assignment": {
                    "topic_partitions": wire_partitions(m.assignment, topics, named=True)
                },
            }
            for m in group.members
        ],
        "authorized_operations": operations,
    }
