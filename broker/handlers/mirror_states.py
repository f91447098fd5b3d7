"""Mirror state RPCs: Read/WriteMirrorStates, LastMirroredEpochs, DescribeMirrors, BumpLeaderEpochs.

ReadMirrorStates (100) and WriteMirrorStates (101) are the coordinator's inter-broker
calls: they are served from the ``__mirror_state`` partitions this broker leads, and a
partition it does not lead answers COORDINATOR_NOT_AVAILABLE. LastMirroredEpochs (97) is
what a failing-back destination asks this cluster (its new source); it is answered
through the coordinator of each partition, wherever that is. DescribeMirrors (99)
reports the mirror partitions this broker leads (the Admin client asks every broker).
WriteMirrorStates' RemovedTopics tombstones those topics of the mirror in the partitions
this broker leads (DeleteMirror sends it to every other coordinator). BumpLeaderEpochs
(105), ReadMirrorStates and WriteMirrorStates need CLUSTER_ACTION on the cluster, like
Kafka's other inter-broker calls (the whole request is refused otherwise).

LastMirroredEpochs is not one of them: its caller is another cluster, connected with the
mirror's own credentials, so it needs what the spec asks of the mirror principal on the
source for the PREPARING truncation, READ on the cluster (the spec's source-side ACL
table lists that query under DescribeMirrors, which carries it there).
"""

from __future__ import annotations

import asyncio
from typing import Any

from mirrorsim.broker.auth.enforcement import is_authorized
from mirrorsim.broker.config import MIRROR_NAME
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.mirror_feature import requires_mirroring
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.broker.metadata.leader_epochs import bump_leader_epochs
from mirrorsim.coordinator.mirror_lag import mirror_lag
from mirrorsim.coordinator.state_machine import (
    NO_EPOCH,
    MirrorPartitionState,
    StateUpdate,
    StoredState,
    parse_mirror_name,
)
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import MirrorApiKey

CLUSTER_MIRROR_OPERATIONS = (
    AclOperation.CREATE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
)
"""The operations the spec's permission table grants on a ClusterMirror."""


@handles(MirrorApiKey.READ_MIRROR_STATES, min_version=0, max_version=0)
async def read_mirror_states(ctx: RequestContext, body: Any) -> Any:
    if refused := await _cluster_action_refused(ctx):
        return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(refused), "topics": []})
    states = ctx.broker.mirrors.states
    topics = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            index = int(p.partition_index)
            try:
                found = states.read_local(body.mirror_name, topic.name, [index])[index]
            except KafkaError as exc:
                partitions.append(_read_result(index, MirrorPartitionState.UNKNOWN, NO_EPOCH, exc))
            else:
                partitions.append(_read_result(index, found.state, found.last_mirror_epoch, None))
        topics.append({"name": topic.name, "partitions": partitions})
    return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(None), "topics": topics})


async def _cluster_action_refused(ctx: RequestContext) -> KafkaError | None:
    """The coordinators' calls need CLUSTER_ACTION on the cluster (the spec's ACL table),
    granted as for follower fetches: the internal clients connect without credentials to
    the inter-broker listener, whose principal ``super.users`` lists."""
    if await is_authorized(
        ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    ):
        return None
    return KafkaError(
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Mirror states need CLUSTER_ACTION on the cluster"
    )


def _read_result(
    index: int, state: MirrorPartitionState, epoch: int, error: KafkaError | None
) -> dict[str, Any]:
    return {
        "partition_index": index,
        "state": int(state),
        "last_mirror_epoch": epoch,
        "error_code": ErrorCode.NONE if error is None else error.code,
    }


@handles(MirrorApiKey.WRITE_MIRROR_STATES, min_version=0, max_version=0)
async def write_mirror_states(ctx: RequestContext, body: Any) -> Any:
    if refused := await _cluster_action_refused(ctx):
        return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(refused), "topics": []})
    states = ctx.broker.mirrors.states
    topics = []
    for topic in body.topics:
        indexes = [int(p.partition_index) for p in topic.partitions]
        # One write per partition, so each gets its own error code; written concurrently,
        # they share one append per __mirror_state partition.
        outcomes = await asyncio.gather(
            *(
                states.write_local(body.mirror_name, topic.name, {index: _update(p)})
                for index, p in zip(indexes, topic.partitions, strict=True)
            ),
            return_exceptions=True,
        )
        partitions = []
        for index, outcome in zip(indexes, outcomes, strict=True):
            if isinstance(outcome, KafkaError):
                code = outcome.code
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                code = ErrorCode.NONE
            partitions.append({"partition_index": index, "error_code": code})
        topics.append({"name": topic.name, "partitions": partitions})
    if body.removed_topics:
        await states.remove_topics_local(body.mirror_name, set(body.removed_topics))
    return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(None), "topics": topics})


def _update(p: Any) -> StateUpdate:
    state = MirrorPartitionState(int(p.state))
    epoch = int(p.last_mirror_epoch)
    return StateUpdate(
        state=None if state is MirrorPartitionState.UNKNOWN else state,
        last_mirror_epoch=None if epoch == NO_EPOCH else epoch,
    )


