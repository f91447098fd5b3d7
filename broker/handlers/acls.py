"""CreateAcls, DescribeAcls and DeleteAcls over the metadata store's ACL table.

The authorizer (``broker/auth``) enforces these bindings when ``authorizer.class.name``
is set; changing them here drops this broker's cached copy at once.
"""

from __future__ import annotations

import asyncio
from itertools import groupby
from typing import Any

from mirrorsim.broker.auth.enforcement import authorize, invalidate_acls
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.protocol.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError

DESCRIBE_ACLS_KEY = 29
CREATE_ACLS_KEY = 30
DELETE_ACLS_KEY = 31


def _binding(creation: Any) -> AclBinding:
    try:
        binding = AclBinding(
            resource_type=ResourceType(creation.resource_type),
            resource_name=creation.resource_name,
            pattern_type=PatternType(creation.resource_pattern_type),
            principal=creation.principal,
            host=creation.host,
            operation=AclOperation(creation.operation),
            permission_type=AclPermissionType(creation.permission_type),
        )
        binding.validate()
    except (ValueError, InvalidAclError) as exc:
        raise KafkaError(ErrorCode.INVALID_REQUEST, str(exc)) from None
    return binding


def _filter(request: Any) -> AclFilter:
    try:
        return AclFilter(
            resource_type=ResourceType(request.resource_type_filter),
            resource_name=request.resource_name_filter,
            pattern_type=PatternType(getattr(request, "pattern_type_filter", PatternType.LITERAL)),
            principal=request.principal_filter,
            host=request.host_filter,
            operation=AclOperation(request.operation),
            permission_type=AclPermissionType(request.permission_type),
        )
    except ValueError as exc:
        raise KafkaError(ErrorCode.INVALID_REQUEST, str(exc)) from None


@handles(CREATE_ACLS_KEY, min_version=1, max_version=3)
async def create_acls(ctx: RequestContext, body: Any) -> Any:
    results: list[dict[str, Any]] = []
    valid: list[AclBinding] = []
    for creation in body.creations:
        try:
            await authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER)
            valid.append(_binding(creation))
        except KafkaError as exc:
            results.append(error_fields(exc))
        else:
            results.append(error_fields(None))
    await asyncio.to_thread(ctx.broker.store.create_acls, valid)
    invalidate_acls(ctx.broker)
    return respond(body, {"throttle_time": NO_THROTTLE, "results": results})


@handles(DESCRIBE_ACLS_KEY, min_version=1, max_version=3)
async def describe_acls(ctx: RequestContext, body: Any) -> Any:
    try:
        await authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER)
        acl_filter = _filter(body)
    except KafkaError as exc:
        return respond(body, {"throttle_time": NO_THROTTLE, **error_fields(exc), "resources": []})
    bindings = await asyncio.to_thread(ctx.broker.store.acls, acl_filter)
    resources = []

    def resource_key(b: AclBinding) -> tuple[int, str, int]:
        return (b.resource_type, b.resource_name, b.pattern_type)

    for (rtype, rname, ptype), group in groupby(sorted(bindings, key=resource_key), resource_key):
        resources.append(
            {
                "resource_type": rtype,
                "resource_name": rname,
                "pattern_type": ptype,
                "acls": [
                    {
                        "principal": b.principal,
                        "host": b.host,
                        "operation": b.operation,
                        "permission_type": b.permission_type,
                    }
                    for b in group
                ],
            }
        )
    return respond(
        body, {"throttle_time": NO_THROTTLE, **error_fields(None), "resources": resources}
    )


@handles(DELETE_ACLS_KEY, min_version=1, max_version=3)
async def delete_acls(ctx: RequestContext, body: Any) -> Any:
    filters: list[AclFilter | KafkaError] = []
    for request_filter in body.filters:
        try:
            await authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER)
            filters.append(_filter(request_filter))
        except KafkaError as exc:
            filters.append(exc)
    valid = [f for f in filters if isinstance(f, AclFilter)]
    matched = iter(await asyncio.to_thread(ctx.broker.store.delete_acls, valid))
    invalidate_acls(ctx.broker)
    results = []
    for f in filters:
        if isinstance(f, KafkaError):
            results.append({**error_fields(f), "matching_acls": []})
            continue
        results.append(
            {
                **error_fields(None),
                "matching_acls": [
                    {
                        **error_fields(None),
                        "resource_type": b.resource_type,
                        "resource_name": b.resource_name,
                        "pattern_type": b.pattern_type,
                        "principal": b.principal,
                        "host": b.host,
                        "operation": b.operation,
                        "permission_type": b.permission_type,
                    }
                    for b in next(matched)
                ],
            }
        )
    return respond(body, {"throttle_time": NO_THROTTLE, "filter_results": results})
