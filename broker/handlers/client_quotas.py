"""DescribeClientQuotas (48) and AlterClientQuotas (49).

Kafka's rules: describing needs DESCRIBE_CONFIGS on the cluster, altering ALTER_CONFIGS on
the cluster (CLUSTER_AUTHORIZATION_FAILED). A bad filter fails the whole describe
(INVALID_REQUEST; an unknown entity type UNSUPPORTED_VERSION, as Kafka's controller
answers). An alteration is judged per entity: an empty or duplicate entity, an unknown
type or key, a duplicate key, a value not above zero or fractional where the key is
integral each answer INVALID_REQUEST for that entity alone. The accepted entities are
stored in one transaction unless ``validate_only``; this broker applies them at once and
the others at their next quota refresh.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mirrorsim.broker.auth.enforcement import denial
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.broker.quotas.entity import (
    Entity,
    QuotaFilter,
    check_value,
    entity_of,
    keys_for,
)
from mirrorsim.broker.quotas.store import alter_client_quotas, client_quotas
from mirrorsim.protocol.acl import CLUSTER_RESOURCE_NAME, AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode, KafkaError

DESCRIBE_CLIENT_QUOTAS_KEY = 48
ALTER_CLIENT_QUOTAS_KEY = 49


@handles(DESCRIBE_CLIENT_QUOTAS_KEY, min_version=0, max_version=1)
async def handle_describe(ctx: RequestContext, body: Any) -> Any:
    try:
        denied = await denial(
            ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
        )
        if denied is not None:
            raise denied
        quota_filter = QuotaFilter.parse(
            ((c.entity_type, int(c.match_type), c.match) for c in body.components), body.strict
        )
    except KafkaError as exc:
        return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(exc), "entries": None})
    stored = await asyncio.to_thread(client_quotas, ctx.broker.store)
    entries = [
        {
            "entity": [{"entity_type": t, "entity_name": name} for t, name in entity],
            "values": [{"key": key, "value": value} for key, value in sorted(values.items())],
        }
        for entity, values in sorted(stored.items(), key=lambda item: repr(item[0]))
        if quota_filter.matches(entity)
    ]
    return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(None), "entries": entries})


@handles(ALTER_CLIENT_QUOTAS_KEY, min_version=0, max_version=1)
async def handle_alter(ctx: RequestContext, body: Any) -> Any:
    denied = await denial(
        ctx, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    )
    seen: set[tuple[tuple[str, str | None], ...]] = set()
    accepted: dict[Entity, dict[str, float | None]] = {}
    results = []
    for entry in body.entries:
        raw = tuple((e.entity_type, e.entity_name) for e in entry.entity)
        error = denied
        if error is None:
            error = _judge(raw, entry.ops, seen, accepted)
        seen.add(tuple(sorted(raw)))
        results.append(
            {
                **error_fields(error),
                "entity": [{"entity_type": t, "entity_name": name} for t, name in raw],
            }
        )
    if accepted and not body.validate_only:
        await asyncio.to_thread(alter_client_quotas, ctx.broker.store, accepted)
        await ctx.broker.refresh_client_quotas()
    return respond(body, {"throttle_time": NO_THROTTLE, "entries": results})


def _judge(
    raw: tuple[tuple[str, str | None], ...],
    ops: Any,
    seen: set[tuple[tuple[str, str | None], ...]],
    accepted: dict[Entity, dict[str, float | None]],
) -> KafkaError | None:
    if tuple(sorted(raw)) in seen:
        return KafkaError(ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {dict(raw)}")
    try:
        entity = entity_of(raw)
        keys = keys_for(entity)
        changes: dict[str, float | None] = {}
        for op in ops:
            if op.key in changes:
                raise KafkaError(
                    ErrorCode.INVALID_REQUEST,
                    f"Duplicate quota key {op.key} not updating quota for this entity {dict(raw)}",
                )
            if op.remove:
                changes[op.key] = None
            else:
                check_value(keys, op.key, float(op.value))
                changes[op.key] = float(op.value)
    except KafkaError as exc:
        return exc
    accepted[entity] = changes
    return None
