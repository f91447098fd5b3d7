"""KIP-932's share-group offset APIs: DescribeShareGroupOffsets (90, v0-v1),
AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92), answered by the group's
coordinator (NOT_COORDINATOR elsewhere) from the durable share state (`ShareStateStore`).

A share group's "offset" of a partition is its share-partition start offset (SPSO): every
record below it is done with. Kafka's share coordinator keeps it in ``__share_group_state``;
here it is the stored `ShareSnapshot`'s ``start_offset``. Describing reads the stored
states as they are; altering starts a partition's state over at the given offset with
nothing in flight (`ShareStateStore.reset_start`); deleting forgets a topic's states, so
the next consumer starts where ``share.auto.offset.reset`` says. The leader holding a
partition's old state learns of either when a share session next opens on it
(`SharePartitionManager.refresh_idle`); a state written meanwhile by that leader is
fenced by the raised state epoch.

As in Kafka, only an empty group's offsets change: a share group with members answers
NON_EMPTY_GROUP, a group of another type GROUP_ID_NOT_FOUND ("Group G is not a share
group."). Altering an unknown group id creates the (Empty) share group, as Kafka's
coordinator does; deleting offsets of one answers GROUP_ID_NOT_FOUND unless the store
still holds share state for it (share groups outlive a restart in Kafka; here only their
state does). Errors and authorization follow Kafka's KafkaApis:

- Describe: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED for the group);
  DESCRIBE on each named topic (else TOPIC_AUTHORIZATION_FAILED per partition); with
  ``topics`` null (every topic with state) the topics the caller may not describe are
  left out. A partition without state, and every partition of an unknown topic, answers
  start offset -1.
- Alter: READ on the group (top-level GROUP_AUTHORIZATION_FAILED), READ on each topic
  (TOPIC_AUTHORIZATION_FAILED per partition), then UNKNOWN_TOPIC_OR_PARTITION for an
  unknown topic or partition. A negative start offset answers INVALID_REQUEST.
- Delete: DELETE on the group, READ on each topic (TOPIC_AUTHORIZATION_FAILED per
  topic); an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION, a topic without state
  UNKNOWN_TOPIC_OR_PARTITION "There is no offset information to delete.".

The leader epoch described is -1 (unknown): the store keeps it beside the state but does
not hand it out. The lag (v1) is `share_lag`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from mirrorsim.broker.auth.enforcement import authorized_names, is_authorized
from mirrorsim.broker.group import GroupCoordinator
from mirrorsim.broker.group.consumer_messages import TopicInfo
from mirrorsim.broker.group.share_messages import SHARE_GROUP_TYPE
from mirrorsim.broker.group.share_state import RecordState, ShareSnapshot
from mirrorsim.broker.group.share_state_store import TopicIdPartition, UnknownSharePartitionError
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.consumer_groups import topic_catalog
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.uuids import ZERO_UUID

DESCRIBE_SHARE_GROUP_OFFSETS = 90
ALTER_SHARE_GROUP_OFFSETS = 91
DELETE_SHARE_GROUP_OFFSETS = 92

NO_START_OFFSET = -1
UNKNOWN_LEADER_EPOCH = -1
UNKNOWN_LAG = -1
NOTHING_TO_DELETE = "There is no offset information to delete."
COMPLETE = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})


def share_lag(snapshot: ShareSnapshot, high_watermark: int) -> int:
    """The records from the start offset up to the high watermark that are not yet
    acknowledged or archived: available, acquired and never delivered ones alike (Kafka's
    end offset - start offset - delivery-complete count). Never negative: a start offset
    moved past the end has nothing to read yet."""
    complete = sum(
        max(0, min(batch.last_offset + 1, high_watermark) - batch.first_offset)
        for batch in snapshot.state_batches
        if batch.state in COMPLETE
    )
    return max(0, high_watermark - snapshot.start_offset - complete)


def _coordinator(ctx: RequestContext) -> GroupCoordinator:
    coordinator: GroupCoordinator = ctx.broker.groups
    return coordinator


async def _catalog(ctx: RequestContext, names: Iterable[str]) -> Mapping[str, TopicInfo]:
    """The broker's topics, read from the store once more when one of ``names`` is not in
    the metadata view yet (a topic created a moment ago)."""
    topics = topic_catalog(ctx)
    if any(name not in topics for name in names):
        await ctx.broker.refresh_metadata()
        topics = topic_catalog(ctx)
    return topics


async def _denied_topics(ctx: RequestContext, operation: AclOperation, names: set[str]) -> set[str]:
    return names - await authorized_names(ctx, operation, ResourceType.TOPIC, sorted(names))


def _error_fields(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    if error is ErrorCode.NONE:
        return {"error_code": error, "error_message": None}
    return {"error_code": error, "error_message": message or error.message}


# DescribeShareGroupOffsets


@handles(DESCRIBE_SHARE_GROUP_OFFSETS, min_version=0, max_version=1)
async def handle_describe_share_group_offsets(ctx: RequestContext, body: Any) -> Any:
    groups = [await _describe_group(ctx, group) for group in body.groups]
    return respond(body, {"throttle_time": NO_THROTTLE, "groups": groups})


async def _describe_group(ctx: RequestContext, request: Any) -> dict[str, Any]:
    group_id = request.group_id
    if not await is_authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return _group_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error = await _coordinator(ctx).acquire(group_id)
    if error is not ErrorCode.NONE:
        return _group_error(group_id, error)
    if request.topics is None:
        topics = await _all_offsets(ctx, group_id)
    else:
        topics = await _named_offsets(ctx, group_id, request.topics)
    return {"group_id": group_id, "topics": topics, **_error_fields(ErrorCode.NONE)}


def _group_error(group_id: str, error: ErrorCode) -> dict[str, Any]:
    return {"group_id": group_id, "topics": [], **_error_fields(error)}


async def _all_offsets(ctx: RequestContext, group_id: str) -> list[dict[str, Any]]:
    """Every partition the group has state for, of the topics the caller may describe."""
    states = await ctx.broker.share_states.read_group(group_id)
    topics = topic_catalog(ctx)
    names = {info.topic_id: name for name, info in topics.items()}
    by_topic: dict[str, list[int]] = {}
    for key in states:
        if key.topic_id in names:
            by_topic.setdefault(names[key.topic_id], []).append(key.partition)
    allowed = await authorized_names(
        ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, sorted(by_topic)
    )
    return [
        _described_topic(ctx, name, topics[name].topic_id, sorted(parts), states)
        for name, parts in sorted(by_topic.items())
        if name in allowed
    ]


async def _named_offsets(
    ctx: RequestContext, group_id: str, requested: Iterable[Any]
) -> list[dict[str, Any]]:
    wanted = [(t.topic_name, list(t.partitions)) for t in requested]
    if not wanted:
        return []
    denied = await _denied_topics(ctx, AclOperation.DESCRIBE, {name for name, _ in wanted})
    topics = await _catalog(ctx, (name for name, _ in wanted if name not in denied))
    states = await ctx.broker.share_states.read_group(group_id)
    described = []
    for name, partitions in wanted:
        if name in denied:
            described.append(_denied_topic(name, partitions))
        else:
            topic_id = topics[name].topic_id if name in topics else ZERO_UUID
            described.append(_described_topic(ctx, name, topic_id, partitions, states))
    return described


def _denied_topic(name: str, partitions: list[int]) -> dict[str, Any]:
    return {
        "topic_name": name,
        "topic_id": ZERO_UUID,
        "partitions": [
            {
                "partition_index": p,
                "start_offset": NO_START_OFFSET,
                "leader_epoch": UNKNOWN_LEADER_EPOCH,
                "lag": UNKNOWN_LAG,
                **_error_fields(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
            }
            for p in partitions
        ],
    }


def _described_topic(
    ctx: RequestContext,
    name: str,
    topic_id: uuid.UUID,
    partitions: list[int],
    states: Mapping[TopicIdPartition, ShareSnapshot],
) -> dict[str, Any]:
    described = []
    for p in partitions:
        snapshot = states.get(TopicIdPartition(topic_id, p))
        described.append(
            {
                "partition_index": p,
                "start_offset": NO_START_OFFSET if snapshot is None else snapshot.start_offset,
                "leader_epoch": UNKNOWN_LEADER_EPOCH,
                "lag": UNKNOWN_LAG if snapshot is None else _lag(ctx, name, p, snapshot),
                **_error_fields(ErrorCode.NONE),
            }
        )
    return {"topic_name": name, "topic_id": topic_id, "partitions": described}


def _lag(ctx: RequestContext, topic: str, partition: int, snapshot: ShareSnapshot) -> int:
    """From this broker's replica of the partition (the leader's high watermark, or the
    one a follower last heard); -1 when this broker holds no replica of it."""
    try:
        replica = ctx.broker.replica_manager.partition(topic, partition)
    except KafkaError:
        return UNKNOWN_LAG
    return share_lag(snapshot, replica.high_watermark)


# AlterShareGroupOffsets


@handles(ALTER_SHARE_GROUP_OFFSETS, min_version=0, max_version=0)
async def handle_alter_share_group_offsets(ctx: RequestContext, body: Any) -> Any:
    group_id = body.group_id
    if not await is_authorized(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
        return _alter_response(body, [], ErrorCode.GROUP_AUTHORIZATION_FAILED)
    requested = list(body.topics)
    denied = await _denied_topics(ctx, AclOperation.READ, {t.topic_name for t in requested})
    topics = await _catalog(ctx, (t.topic_name for t in requested if t.topic_name not in denied))
    refused = [
        _altered_topic(
            t.topic_name,
            ZERO_UUID,
            dict.fromkeys(
                (p.partition_index for p in t.partitions),
                ErrorCode.TOPIC_AUTHORIZATION_FAILED
                if t.topic_name in denied
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ),
        )
        for t in requested
        if t.topic_name in denied or t.topic_name not in topics
    ]
    error, message = await _alterable(ctx, group_id)
    if error is not ErrorCode.NONE:
        return _alter_response(body, refused, error, message)
    altered = [
        await _alter_topic(ctx, group_id, t, topics[t.topic_name])
        for t in requested
        if t.topic_name not in denied and t.topic_name in topics
    ]
    return _alter_response(body, altered + refused, ErrorCode.NONE)


async def _alterable(ctx: RequestContext, group_id: str) -> tuple[ErrorCode, str | None]:
    """Whether the group's offsets may change: the group is served here, and is an empty
    share group or is created as one."""
    error = await _coordinator(ctx).acquire(group_id)
    if error is not ErrorCode.NONE:
        return error, None
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, None
    if _coordinator(ctx).group_type(group_id) is None:
        _coordinator(ctx).share.ensure(group_id)
    return _empty_share_group(_coordinator(ctx), group_id)


def _empty_share_group(
    coordinator: GroupCoordinator, group_id: str
) -> tuple[ErrorCode, str | None]:
    kind = coordinator.group_type(group_id)
    if kind is None:
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
    if kind != SHARE_GROUP_TYPE:
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
    described = coordinator.describe_share_group(group_id)
    if described is not None and described.members:
        return ErrorCode.NON_EMPTY_GROUP, None
    return ErrorCode.NONE, None


async def _alter_topic(
    ctx: RequestContext, group_id: str, topic: Any, info: TopicInfo
) -> dict[str, Any]:
    results: dict[int, ErrorCode] = {}
    for p in topic.partitions:
        index, start = p.partition_index, p.start_offset
        if not 0 <= index < info.partitions:
            results[index] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif start < 0:
            results[index] = ErrorCode.INVALID_REQUEST
        else:
            results[index] = await _reset(ctx, group_id, info.topic_id, index, start)
    return _altered_topic(topic.topic_name, info.topic_id, results)


async def _reset(
    ctx: RequestContext, group_id: str, topic_id: uuid.UUID, partition: int, start: int
) -> ErrorCode:
    try:
        await ctx.broker.share_states.reset_start(group_id, topic_id, partition, start)
    except UnknownSharePartitionError:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NONE


def _altered_topic(
    name: str, topic_id: uuid.UUID, results: Mapping[int, ErrorCode]
) -> dict[str, Any]:
    return {
        "topic_name": name,
        "topic_id": topic_id,
        "partitions": [
            {"partition_index": p, **_error_fields(error)} for p, error in results.items()
        ],
    }


def _alter_response(
    body: Any, topics: list[dict[str, Any]], error: ErrorCode, message: str | None = None
) -> Any:
    return respond(
        body,
        {"throttle_time": NO_THROTTLE, "responses": topics, **_error_fields(error, message)},
    )


# DeleteShareGroupOffsets


@handles(DELETE_SHARE_GROUP_OFFSETS, min_version=0, max_version=0)
async def handle_delete_share_group_offsets(ctx: RequestContext, body: Any) -> Any:
    group_id = body.group_id
    if not await is_authorized(ctx, AclOperation.DELETE, ResourceType.GROUP, group_id):
        return _delete_response(body, [], ErrorCode.GROUP_AUTHORIZATION_FAILED)
    names = list(dict.fromkeys(t.topic_name for t in body.topics))
    denied = await _denied_topics(ctx, AclOperation.READ, set(names))
    refused = [
        _deleted_topic(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for name in names
        if name in denied
    ]
    error, message = await _deletable(ctx, group_id)
    if error is not ErrorCode.NONE:
        return _delete_response(body, refused, error, message)
    allowed = [name for name in names if name not in denied]
    topics = await _catalog(ctx, allowed)
    stored = {key.topic_id for key in await ctx.broker.share_states.read_group(group_id)}
    deleted, missing = [], []
    for name in allowed:
        info = topics.get(name)
        if info is None:
            missing.append(_deleted_topic(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        elif info.topic_id not in stored:
            missing.append(
                _deleted_topic(
                    name, info.topic_id, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOTHING_TO_DELETE
                )
            )
        else:
            deleted.append(_deleted_topic(name, info.topic_id, ErrorCode.NONE))
    await ctx.broker.share_states.delete_group_topics(group_id, [t["topic_id"] for t in deleted])
    return _delete_response(body, refused + deleted + missing, ErrorCode.NONE)


async def _deletable(ctx: RequestContext, group_id: str) -> tuple[ErrorCode, str | None]:
    """As `_alterable`, but an unknown group id is not created: only its stored state (a
    group left from before a restart) makes it a share group here."""
    coordinator = _coordinator(ctx)
    error = await coordinator.acquire(group_id)
    if error is not ErrorCode.NONE:
        return error, None
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, None
    if coordinator.group_type(group_id) is None and await ctx.broker.share_states.read_group(
        group_id
    ):
        return ErrorCode.NONE, None
    return _empty_share_group(coordinator, group_id)


def _deleted_topic(
    name: str, topic_id: uuid.UUID, error: ErrorCode, message: str | None = None
) -> dict[str, Any]:
    return {"topic_name": name, "topic_id": topic_id, **_error_fields(error, message)}


def _delete_response(
    body: Any, topics: list[dict[str, Any]], error: ErrorCode, message: str | None = None
) -> Any:
    return respond(
        body,
        {"throttle_time": NO_THROTTLE, "responses": topics, **_error_fields(error, message)},
    )


# DeleteGroups


async def forget_share_state(
    ctx: RequestContext, group_id: str, was_share_group: bool, outcome: ErrorCode
) -> ErrorCode:
    """DeleteGroups' outcome for ``group_id`` once its share state is dealt with: a share
    group deleted loses its state too, as Kafka deletes it before the group; an id no group
    has that still has stored share state (a share group from before a restart) is an Empty
    share group, whose state is deleted."""
    if outcome is ErrorCode.NONE and was_share_group:
        await ctx.broker.share_states.delete_group(group_id)
    elif (
        outcome is ErrorCode.GROUP_ID_NOT_FOUND
        and _coordinator(ctx).group_type(group_id) is None
        and await ctx.broker.share_states.read_group(group_id)
    ):
        await ctx.broker.share_states.delete_group(group_id)
        return ErrorCode.NONE
    return outcome
