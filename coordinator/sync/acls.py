"""ACL sync of one mirror and the `mirror.acl.include` rule grammar.

A rule is ``resourceType;resourceName;operation;permissionType;principal``; ``*`` matches
anything in its field and trailing ``*`` fields may be left out, so ``TOPIC;orders.*``
means ``TOPIC;orders.*;*;*;*``. resourceName and principal are regexes matched against the
whole name (``User:app-.*`` selects ``User:app-1``, not ``User:my-app-1``). Rules are
separated by commas; a binding is synced when any rule covers it.

`diff_acls` compares the source bindings the rules cover with the destination bindings
the rules cover, both narrowed to the mirror's `AclScope` (the resources of its
MIRRORING topics, see ``acl_scope``): missing ones are created, extra ones deleted, and
destination bindings outside the rules or the scope are never touched. Creates go before
deletes: while a binding is being replaced both exist for a moment, and with Kafka's
DENY-wins evaluation that errs on the side of refusing access rather than opening a gap
where neither applies.

CLUSTER_MIRROR bindings authorize managing this cluster's own mirrors (the mirror admin
of the spec's examples); a source cluster's mirrors are different objects. A rule with a
``*`` resource type therefore does not cover them, so the default ``*`` neither copies
them nor deletes the destination's; a rule that names CLUSTER_MIRROR does.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from mirrorsim.coordinator.sync.acl_scope import AclScope
from mirrorsim.coordinator.sync.patterns import SyncFilterError, split_list
from mirrorsim.protocol.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourceType,
)

MIRROR_ACL_INCLUDE = "mirror.acl.include"
DEFAULT_ACL_INCLUDE = "*"
WILDCARD = "*"
FIELDS = ("resourceType", "resourceName", "operation", "permissionType", "principal")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z])(?=[A-Z])")
E = TypeVar("E", bound=enum.IntEnum)


class AclRuleError(SyncFilterError):
    """A `mirror.acl.include` rule that cannot be parsed."""


@dataclass(frozen=True)
class AclIncludeRule:
    """One parsed rule; None in a field means ``*``."""

    text: str
    resource_type: ResourceType | None = None
    resource_name: re.Pattern[str] | None = None
    operation: AclOperation | None = None
    permission_type: AclPermissionType | None = None
    principal: re.Pattern[str] | None = None

    def covers(self, binding: AclBinding) -> bool:
        if self.resource_type is None:
            if binding.resource_type == ResourceType.CLUSTER_MIRROR:
                return False
        elif binding.resource_type != self.resource_type:
            return False
        return (
            (self.operation is None or binding.operation == self.operation)
            and (self.permission_type is None or binding.permission_type == self.permission_type)
            and _full_match(self.resource_name, binding.resource_name)
            and _full_match(self.principal, binding.principal)
        )


def _full_match(pattern: re.Pattern[str] | None, value: str) -> bool:
    return pattern is None or pattern.fullmatch(value) is not None


@dataclass(frozen=True)
class AclIncludeRules:
    rules: tuple[AclIncludeRule, ...]

    def covers(self, binding: AclBinding) -> bool:
        return any(rule.covers(binding) for rule in self.rules)


def parse_acl_include(value: str = DEFAULT_ACL_INCLUDE) -> AclIncludeRules:
    """Rules of a `mirror.acl.include` value; an empty value covers no ACL at all."""
    return AclIncludeRules(tuple(parse_acl_rule(text) for text in split_list(value)))


def parse_acl_rule(text: str) -> AclIncludeRule:
    fields = [field.strip() for field in text.strip().split(";")]
    if len(fields) > len(FIELDS):
        raise _error(text, f"has {len(fields)} fields, at most {len(FIELDS)} are allowed")
    for position, value in enumerate(fields):
        if not value:
            raise _error(text, f"field {FIELDS[position]} is empty (use * for any)")
    fields += [WILDCARD] * (len(FIELDS) - len(fields))
    resource_type, resource_name, operation, permission_type, principal = fields
    return AclIncludeRule(
        text=text.strip(),
        resource_type=_enum_field(text, "resource type", ResourceType, resource_type),
        resource_name=_regex_field(text, "resourceName", resource_name),
        operation=_enum_field(text, "operation", AclOperation, operation),
        permission_type=_enum_field(text, "permission type", AclPermissionType, permission_type),
        principal=_regex_field(text, "principal", principal),
    )


def _enum_field(text: str, what: str, kind: type[E], value: str) -> E | None:
    if value == WILDCARD:
        return None
    name = _CAMEL_BOUNDARY.sub("_", value).replace("-", "_").upper()
    member = kind.__members__.get(name)
    if member is None or member.name in ("ANY", "UNKNOWN"):
        choices = ", ".join(m.name for m in kind if m.name not in ("ANY", "UNKNOWN"))
        raise _error(text, f"unknown {what} {value!r} (expected * or one of {choices})")
    return member


def _regex_field(text: str, what: str, value: str) -> re.Pattern[str] | None:
    if value == WILDCARD:
        return None
    try:
        return re.compile(value)
    except re.error as error:
        raise _error(text, f"{what} {value!r} is not a valid regex: {error}") from None


def _error(text: str, problem: str) -> AclRuleError:
    return AclRuleError(f"{MIRROR_ACL_INCLUDE}: rule {text.strip()!r} {problem}")


@dataclass(frozen=True)
class CreateAcls:
    bindings: tuple[AclBinding, ...]


@dataclass(frozen=True)
class DeleteAcls:
    """Each binding is deleted with the exact filter that matches only itself."""

    bindings: tuple[AclBinding, ...]


AclSyncOperation = CreateAcls | DeleteAcls


def diff_acls(
    source: Iterable[AclBinding],
    destination: Iterable[AclBinding],
    include: AclIncludeRules,
    scope: AclScope,
) -> tuple[AclSyncOperation, ...]:
    def synced(binding: AclBinding) -> bool:
        return include.covers(binding) and scope.covers(binding)

    wanted = {binding for binding in source if synced(binding)}
    present = {binding for binding in destination if synced(binding)}
    operations: list[AclSyncOperation] = []
    if missing := wanted - present:
        operations.append(CreateAcls(_ordered(missing)))
    if extra := present - wanted:
        operations.append(DeleteAcls(_ordered(extra)))
    return tuple(operations)


def _ordered(bindings: set[AclBinding]) -> tuple[AclBinding, ...]:
    return tuple(
        sorted(
            bindings,
            key=lambda b: (
                b.resource_type,
                b.resource_name,
                b.pattern_type,
                b.principal,
                b.host,
                b.operation,
                b.permission_type,
            ),
        )
    )
