"""IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT) on topics, brokers, mirrors and
groups.

A group's configs (Kafka 4.x GROUP resources) are checked as a whole
(``group/dynamic_configs.py``: INVALID_CONFIG for an unknown name or a refused value) and
replaced in one store transaction.

A mirror's new configuration is checked as a whole (``mirror_configs``) before it is
stored; the metadata refresh that follows hands it to this broker's mirror coordinator at
once (other brokers on their next poll), which reconnects the mirror to its source. Each
resource needs ALTER_CONFIGS on its ACL resource (``acl_resource``). A MIRROR resource
needs version 2 or later, the version KIP-1279 added so clients can see mirror config
support in ApiVersions; before it, the resource is INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mirrorsim.broker.config import ConfigError
from mirrorsim.broker.group.dynamic_configs import GROUP_CONFIGS, validate_group_configs
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.config_alterations import answer_each_resource
from mirrorsim.broker.handlers.config_resources import (
    ConfigResourceType,
    current_topic,
    group_name,
)
from mirrorsim.broker.metadata.alter_ops import AlterConfigOp, apply_alter_ops
from mirrorsim.broker.metadata.group_configs import alter_group_configs, group_configs
from mirrorsim.broker.metadata.mirror_configs import alter_mirror_configs
from mirrorsim.protocol.acl import AlterConfigOpType
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION

INCREMENTAL_ALTER_CONFIGS_KEY = 44


@handles(
    INCREMENTAL_ALTER_CONFIGS_KEY,
    min_version=0,
    max_version=INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION,
)
async def handle(ctx: RequestContext, body: Any) -> Any:
    return await answer_each_resource(
        ctx, body, _alter, mirror_since=INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION
    )


async def _alter(broker: HandlerBroker, resource: Any, validate_only: bool) -> None:
    try:
        ops = [
            AlterConfigOp(c.name, AlterConfigOpType(c.config_operation), c.value)
            for c in resource.configs
        ]
    except ValueError as exc:
        raise KafkaError(ErrorCode.INVALID_REQUEST, str(exc)) from None
    if resource.resource_type == ConfigResourceType.TOPIC:
        await current_topic(broker, resource.resource_name)
        await broker.controller.alter_topic_configs(
            resource.resource_name, ops, validate_only=validate_only
        )
    elif resource.resource_type == ConfigResourceType.BROKER:
        await broker.controller.alter_broker_configs(
            resource.resource_name, ops, validate_only=validate_only
        )
    elif resource.resource_type == ConfigResourceType.MIRROR:
        await _alter_mirror(broker, resource.resource_name, ops, validate_only)
    elif resource.resource_type == ConfigResourceType.GROUP:
        await _alter_group(broker, group_name(resource.resource_name), ops, validate_only)
    else:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type}"
        )


async def _alter_group(
    broker: HandlerBroker, group_id: str, ops: list[AlterConfigOp], validate_only: bool
) -> None:
    def change(current: dict[str, str]) -> dict[str, str]:
        configs = apply_alter_ops(current, ops, GROUP_CONFIGS)
        validate_group_configs(configs)
        return configs

    try:
        if validate_only:
            change(await asyncio.to_thread(group_configs, broker.store, group_id))
        else:
            await asyncio.to_thread(alter_group_configs, broker.store, group_id, change)
    except ConfigError as exc:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None


async def _alter_mirror(
    broker: HandlerBroker, name: str, ops: list[AlterConfigOp], validate_only: bool
) -> None:
    try:
        if validate_only:
            record = (await asyncio.to_thread(broker.store.mirrors)).get(name)
            if record is None:
                raise KeyError(name)
            alter_mirror_configs(record.configs, ops)
            return
        await asyncio.to_thread(
            broker.store.alter_mirror_configs, name, lambda c: alter_mirror_configs(c, ops)
        )
    except KeyError:
        raise KafkaError(ErrorCode.UNKNOWN_MIRROR, f"Mirror {name} does not exist") from None
    except ConfigError as exc:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    await broker.refresh_metadata()
