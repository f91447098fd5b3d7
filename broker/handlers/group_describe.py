"""The describe flow ConsumerGroupDescribe and ShareGroupDescribe share: authorize the
group, make sure this broker coordinates it, describe it as the asked-for kind or say why
not, and add the authorized operations when asked. Only the description differs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mirrorsim.broker.auth.enforcement import authorized_operations, is_authorized
from mirrorsim.broker.handlers.base import RequestContext
from mirrorsim.protocol.acl import AclOperation, ResourceType
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.messages.constants import UNSET_AUTHORIZED_OPERATIONS

Description = TypeVar("Description")


async def describe_group(
    ctx: RequestContext,
    group_id: str,
    *,
    include_authorized_operations: bool,
    kind: str,
    describe: Callable[[str], Description | None],
    render: Callable[[Description, int], dict[str, Any]],
) -> dict[str, Any]:
    """One group's entry of the response; ``kind`` names the group type asked for
    ("consumer", "share") in the answer for a group of another type."""
    groups = ctx.broker.groups
    if not await is_authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return described_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    error = await groups.acquire(group_id)
    if error is not ErrorCode.NONE:
        return described_error(group_id, error, None)
    group = describe(group_id)
    if group is None:
        message = (
            f"Group {group_id} not found."
            if groups.group_type(group_id) is None
            else f"Group {group_id} is not a {kind} group."
        )
        return described_error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message)
    operations = (
        await authorized_operations(ctx, ResourceType.GROUP, group_id)
        if include_authorized_operations
        else UNSET_AUTHORIZED_OPERATIONS
    )
    return render(group, operations)


def described_error(group_id: str, error: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "error_code": error,
        "error_message": message,
        "group_id": group_id,
        "group_state": "Dead" if error is ErrorCode.GROUP_ID_NOT_FOUND else "",
        "group_epoch": -1,
        "assignment_epoch": -1,
        "assignor_name": "",
        "members": [],
        "authorized_operations": UNSET_AUTHORIZED_OPERATIONS,
    }
