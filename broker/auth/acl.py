"""ACL bindings and filters with Kafka's enum numbering and matching rules.

The numbering is the wire numbering of CreateAcls/DescribeAcls/DeleteAcls, so a binding
goes from request to store and back without translation. ``CLUSTER_MIRROR`` is the
resource type the mirroring spec adds for the mirror APIs.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirrorsim.protocol.acl import AclOperation, AclPermissionType, PatternType, ResourceType

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
