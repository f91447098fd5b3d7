"""Mirror management RPCs: CreateMirror, ListMirrors, DeleteMirror and the topic RPCs.

AddTopicsToMirror (95), RemoveTopicsFromMirror (96), PauseMirrorTopics (102) and
ResumeMirrorTopics (103) answer per topic; a request-wide problem (an unknown mirror, no
ALTER on the ClusterMirror resource) is the top-level error. Authorization follows the
spec's destination permissions table: CREATE (CreateMirror), ALTER (the topic RPCs and
DeleteMirror) and DESCRIBE (ListMirrors filters) on the mirror, READ on each topic.
The work is the mirror coordinator's, reached through ``MirrorLifecyclePort``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mirrorsim.broker.auth.enforcement import authorize, authorized_names
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.mirror_feature import requires_mirroring
from mirrorsim.broker.handlers.mirror_ports import MirrorLifecyclePort, TopicResults
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import MirrorApiKey


@handles(MirrorApiKey.CREATE_MIRROR, min_version=0, max_version=0)
@requires_mirroring
async def create_mirror(ctx: RequestContext, body: Any) -> Any:
    try:
        await authorize(ctx, AclOperation.CREATE, ResourceType.CLUSTER_MIRROR, body.mirror_name)
        await _lifecycle(ctx).create_mirror(
            body.mirror_name, {c.name: c.value for c in body.config}
        )
    except KafkaError as exc:
        return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(exc)})
    return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(None)})


@handles(MirrorApiKey.LIST_MIRRORS, min_version=0, max_version=0)
@requires_mirroring
async def list_mirrors(ctx: RequestContext, body: Any) -> Any:
    listings = await _lifecycle(ctx).list_mirrors()
    visible = await authorized_names(
        ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER_MIRROR, [m.name for m in listings]
    )
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            **error_fields(None),
            "mirrors": [
                {
                    "mirror_name": m.name,
                    "source_bootstrap": m.bootstrap,
                    "source_cluster_id": m.cluster_id,
                    "topic_count": m.topic_count,
                }
                for m in listings
                if m.name in visible
            ],
        },
    )


@handles(MirrorApiKey.DELETE_MIRROR, min_version=0, max_version=0)
@requires_mirroring
async def delete_mirror(ctx: RequestContext, body: Any) -> Any:
    try:
        await authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER_MIRROR, body.mirror_name)
        await _lifecycle(ctx).delete_mirror(body.mirror_name)
    except KafkaError as exc:
        return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(exc)})
    return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(None)})


@handles(MirrorApiKey.ADD_TOPICS_TO_MIRROR, min_version=0, max_version=0)
@requires_mirroring
async def add_topics_to_mirror(ctx: RequestContext, body: Any) -> Any:
    lifecycle = _lifecycle(ctx)
    ids = {t.topic_name: t.topic_id for t in body.topics}
    return await _topic_rpc(
        ctx,
        body,
        lambda names: lifecycle.add_topics(body.mirror_name, [(n, ids[n]) for n in names]),
    )


@handles(MirrorApiKey.REMOVE_TOPICS_FROM_MIRROR, min_version=0, max_version=0)
@requires_mirroring
async def remove_topics_from_mirror(ctx: RequestContext, body: Any) -> Any:
    lifecycle = _lifecycle(ctx)
    return await _topic_rpc(
        ctx, body, lambda names: lifecycle.remove_topics(body.mirror_name, names)
    )


@handles(MirrorApiKey.PAUSE_MIRROR_TOPICS, min_version=0, max_version=0)
@requires_mirroring
async def pause_mirror_topics(ctx: RequestContext, body: Any) -> Any:
    lifecycle = _lifecycle(ctx)
    return await _topic_rpc(
        ctx, body, lambda names: lifecycle.pause_topics(body.mirror_name, names)
    )


@handles(MirrorApiKey.RESUME_MIRROR_TOPICS, min_version=0, max_version=0)
@requires_mirroring
async def resume_mirror_topics(ctx: RequestContext, body: Any) -> Any:
    lifecycle = _lifecycle(ctx)
    return await _topic_rpc(
        ctx, body, lambda names: lifecycle.resume_topics(body.mirror_name, names)
    )


async def _topic_rpc(
    ctx: RequestContext, body: Any, work: Callable[[list[str]], Awaitable[TopicResults]]
) -> Any:
    """Authorize the mirror (top level) and each topic (READ), then run ``work`` on the rest."""
    names = [t.topic_name for t in body.topics]
    try:
        await authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER_MIRROR, body.mirror_name)
        readable = await authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC, names)
        denied: TopicResults = {
            name: KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            for name in names
            if name not in readable
        }
        results = {**denied, **await work([n for n in names if n in readable])}
    except KafkaError as exc:
        return respond(
            body,
            {
                "throttle_time": NO_THROTTLE,
                **error_fields(exc),
                "mirror_name": body.mirror_name,
                "topics": [_topic_result(t.topic_name, exc) for t in body.topics],
            },
        )
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            **error_fields(None),
            "mirror_name": body.mirror_name,
            "topics": [_topic_result(name, error) for name, error in results.items()],
        },
    )


def _topic_result(name: str, error: KafkaError | None) -> dict[str, Any]:
    """A topic's result; the refusal's reason travels in the tagged ``error_message``."""
    if error is None:
        return {"name": name, "error_code": ErrorCode.NONE}
    return {"name": name, "error_code": error.code, "error_message": error.message}


def _lifecycle(ctx: RequestContext) -> MirrorLifecyclePort:
    lifecycle: MirrorLifecyclePort = ctx.broker.mirror_lifecycle
    return lifecycle