@handles(MirrorApiKey.BUMP_LEADER_EPOCHS, min_version=0, max_version=0)
async def bump_leader_epochs_handler(ctx: RequestContext, body: Any) -> Any:
    manager = ctx.broker.replica_manager
    allowed = await is_authorized(
        ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    )
    topics = []
    for topic in body.topics:
        name = manager.topic_name(topic.topic_id) if topic.topic_id else None
        indexes = [int(p.partition_index) for p in topic.partitions]
        code = ErrorCode.NONE
        if not allowed:
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        elif name is None:
            code = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            minimums = {int(p.partition_index): int(p.min_leader_epoch) for p in topic.partitions}
            try:
                await bump_leader_epochs(ctx.broker, name, minimums)
            except KafkaError as exc:
                code = exc.code
        topics.append(
            {
                "topic_name": name or "",
                "partitions": [{"partition_index": i, "error_code": code} for i in indexes],
            }
        )
    return respond(
        body, {"throttle_time": NO_THROTTLE, "error_code": ErrorCode.NONE, "topics": topics}
    )


async def _last_mirror_states(
    states: Any, mirror: str, topic: str, partitions: list[int]
) -> dict[int, Any]:
    """A cluster that never created ``__mirror_state`` has mirrored nothing, so it knows no
    last mirrored epoch (-1); an existing state topic without a reachable coordinator is a
    retriable error instead, because -1 would make the asking cluster discard its log."""
    if not states.topic_exists:
        return {p: StoredState(MirrorPartitionState.UNKNOWN, NO_EPOCH) for p in partitions}
    return dict(await states.read(mirror, topic, partitions))


@handles(MirrorApiKey.LAST_MIRRORED_EPOCHS, min_version=0, max_version=0)
async def last_mirrored_epochs(ctx: RequestContext, body: Any) -> Any:
    if not await is_authorized(ctx, AclOperation.READ, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME):
        refused = KafkaError(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "LastMirroredEpochs needs READ on the cluster"
        )
        return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(refused), "topics": []})
    states = ctx.broker.mirrors.states
    topics = []
    for topic in body.topics:
        wanted = [int(p) for p in topic.partitions]
        try:
            found = await _last_mirror_states(states, body.mirror_name, topic.topic_name, wanted)
        except KafkaError as exc:
            partitions = [
                {"partition_index": p, "error_code": exc.code, "last_mirrored_epoch": NO_EPOCH}
                for p in wanted
            ]
        else:
            partitions = [
                {
                    "partition_index": p,
                    "error_code": ErrorCode.NONE,
                    "last_mirrored_epoch": found[p].last_mirror_epoch,
                }
                for p in wanted
            ]
        topics.append(
            {"topic_id": topic.topic_id, "topic_name": topic.topic_name, "partitions": partitions}
        )
    return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(None), "topics": topics})


@handles(MirrorApiKey.DESCRIBE_MIRRORS, min_version=0, max_version=0)
@requires_mirroring
async def describe_mirrors(ctx: RequestContext, body: Any) -> Any:
    """Named mirrors each get an answer (MIRROR_AUTHORIZATION_FAILED before UNKNOWN_MIRROR,
    so a denied caller learns nothing of existence); "all mirrors" means all the caller
    may describe, as Kafka's DescribeTopics and ListGroups filter, so a monitoring
    principal granted one mirror sees that one and no other name."""
    broker = ctx.broker
    known = await _mirror_names(broker)
    mirrors = []
    for name in list(body.mirror_names) or sorted(known):
        allowed = await is_authorized(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER_MIRROR, name)
        if not allowed and not body.mirror_names:
            continue
        if not allowed:
            code = ErrorCode.MIRROR_AUTHORIZATION_FAILED
            mirrors.append({"error_code": code, "mirror_name": name, "topics": []})
            continue
        if name not in known:
            mirrors.append(
                {"error_code": ErrorCode.UNKNOWN_MIRROR, "mirror_name": name, "topics": []}
            )
            continue
        described = {
            "error_code": ErrorCode.NONE,
            "mirror_name": name,
            "topics": _led_topics(broker, name),
        }
        if body.include_authorized_operations:
            described["authorized_operations"] = await _authorized_operations(ctx, name)
        mirrors.append(described)
    return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(None), "mirrors": mirrors})


async def _authorized_operations(ctx: RequestContext, mirror: str) -> int:
    """Kafka's AuthorizedOperations bitfield over the operations a ClusterMirror supports."""
    bits = 0
    for operation in CLUSTER_MIRROR_OPERATIONS:
        if await is_authorized(ctx, operation, ResourceType.CLUSTER_MIRROR, mirror):
            bits |= 1 << operation
    return bits


async def _mirror_names(broker: HandlerBroker) -> set[str]:
    return set(await asyncio.to_thread(broker.store.mirrors))


def _led_topics(broker: HandlerBroker, mirror: str) -> list[dict[str, Any]]:
    topics = []
    for name, topic in sorted(broker.snapshot.topics.items()):
        if parse_mirror_name(topic.configs.get(MIRROR_NAME)).mirror != mirror:
            continue
        partitions = []
        for assignment in topic.partitions:
            if assignment.leader != broker.broker_id:
                continue
            partitions.append(_partition_detail(broker, name, assignment.partition))
        if partitions:
            topics.append({"topic_name": name, "partitions": partitions})
    return topics


def _partition_detail(broker: HandlerBroker, topic: str, index: int) -> dict[str, Any]:
    status = broker.mirrors.partitions.get((topic, index))
    try:
        destination = broker.replica_manager.partition(topic, index).log_end_offset
    except KafkaError:
        destination = -1
    source = status.source_high_watermark if status is not None else -1
    return {
        "partition_index": index,
        "source_offset": source,
        "destination_offset": destination,
        "lag": -1 if (lag := mirror_lag(source, destination)) is None else lag,
        "state": (status.state if status is not None else MirrorPartitionState.UNKNOWN).name,
        "last_mirror_epoch": status.last_mirror_epoch if status is not None else NO_EPOCH,
    }
