"""The per-resource loop AlterConfigs and IncrementalAlterConfigs share: authorize
ALTER_CONFIGS on each resource, apply it, and answer each with its own error, so one
refused resource never fails the others."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.handlers.base import RequestContext
from mirrorsim.broker.handlers.config_resources import acl_resource, unsupported_in_version
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.protocol.acl import AclOperation
from mirrorsim.protocol.errors import KafkaError

Apply = Callable[[Any, Any, bool], Awaitable[None]]
"""``apply(broker, resource, validate_only)``: raises KafkaError to refuse the resource."""


async def answer_each_resource(
    ctx: RequestContext, body: Any, apply: Apply, *, mirror_since: int | None = None
) -> Any:
    """``mirror_since``: the first version of the request that may name a MIRROR resource;
    None where the API never may (legacy AlterConfigs keeps its former behaviour)."""
    responses = []
    for resource in body.resources:
        entry = {"resource_type": resource.resource_type, "resource_name": resource.resource_name}
        try:
            if mirror_since is not None:
                unsupported = unsupported_in_version(
                    resource.resource_type, ctx.header.api_version, mirror_since
                )
                if unsupported is not None:
                    raise unsupported
            acl = acl_resource(resource.resource_type, resource.resource_name)
            if acl is not None:
                await authorize(ctx, AclOperation.ALTER_CONFIGS, *acl)
            await apply(ctx.broker, resource, body.validate_only)
        except KafkaError as exc:
            responses.append({**entry, **error_fields(exc)})
        else:
            responses.append({**entry, **error_fields(None)})
    return respond(body, {"throttle_time": NO_THROTTLE, "responses": responses})
