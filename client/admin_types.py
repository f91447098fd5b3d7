"""The values Admin takes and returns, named after Kafka's Admin API classes.

Enum numbers are Kafka's wire values; KIP-1279 adds ``ResourceType.CLUSTER_MIRROR`` (8) for
ACLs and ``ConfigResourceType.MIRROR`` (64) for a mirror's configuration.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from mirrorsim.client.cluster import BrokerInfo, PartitionInfo
from mirrorsim.protocol.acl import AclFilter as _AclFilter
from mirrorsim.protocol.acl import (
    AclOperation,
    AclPermissionType,
    AlterConfigOpType,
    PatternType,
    ResourceType,
)
from mirrorsim.protocol.errors import KafkaError
from mirrorsim.protocol.features import UpgradeType
from mirrorsim.protocol.messages.constants import (
    CONFIG_RESOURCE_TYPE_MIRROR,
)

K = TypeVar("K")


class Results(dict[K, KafkaError | None]):
    """Per-entity outcome of a batch operation: key → None (success) or the KafkaError.

    Like Kafka's ``*Result.values()``; ``all()`` is ``*Result.all().get()``: it raises the
    first failure.
    """

    @property
    def failed(self) -> dict[K, KafkaError]:
        return {key: error for key, error in self.items() if error is not None}

    def all(self) -> None:
        for error in self.values():
            if error is not None:
                raise error


class ElectionType(enum.IntEnum):
    """ElectLeaders' ``election_type``: the preferred replica, or any live replica when no
    ISR member is left (records only the lost ISR had are gone)."""

    PREFERRED = 0
    UNCLEAN = 1


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class ConfigResourceType(enum.IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32
    MIRROR = CONFIG_RESOURCE_TYPE_MIRROR


@dataclass(frozen=True, slots=True)
class ConfigResource:
    type: ConfigResourceType
    name: str


@dataclass(frozen=True, slots=True)
class AlterConfigOp:
    name: str
    value: str | None
    op: AlterConfigOpType = AlterConfigOpType.SET


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource | int = ConfigSource.UNKNOWN
    read_only: bool = False
    is_sensitive: bool = False


@dataclass(frozen=True, slots=True)
class NewTopic:
    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)
    replica_assignments: Mapping[int, Sequence[int]] | None = None


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerInfo, ...]


class OffsetSpec(enum.IntEnum):
    """The special ListOffsets timestamps; any other value is a timestamp in ms."""

    LATEST = -1
    EARLIEST = -2
    MAX_TIMESTAMP = -3
    EARLIEST_LOCAL = -4
    LATEST_TIERED = -5


class IsolationLevel(enum.IntEnum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


@dataclass(frozen=True, slots=True)
class ListOffsetsResultInfo:
    offset: int
    timestamp: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    metadata: str = ""
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ConsumerGroupListing:
    group_id: str
    state: str
    protocol_type: str
    group_type: str


@dataclass(frozen=True, slots=True)
class TransactionListing:
    """One transactional id as its coordinator lists it (ListTransactions)."""

    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[TopicPartition, ...] = ()
    """What the leader assigned (decoded for the `consumer` protocol type, else empty)."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]


@dataclass(frozen=True, slots=True)
class ConsumerProtocolMember:
    """A member of a KIP-848 consumer group (ConsumerGroupDescribe)."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[TopicPartition, ...]
    target_assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ConsumerProtocolGroupDescription:
    """A KIP-848 consumer group: epochs, the server-side assignor and its members."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ConsumerProtocolMember, ...]


@dataclass(frozen=True, slots=True)
class ShareMemberDescription:
    """A member of a KIP-932 share group (ShareGroupDescribe)."""

    member_id: str
    client_id: str
    client_host: str
    member_epoch: int
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    """A KIP-932 share group: epochs, the assignor and its members."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ShareMemberDescription, ...]


@dataclass(frozen=True, slots=True)
class SharePartitionOffsetInfo:
    """A share group's offset of one partition (Kafka's ``SharePartitionOffsetInfo``): the
    share-partition start offset, below which every record is done with, and the leader
    epoch and lag where the broker knows them."""

    start_offset: int
    leader_epoch: int | None
    lag: int | None


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    principal: str
    operation: AclOperation
    permission_type: AclPermissionType = AclPermissionType.ALLOW
    host: str = "*"
    pattern_type: PatternType = PatternType.LITERAL


AclBindingFilter = _AclFilter
"""Kafka's client-side name for the filter the broker matches ACL bindings with: None and
ANY match everything."""


@dataclass(frozen=True, slots=True)
class SupportedVersionRange:
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class FinalizedVersionRange:
    min_version_level: int
    max_version_level: int


@dataclass(frozen=True, slots=True)
class FeatureMetadata:
    """Kafka's ``FeatureMetadata``: a feature missing from ``finalized_features`` is at
    level 0; ``finalized_features_epoch`` is None when the broker does not know it."""

    finalized_features: Mapping[str, FinalizedVersionRange]
    finalized_features_epoch: int | None
    supported_features: Mapping[str, SupportedVersionRange]


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    max_version_level: int
    upgrade_type: UpgradeType = UpgradeType.UPGRADE


@dataclass(frozen=True, slots=True)
class MirrorListing:
    name: str
    source_bootstrap: str
    source_cluster_id: str
    topic_count: int


@dataclass(frozen=True, slots=True)
class MirrorPartitionDescription:
    topic: str
    partition: int
    source_offset: int
    destination_offset: int
    lag: int
    state: str
    last_mirror_epoch: int


@dataclass(frozen=True, slots=True)
class MirrorDescription:
    name: str
    partitions: tuple[MirrorPartitionDescription, ...]
    authorized_operations: frozenset[AclOperation] | None = None
    """The caller's operations on the mirror; None unless they were asked for."""


QuotaEntity = tuple[tuple[str, str | None], ...]
"""A client quota entity: (entity type, name or None for the default), sorted by type;
``(("client-id", "app"), ("user", "alice"))`` is ``--entity-type users --entity-name alice
--entity-type clients --entity-name app``."""


def quota_entity(**names: str | None) -> QuotaEntity:
    """``quota_entity(user="alice", client_id=None)``: alice's default client."""
    return tuple(sorted((k.replace("_", "-"), v) for k, v in names.items()))


class QuotaMatch(enum.IntEnum):
    """How a DescribeClientQuotas filter component matches a name."""

    EXACT = 0
    DEFAULT = 1
    SPECIFIED = 2


@dataclass(frozen=True, slots=True)
class QuotaFilterComponent:
    """One entity type of a DescribeClientQuotas filter (Kafka's ``ClientQuotaFilterComponent``)."""

    entity_type: str
    match_type: QuotaMatch = QuotaMatch.SPECIFIED
    match: str | None = None

    @classmethod
    def of_entity(cls, entity_type: str, name: str | None) -> QuotaFilterComponent:
        """Exactly this name, or the default entity for None."""
        if name is None:
            return cls(entity_type, QuotaMatch.DEFAULT)
        return cls(entity_type, QuotaMatch.EXACT, name)


@dataclass(frozen=True, slots=True)
class QuotaAlteration:
    """Set (a value) or remove (None) quota keys of one entity."""

    entity: QuotaEntity
    ops: Mapping[str, float | None]


@dataclass(frozen=True, slots=True)
class ScramUpsertion:
    """A SCRAM credential to create or replace (``kafka-configs.sh --entity-type users
    --add-config 'SCRAM-SHA-256=[iterations=8192,password=...]'``)."""

    user: str
    mechanism: str
    password: str
    iterations: int = 4096
    salt: bytes | None = None
