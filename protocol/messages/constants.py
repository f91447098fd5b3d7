"""Numbers KIP-1279 adds to existing Kafka enums, and the API keys of the mirror RPCs.

API keys follow the public KIP-1279 implementation so tools agree; 97 is this product's
LastMirroredEpochs failback query.
"""

import enum


class MirrorApiKey(enum.IntEnum):
    CREATE_MIRROR = 94
    ADD_TOPICS_TO_MIRROR = 95
    REMOVE_TOPICS_FROM_MIRROR = 96
    LAST_MIRRORED_EPOCHS = 97
    LIST_MIRRORS = 98
    DESCRIBE_MIRRORS = 99
    READ_MIRROR_STATES = 100
    WRITE_MIRROR_STATES = 101
    PAUSE_MIRROR_TOPICS = 102
    RESUME_MIRROR_TOPICS = 103
    DELETE_MIRROR = 104
    BUMP_LEADER_EPOCHS = 105


RESOURCE_TYPE_CLUSTER_MIRROR = 8
"""ACL ``ResourceType`` for per-mirror authorization."""

COORDINATOR_TYPE_MIRROR = 3
"""FindCoordinator ``KeyType`` that locates a mirror's coordinator (key: the mirror name)."""

CONFIG_RESOURCE_TYPE_MIRROR = 64
"""DescribeConfigs/IncrementalAlterConfigs ``ResourceType`` of a mirror's configuration."""

FETCH_MIRROR_VERSION = 19
"""First Fetch version carrying ``MirrorLeaderEpoch``."""

CREATE_TOPICS_MIRROR_VERSION = 8
"""First CreateTopics version carrying ``MirrorInfo``."""

DESCRIBE_CONFIGS_MIRROR_VERSION = 5
"""First DescribeConfigs version that may name a MIRROR resource (the spec's version bump)."""

INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION = 2
"""First IncrementalAlterConfigs version that may name a MIRROR resource."""

UNSET_AUTHORIZED_OPERATIONS = -(2**31)
"""Kafka's ``AuthorizedOperations`` value when the request did not ask for them."""
