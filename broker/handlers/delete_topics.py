"""DeleteTopics by name (v1-v5) or by name or topic id (v6)."""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.uuids import ZERO_UUID

DELETE_TOPICS_KEY = 20


@handles(DELETE_TOPICS_KEY, min_version=1, max_version=6)
async def handle(ctx: RequestContext, body: Any) -> Any:
    broker = ctx.broker
    if hasattr(body, "topics"):
        wanted = [(t.name, t.topic_id) for t in body.topics]
    else:
        wanted = [(name, None) for name in body.topic_names]
    results = []
    for name, topic_id in wanted:
        if not broker.config("delete.topic.enable"):
            error: KafkaError | None = KafkaError(ErrorCode.TOPIC_DELETION_DISABLED)
            results.append({"name": name, "topic_id": topic_id, **error_fields(error)})
            continue
        if name is None:
            record = broker.snapshot.topic_by_id(topic_id)
            if record is None:
                error = KafkaError(ErrorCode.UNKNOWN_TOPIC_ID)
                results.append({"name": None, "topic_id": topic_id, **error_fields(error)})
                continue
            name = record.name
        try:
            await authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, name)
            deleted = await broker.controller.delete_topic(name)
        except KafkaError as exc:
            results.append({"name": name, "topic_id": topic_id or ZERO_UUID, **error_fields(exc)})
        else:
            results.append({"name": name, "topic_id": deleted.topic_id, **error_fields(None)})
    return respond(body, {"throttle_time": NO_THROTTLE, "responses": results})
