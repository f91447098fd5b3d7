"""CreatePartitions: grow a topic, with Kafka's validation; ``validate_only`` writes nothing."""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import KafkaError

CREATE_PARTITIONS_KEY = 37


@handles(CREATE_PARTITIONS_KEY, min_version=0, max_version=3)
async def handle(ctx: RequestContext, body: Any) -> Any:
    results = []
    for topic in body.topics:
        assignments = [list(a.broker_ids) for a in topic.assignments] if topic.assignments else None
        try:
            await authorize(ctx, AclOperation.ALTER, ResourceType.TOPIC, topic.name)
            await ctx.broker.controller.create_partitions(
                topic.name,
                topic.count,
                assignments=assignments,
                validate_only=body.validate_only,
            )
        except KafkaError as exc:
            results.append({"name": topic.name, **error_fields(exc)})
        else:
            results.append({"name": topic.name, **error_fields(None)})
    return respond(body, {"throttle_time": NO_THROTTLE, "results": results})
