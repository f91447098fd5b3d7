"""ACL and config-alteration enums with Kafka's wire numbering.

The broker (store, authorizer, handlers) and the client (Admin, CLI) both speak these
numbers, so they are defined once here. ``CLUSTER_MIRROR`` is the resource type the
mirroring spec adds for the mirror APIs.
"""

from __future__ import annotations

import enum

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
