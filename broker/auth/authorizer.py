"""Kafka's ACL authorizer (``AclAuthorizer``/``StandardAuthorizer`` semantics).

Decision for (principal, host, operation, resource):
1. super users are allowed everything;
2. any matching DENY wins;
3. a matching ALLOW for the operation, or for an operation that implies it, allows;
4. with no ACL at all on the resource, ``allow.everyone.if.no.acl.found`` decides.

Implied operations (Kafka's): DESCRIBE is implied by READ, WRITE, DELETE and ALTER;
DESCRIBE_CONFIGS by ALTER_CONFIGS; ALL implies everything. A binding matches a resource
when its pattern is LITERAL with the same name or ``*``, or PREFIXED with a prefix of the
name; its principal is the requester or ``User:*``; its host is the requester's or ``*``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mirrorsim.protocol.acl import (
    WILDCARD,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

WILDCARD_PRINCIPAL = "User:*"

_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}


def granting_operations(operation: AclOperation) -> frozenset[AclOperation]:
    """The operations whose ALLOW grants ``operation`` (itself, ALL and its implying ones)."""
    return frozenset({operation, AclOperation.ALL}) | _IMPLIED_BY.get(operation, frozenset())


def parse_super_users(value: str | None) -> frozenset[str]:
    """``super.users`` is a semicolon-separated principal list, as in Kafka."""
    return frozenset(item.strip() for item in (value or "").split(";") if item.strip())


def resource_matches(binding: AclBinding, resource_type: ResourceType, name: str) -> bool:
    if binding.resource_type != resource_type:
        return False
    if binding.pattern_type == PatternType.LITERAL:
        return binding.resource_name in (name, WILDCARD)
    if binding.pattern_type == PatternType.PREFIXED:
        return name.startswith(binding.resource_name)
    return False


@dataclass(frozen=True, slots=True)
class AclAuthorizer:
    bindings: tuple[AclBinding, ...]
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False

    @classmethod
    def of(
        cls,
        bindings: Iterable[AclBinding],
        super_users: frozenset[str] = frozenset(),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> AclAuthorizer:
        return cls(tuple(bindings), super_users, allow_everyone_if_no_acl_found)

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        on_resource = [b for b in self.bindings if resource_matches(b, resource_type, name)]
        if not on_resource:
            return self.allow_everyone_if_no_acl_found
        applicable = [
            b
            for b in on_resource
            if b.principal in (principal, WILDCARD_PRINCIPAL) and b.host in (host, WILDCARD)
        ]
        denied = (AclOperation.ALL, operation)
        if any(
            b.permission_type == AclPermissionType.DENY and b.operation in denied
            for b in applicable
        ):
            return False
        granting = granting_operations(operation)
        return any(
            b.permission_type == AclPermissionType.ALLOW and b.operation in granting
            for b in applicable
        )
