"""AlterConfigs (API 33, v0-2): replace a resource's whole set of overrides.

The legacy form of IncrementalAlterConfigs, still the only one some clients speak
(aiokafka's ``alter_configs``): the configs named are set, every other override of the
resource is removed. It is served as SET for each given config and DELETE for each
override not given, through the same controller paths, so it is all or nothing per
resource and answers INVALID_CONFIG for a refused value. Internal topic configs
(``mirror.name``) are not user overrides and stay. Each resource needs ALTER_CONFIGS,
as for IncrementalAlterConfigs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mirrorsim.broker.config import TOPIC_CONFIGS
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.config_alterations import answer_each_resource
from mirrorsim.broker.handlers.config_resources import (
    ConfigResourceType,
    current_topic,
)
from mirrorsim.broker.metadata.alter_ops import AlterConfigOp
from mirrorsim.broker.metadata.store import CLUSTER_DEFAULT
from mirrorsim.protocol.acl import AlterConfigOpType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

ALTER_CONFIGS_KEY = 33


@handles(ALTER_CONFIGS_KEY, min_version=0, max_version=2)
async def handle(ctx: RequestContext, body: Any) -> Any:
    return await answer_each_resource(ctx, body, _replace)


async def _replace(broker: HandlerBroker, resource: Any, validate_only: bool) -> None:
    given = {c.name: c.value for c in resource.configs}
    name = resource.resource_name
    if resource.resource_type == ConfigResourceType.TOPIC:
        topic = await current_topic(broker, name)
        current = [] if topic is None else [k for k in topic.configs if _user_topic_config(k)]
        await broker.controller.alter_topic_configs(
            name, _ops(given, current), validate_only=validate_only
        )
    elif resource.resource_type == ConfigResourceType.BROKER:
        await broker.controller.alter_broker_configs(
            name, _ops(given, _broker_overrides(broker, name)), validate_only=validate_only
        )
    else:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type}"
        )


def _ops(given: dict[str, str | None], current: Iterable[str]) -> list[AlterConfigOp]:
    sets = [AlterConfigOp(k, AlterConfigOpType.SET, v) for k, v in given.items()]
    deletes = [AlterConfigOp(k, AlterConfigOpType.DELETE, None) for k in current if k not in given]
    return sets + deletes


def _user_topic_config(name: str) -> bool:
    definition = TOPIC_CONFIGS.get(name)
    return definition is None or not definition.internal


def _broker_overrides(broker: HandlerBroker, name: str) -> list[str]:
    snapshot = broker.snapshot
    if name == CLUSTER_DEFAULT:
        return list(snapshot.dynamic_default_configs)
    if not name.isdigit():
        return []
    return list(snapshot.dynamic_broker_configs.get(int(name), {}))
