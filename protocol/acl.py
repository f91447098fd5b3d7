"""ACL value types and config-alteration enums with Kafka's wire numbering and matching rules.

The broker (store, authorizer, handlers, metadata sync) and the client (Admin, CLI) both
speak these numbers, so they are defined once here, below every layer that uses them. A
binding goes from request to store and back without translation. ``CLUSTER_MIRROR`` is the
resource type the mirroring spec adds for the mirror APIs.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mirrorsim.protocol.messages.constants import RESOURCE_TYPE_CLUSTER_MIRROR


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7
    CLUSTER_MIRROR = RESOURCE_TYPE_CLUSTER_MIRROR


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class AlterConfigOpType(enum.IntEnum):
    """IncrementalAlterConfigs operation types."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


WILDCARD = "*"
CLUSTER_RESOURCE_NAME = "kafka-cluster"


class InvalidAclError(ValueError):
    """A binding CreateAcls must refuse (Kafka answers INVALID_REQUEST)."""


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def validate(self) -> None:
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise InvalidAclError(f"Invalid resource type {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAclError(f"Invalid pattern type {self.pattern_type.name}")
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            raise InvalidAclError(f"Invalid operation {self.operation.name}")
        if self.permission_type in (AclPermissionType.ANY, AclPermissionType.UNKNOWN):
            raise InvalidAclError(f"Invalid permission type {self.permission_type.name}")
        if ":" not in self.principal:
            raise InvalidAclError(f"Could not parse principal from `{self.principal}`")
        if not self.resource_name:
            raise InvalidAclError("Resource name must not be empty")
        if (
            self.resource_type == ResourceType.CLUSTER
            and self.resource_name != CLUSTER_RESOURCE_NAME
        ):
            raise InvalidAclError(
                f"The only valid name for the CLUSTER resource is {CLUSTER_RESOURCE_NAME}"
            )


@dataclass(frozen=True, slots=True)
class AclFilter:
    """None and ANY match everything; pattern MATCH follows literal, wildcard and prefix
    bindings the way the authorizer would."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, binding: AclBinding) -> bool:
        return self._matches_resource(binding) and self._matches_entry(binding)

    def _matches_resource(self, binding: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != binding.resource_type:
            return False
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            if binding.pattern_type == PatternType.LITERAL:
                return binding.resource_name in (self.resource_name, WILDCARD)
            return self.resource_name.startswith(binding.resource_name)
        if self.pattern_type != PatternType.ANY and self.pattern_type != binding.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == binding.resource_name

    def _matches_entry(self, binding: AclBinding) -> bool:
        return (
            (self.principal is None or self.principal == binding.principal)
            and (self.host is None or self.host == binding.host)
            and self.operation in (AclOperation.ANY, binding.operation)
            and self.permission_type in (AclPermissionType.ANY, binding.permission_type)
        )
