"""DescribeConfigs for topics and brokers, with Kafka's sources and synonyms.

A topic lists every topic config (overrides first in its synonym chain, then the broker
synonym's dynamic and static values, then the default). ``mirror.name`` is internal and
never listed. A broker resource is either this broker's id (every broker config) or the
empty name (the cluster-wide dynamic defaults only), as in Kafka. A mirror lists the
spec's mirror config table with its defaults, then its other settings; credentials come
back as null with ``is_sensitive``, and a mirror that does not exist is UNKNOWN_MIRROR, as
the mirror APIs answer. A group (Kafka 4.x GROUP resource) lists every group config, its
own values as GROUP_CONFIG and the rest as defaults, whether or not the group exists. Each
resource needs DESCRIBE_CONFIGS on its ACL resource (``acl_resource``). A MIRROR resource
needs version 5 or later, the version KIP-1279 added so clients can see mirror config
support in ApiVersions; before it, the resource is INVALID_REQUEST.

Topic and broker values come from the broker's metadata snapshot, which is brought up to
date before answering: a config altered through another broker a moment ago is described
as altered (a script that alters and then describes must not see the old value). The
refresh reads one counter row when nothing changed.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from mirrorsim.broker.auth.enforcement import authorize
from mirrorsim.broker.config import (
    ConfigSource,
    ConfigValue,
    resolve_broker_config,
    resolve_topic_config,
)
from mirrorsim.broker.group.dynamic_configs import describe_group_configs
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.config_resources import (
    ConfigResourceType,
    acl_resource,
    current_topic,
    group_name,
    unsupported_in_version,
)
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.broker.metadata.group_configs import group_configs
from mirrorsim.broker.metadata.mirror_configs import describe_mirror_configs
from mirrorsim.broker.metadata.store import CLUSTER_DEFAULT
from mirrorsim.protocol.acl import AclOperation
from mirrorsim.protocol.builder import build_nested
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import DESCRIBE_CONFIGS_MIRROR_VERSION
from mirrorsim.protocol.registry import response_class

DESCRIBE_CONFIGS_KEY = 32
_FROM_SNAPSHOT = frozenset({ConfigResourceType.TOPIC, ConfigResourceType.BROKER})


@handles(DESCRIBE_CONFIGS_KEY, min_version=1, max_version=DESCRIBE_CONFIGS_MIRROR_VERSION)
async def handle(ctx: RequestContext, body: Any) -> Any:
    results = []
    include_synonyms = bool(getattr(body, "include_synonyms", False))
    if any(r.resource_type in _FROM_SNAPSHOT for r in body.resources):
        await _bring_up_to_date(ctx.broker)
    for resource in body.resources:
        entry = {"resource_type": resource.resource_type, "resource_name": resource.resource_name}
        try:
            unsupported = unsupported_in_version(
                resource.resource_type, ctx.header.api_version, DESCRIBE_CONFIGS_MIRROR_VERSION
            )
            if unsupported is not None:
                raise unsupported
            await _authorize(ctx, resource.resource_type, resource.resource_name)
            keys = resource.configuration_keys
            if resource.resource_type == ConfigResourceType.TOPIC:
                configs = await _topic_configs(ctx, resource.resource_name, keys, include_synonyms)
            else:
                values = await _describe(ctx.broker, resource.resource_type, resource.resource_name)
                configs = _entries(values, keys, include_synonyms)
        except KafkaError as exc:
            results.append({**entry, **error_fields(exc), "configs": []})
            continue
        results.append({**entry, **error_fields(None), "configs": configs})
    return respond(body, {"throttle_time": NO_THROTTLE, "results": results})


async def _topic_configs(
    ctx: RequestContext, name: str, keys: tuple[str, ...] | None, include_synonyms: bool
) -> tuple[Any, ...]:
    """The topic's config entries, built once per distinct overrides and kept
    (``topic_config_entries``): a mirror's sync describes every mirrored topic each cycle."""
    record = await current_topic(ctx.broker, name)
    if record is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    layers = ctx.broker.config_layers()
    version = ctx.header.api_version
    keys = None if keys is None else tuple(keys)

    def build() -> tuple[Any, ...]:
        cls = response_class(DESCRIBE_CONFIGS_KEY, version)
        values = resolve_topic_config(record.configs, layers)
        return tuple(
            build_nested(cls, ("results", "configs"), entry)
            for entry in _entries(values, keys, include_synonyms)
        )

    return ctx.broker.topic_config_entries.entries(
        version, include_synonyms, keys, record.configs, layers, build
    )


def _entries(
    values: list[ConfigValue], keys: tuple[str, ...] | None, include_synonyms: bool
) -> list[dict[str, Any]]:
    if keys is not None:
        values = [v for v in values if v.name in keys]
    return [_entry(v, include_synonyms) for v in values]


async def _bring_up_to_date(broker: HandlerBroker) -> None:
    """Refresh the snapshot only when the store's change counter moved past it: the
    metadata sync of every mirror describes its source's topics each cycle, and a full
    refresh per request would add that much load to the store for nothing."""
    if await asyncio.to_thread(broker.store.version) != broker.snapshot.version:
        await broker.refresh_metadata()


async def _authorize(ctx: RequestContext, resource_type: int, name: str) -> None:
    acl = acl_resource(resource_type, name)
    if acl is not None:
        await authorize(ctx, AclOperation.DESCRIBE_CONFIGS, *acl)


async def _describe(broker: HandlerBroker, resource_type: int, name: str) -> list[ConfigValue]:
    if resource_type == ConfigResourceType.MIRROR:
        record = (await asyncio.to_thread(broker.store.mirrors)).get(name)
        if record is None:
            raise KafkaError(ErrorCode.UNKNOWN_MIRROR, f"Mirror {name} does not exist")
        return describe_mirror_configs(record.configs)
    if resource_type == ConfigResourceType.GROUP:
        overrides = await asyncio.to_thread(group_configs, broker.store, group_name(name))
        return describe_group_configs(overrides)
    layers = broker.config_layers()
    if resource_type == ConfigResourceType.BROKER:
        if name == CLUSTER_DEFAULT:
            # The default entity is the same on every broker: the answering broker's own
            # dynamic values must not hide it.
            shared = replace(layers, dynamic_broker={})
            return [
                v
                for v in resolve_broker_config(shared)
                if v.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            ]
        if name != str(broker.broker_id):
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {broker.broker_id} or empty string, but "
                f"received {name}",
            )
        return resolve_broker_config(layers)
    raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource_type}")


def _entry(value: ConfigValue, include_synonyms: bool) -> dict[str, Any]:
    definition = value.definition
    return {
        "name": value.name,
        "value": None if definition.sensitive else value.value,
        "read_only": definition.read_only,
        "config_source": int(value.source),
        "is_sensitive": definition.sensitive,
        "synonyms": [
            {"name": name, "value": None if definition.sensitive else v, "source": int(source)}
            for name, v, source in value.synonyms
        ]
        if include_synonyms
        else [],
        "config_type": int(definition.type),
        "documentation": None,
    }
