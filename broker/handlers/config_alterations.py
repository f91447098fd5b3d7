"""The per-resource loop AlterConfigs and IncrementalAlterConfigs share: authorize
ALTER_CONFIGS on each resource, apply it, and answer each with its own error, so one
refused resource never fails the others."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.handlers.base import RequestContext
from mirrorsim.broker.handlers.config_resources import acl_resource
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.protocol.acl import AclOperation
from mirrorsim.protocol.errors import KafkaError

Apply = Callable[[Any, Any, bool], Awaitable[None]]
"""``apply(broker, resource, validate_only)``: raises KafkaError to refuse the resource."""


async def answer_each_resource(ctx: RequestContext, body: Any, apply: Apply) -> Any:
    responses = []
    for resource in body.resources:
        entry = {"resource_type": resource.resource_type, "resource_name": resource.resource_name}
        try:
            acl = acl_resource(resource.resource_type, resource.resource_name)
            if acl is not None:
                await authorize(ctx, AclOperation.ALTER_CONFIGS, *acl)
            await apply(ctx.broker, resource, body.validate_only)
        except KafkaError as exc:
            responses.append({**entry, **error_fields(exc)})
        else:
            responses.append({**entry, **error_fields(None)})
    return respond(body, {"throttle_time": NO_THROTTLE, "responses": responses})
