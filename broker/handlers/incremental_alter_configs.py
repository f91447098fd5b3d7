"""IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT) on topics and brokers.

Each resource needs ALTER_CONFIGS on its ACL resource (``acl_resource``).
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.auth.acl import AclOperation
from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.config_resources import ConfigResourceType, acl_resource
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.broker.metadata.alter_ops import AlterConfigOp, AlterOp
from mirrorsim.protocol.errors import ErrorCode, KafkaError

INCREMENTAL_ALTER_CONFIGS_KEY = 44


@handles(INCREMENTAL_ALTER_CONFIGS_KEY, min_version=0, max_version=1)
async def handle(ctx: RequestContext, body: Any) -> Any:
    responses = []
    for resource in body.resources:
        entry = {"resource_type": resource.resource_type, "resource_name": resource.resource_name}
        try:
            acl = acl_resource(resource.resource_type, resource.resource_name)
            if acl is not None:
                await authorize(ctx, AclOperation.ALTER_CONFIGS, *acl)
            await _alter(ctx.broker, resource, body.validate_only)
        except KafkaError as exc:
            responses.append({**entry, **error_fields(exc)})
        else:
            responses.append({**entry, **error_fields(None)})
    return respond(body, {"throttle_time": NO_THROTTLE, "responses": responses})


async def _alter(broker: Any, resource: Any, validate_only: bool) -> None:
    try:
        ops = [
            AlterConfigOp(c.name, AlterOp(c.config_operation), c.value) for c in resource.configs
        ]
    except ValueError as exc:
        raise KafkaError(ErrorCode.INVALID_REQUEST, str(exc)) from None
    if resource.resource_type == ConfigResourceType.TOPIC:
        await broker.controller.alter_topic_configs(
            resource.resource_name, ops, validate_only=validate_only
        )
    elif resource.resource_type == ConfigResourceType.BROKER:
        await broker.controller.alter_broker_configs(
            resource.resource_name, ops, validate_only=validate_only
        )
    else:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type}"
        )
