"""Kafka's Admin API in snake_case, plus KIP-1279's mirror management methods.

Every method describes its request once (see ``mirrorsim.protocol.builder``) and the cluster
client builds it at the version the target broker supports. Batch operations return a
``Results`` mapping each entity to None or its ``KafkaError``; a request-wide error is
raised. Retriable errors (connection loss, NOT_CONTROLLER, COORDINATOR_LOAD_IN_PROGRESS,
...) are retried with backoff until ``default.api.timeout.ms``.

Routing follows Kafka's admin client: topic creation, deletion and partition changes go to
the controller; partition-scoped calls go to each partition's leader; group calls go to
the group coordinator; everything else, including the mirror RPCs (the receiving broker
forwards them to the controller), goes to any broker.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import secrets
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from mirrorsim.client.admin_types import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ConsumerProtocolGroupDescription,
    ConsumerProtocolMember,
    ElectionType,
    FeatureMetadata,
    FeatureUpdate,
    FinalizedVersionRange,
    IsolationLevel,
    ListOffsetsResultInfo,
    MemberDescription,
    MirrorDescription,
    MirrorListing,
    MirrorPartitionDescription,
    NewTopic,
    OffsetAndMetadata,
    PatternType,
    QuotaAlteration,
    QuotaEntity,
    QuotaFilterComponent,
    ResourceType,
    Results,
    ScramUpsertion,
    ShareGroupDescription,
    ShareMemberDescription,
    SharePartitionOffsetInfo,
    SupportedVersionRange,
    TopicDescription,
    TopicPartition,
    TransactionListing,
)
from mirrorsim.client.cluster import BrokerInfo, ClusterClient, CoordinatorType, RequestSpec
from mirrorsim.client.config import ClientConfig
from mirrorsim.client.connection import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION
from mirrorsim.client.consumer_assignment import decode_assignment
from mirrorsim.client.errors import error_from_wire, raise_for_error
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.features import UpgradeType
from mirrorsim.protocol.messages.constants import UNSET_AUTHORIZED_OPERATIONS, MirrorApiKey
from mirrorsim.protocol.uuids import ZERO_UUID

if TYPE_CHECKING:
    from mirrorsim.client.sync_admin import SyncAdmin

T = TypeVar("T")
MATCH_ALL_ACLS = AclBindingFilter()


class ApiKey:
    LIST_OFFSETS = 2
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    UPDATE_FEATURES = 57
    DESCRIBE_CLUSTER = 60
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_DESCRIBE = 69
    SHARE_GROUP_DESCRIBE = 77
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


class Admin:
    """Async admin client: ``async with Admin(bootstrap=...) as admin: ...``."""

    def __init__(
        self,
        bootstrap: str,
        *,
        config: Mapping[str, str] | ClientConfig = MappingProxyType({}),
        client_id: str = "mirrorsim-admin",
    ) -> None:
        self.cluster = ClusterClient(bootstrap, client_id=client_id, config=config)

    async def __aenter__(self) -> Admin:
        """Opens no connection: the first request bootstraps, as Kafka's Admin does."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Bootstrap now rather than at the first request, so an unreachable cluster fails
        here; retries until ``default.api.timeout.ms``, then raises
        ``KafkaConnectionError``."""
        await self.cluster.start()

    async def close(self) -> None:
        """Close every broker connection; safe on an admin that never connected."""
        await self.cluster.close()

    @classmethod
    def sync(
        cls,
        bootstrap: str,
        *,
        config: Mapping[str, str] | ClientConfig = MappingProxyType({}),
        client_id: str = "mirrorsim-admin",
    ) -> SyncAdmin:
        """A blocking facade for scripts and the CLI; call ``close()`` (or use ``with``)."""
        from mirrorsim.client.sync_admin import SyncAdmin  # imports this module

        return SyncAdmin(cls(bootstrap, config=config, client_id=client_id))

    @property
    def _timeout(self) -> datetime.timedelta:
        return datetime.timedelta(milliseconds=self.cluster.config.request_timeout_ms)

    # Topics

    async def create_topics(
        self, new_topics: Iterable[NewTopic], *, validate_only: bool = False
    ) -> Results[str]:
        """CreateTopics to the controller; per topic None or its error (TOPIC_ALREADY_EXISTS,
        INVALID_REPLICATION_FACTOR, ...). ``validate_only`` checks without creating.
        """
        topics = [
            {
                "name": t.name,
                "num_partitions": t.num_partitions,
                "replication_factor": t.replication_factor,
                "assignments": [
                    {"partition_index": p, "broker_ids": list(replicas)}
                    for p, replicas in (t.replica_assignments or {}).items()
                ],
                "configs": [{"name": k, "value": v} for k, v in t.configs.items()],
            }
            for t in new_topics
        ]
        spec = RequestSpec(
            ApiKey.CREATE_TOPICS,
            {"topics": topics, "timeout": self._timeout, "validate_only": validate_only},
        )
        response = await self._to_controller(spec)
        return Results(
            {t.name: error_from_wire(t.error_code, t.error_message) for t in response.topics}
        )

    async def delete_topics(self, topics: Iterable[str]) -> Results[str]:
        """DeleteTopics (by name) to the controller; per topic None or its error
        (UNKNOWN_TOPIC_OR_PARTITION for a missing one).
        """
        names = list(topics)
        spec = RequestSpec(
            ApiKey.DELETE_TOPICS,
            {
                "topics": [{"name": n, "topic_id": ZERO_UUID} for n in names],
                "topic_names": names,
                "timeout": self._timeout,
            },
        )
        response = await self._to_controller(spec)
        return Results(
            {
                r.name: error_from_wire(r.error_code, getattr(r, "error_message", None))
                for r in response.responses
            }
        )

    async def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """The topic names of a Metadata request to any broker, sorted; internal topics only
        when asked.
        """
        metadata = await self.cluster.retrying(self.cluster.refresh_metadata)
        return sorted(
            name for name, t in metadata.topics.items() if include_internal or not t.is_internal
        )

    async def describe_topics(self, topics: Iterable[str]) -> dict[str, TopicDescription]:
        """Metadata for ``topics`` from any broker: partitions, leaders, replicas, ISR.

        Raises the first topic's error at once (UNKNOWN_TOPIC_OR_PARTITION for a missing
        topic), as Kafka's Admin does, rather than retrying until the api timeout.
        """
        names = list(topics)
        metadata = await self.cluster.retrying(lambda: self.cluster.refresh_metadata(names))
        described = {}
        for name in names:
            info = metadata.topics.get(name)
            if info is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name}")
            raise_for_error(info.error, f"topic {name}")
            partitions = tuple(info.partitions[p] for p in sorted(info.partitions))
            described[name] = TopicDescription(name, info.topic_id, info.is_internal, partitions)
        return described

    async def create_partitions(
        self, new_counts: Mapping[str, int], *, validate_only: bool = False
    ) -> Results[str]:
        """CreatePartitions to the controller, raising each topic's partition count to
        ``new_counts[topic]``; per topic None or its error (INVALID_PARTITIONS when not larger).
        """
        spec = RequestSpec(
            ApiKey.CREATE_PARTITIONS,
            {
                "topics": [
                    {"name": n, "count": c, "assignments": None} for n, c in new_counts.items()
                ],
                "timeout": self._timeout,
                "validate_only": validate_only,
            },
        )
        response = await self._to_controller(spec)
        return Results(
            {r.name: error_from_wire(r.error_code, r.error_message) for r in response.results}
        )

    # Leader elections

    async def elect_leaders(
        self, election_type: ElectionType, partitions: Iterable[TopicPartition] | None = None
    ) -> Results[TopicPartition]:
        """ElectLeaders at the active controller; None elects every partition. Per partition
        None or its error (ELECTION_NOT_NEEDED, ...).

        NOT_CONTROLLER, for the request or for a partition (the controller lost its lease
        mid-election), sends the whole request again to the controller fresh metadata names, so
        an election asked while the controller moves waits for the move, not the api timeout.
        """
        wanted = None if partitions is None else list(partitions)
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in wanted or ():
            by_topic[tp.topic].append(tp.partition)
        spec = RequestSpec(
            ApiKey.ELECT_LEADERS,
            {
                "election_type": int(election_type),
                "topic_partitions": None
                if wanted is None
                else [{"topic": t, "partitions": p} for t, p in by_topic.items()],
                "timeout": self._timeout,
            },
        )

        async def attempt() -> Results[TopicPartition]:
            response = await self.cluster.send_to_controller(spec)
            raise_for_error(getattr(response, "error_code", ErrorCode.NONE))
            results: Results[TopicPartition] = Results()
            for topic in response.replica_election_results:
                for p in topic.partition_result:
                    error = error_from_wire(p.error_code, p.error_message)
                    if error is not None and error.code == ErrorCode.NOT_CONTROLLER:
                        raise error
                    results[TopicPartition(topic.topic, int(p.partition_id))] = error
            return results

        return await self.cluster.retrying(attempt)

    # Configs

    async def describe_configs(
        self, resources: Iterable[ConfigResource]
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """DescribeConfigs: every config of each resource, by name.

        A broker's own configs are asked of that broker (Kafka's Admin does the same: only it
        knows its static and per-broker values); every other resource of any broker. Raises a
        resource's error (UNKNOWN_TOPIC_OR_PARTITION, ...).
        """
        described: dict[ConfigResource, dict[str, ConfigEntry]] = {}
        for node_id, wanted in _config_targets(resources).items():
            spec = RequestSpec(
                ApiKey.DESCRIBE_CONFIGS,
                {
                    "resources": [
                        {
                            "resource_type": r.type,
                            "resource_name": r.name,
                            "configuration_keys": None,
                        }
                        for r in wanted
                    ],
                    "include_synonyms": False,
                    "include_documentation": False,
                },
            )
            response = await self._to_node_or_any(node_id, spec)
            for result in response.results:
                resource = ConfigResource(_config_type(result.resource_type), result.resource_name)
                raise_for_error(result.error_code, result.error_message)
                described[resource] = {
                    c.name: ConfigEntry(
                        c.name,
                        c.value,
                        int(getattr(c, "config_source", 0)),
                        bool(c.read_only),
                        bool(c.is_sensitive),
                    )
                    for c in result.configs
                }
        return described

    async def incremental_alter_configs(
        self,
        configs: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
    ) -> Results[ConfigResource]:
        """IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT per key), routed as
        :meth:`describe_configs`: a broker's configs by that broker. Per resource None or its
        error (INVALID_CONFIG, ...).
        """
        outcomes: dict[ConfigResource, KafkaError | None] = {}
        for node_id, wanted in _config_targets(configs).items():
            spec = RequestSpec(
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                {
                    "resources": [
                        {
                            "resource_type": resource.type,
                            "resource_name": resource.name,
                            "configs": [
                                {"name": op.name, "config_operation": op.op, "value": op.value}
                                for op in configs[resource]
                            ],
                        }
                        for resource in wanted
                    ],
                    "validate_only": validate_only,
                },
            )
            response = await self._to_node_or_any(node_id, spec)
            for r in response.responses:
                resource = ConfigResource(_config_type(r.resource_type), r.resource_name)
                outcomes[resource] = error_from_wire(r.error_code, r.error_message)
        return Results(outcomes)

    # Cluster

    async def describe_cluster(self) -> ClusterDescription:
        """Cluster id, controller and brokers: DescribeCluster to any broker, or Metadata when
        the broker does not serve DescribeCluster.
        """

        async def attempt() -> ClusterDescription:
            await self.cluster.ensure_bootstrapped()
            connection = await self.cluster.connection(next(iter(self.cluster.brokers)))
            if connection.max_supported(ApiKey.DESCRIBE_CLUSTER, (0, 1, 2)) is None:
                metadata = await self.cluster.refresh_metadata([])
                brokers = tuple(metadata.brokers[n] for n in sorted(metadata.brokers))
                return ClusterDescription(metadata.cluster_id, metadata.controller_id, brokers)
            response = await self.cluster.send_to_any(
                RequestSpec(
                    ApiKey.DESCRIBE_CLUSTER,
                    {
                        "include_cluster_authorized_operations": False,
                        "endpoint_type": 1,
                        "include_fenced_brokers": False,
                    },
                )
            )
            raise_for_error(response.error_code, response.error_message)
            brokers = tuple(
                BrokerInfo(int(b.broker_id), b.host, int(b.port), b.rack)
                for b in sorted(response.brokers, key=lambda b: int(b.broker_id))
            )
            return ClusterDescription(response.cluster_id, int(response.controller_id), brokers)

        return await self.cluster.retrying(attempt)

    # Features (KIP-584)

    async def describe_features(self) -> FeatureMetadata:
        """The supported and finalized features (KIP-584), from any broker's ApiVersions answer."""
        spec = RequestSpec(
            ApiKey.API_VERSIONS,
            {
                "client_software_name": CLIENT_SOFTWARE_NAME,
                "client_software_version": CLIENT_SOFTWARE_VERSION,
            },
        )
        response = await self._to_any(spec)
        raise_for_error(response.error_code)
        epoch = int(getattr(response, "finalized_features_epoch", -1))
        return FeatureMetadata(
            finalized_features={
                f.name: FinalizedVersionRange(int(f.min_version_level), int(f.max_version_level))
                for f in getattr(response, "finalized_features", ())
            },
            finalized_features_epoch=epoch if epoch >= 0 else None,
            supported_features={
                f.name: SupportedVersionRange(int(f.min_version), int(f.max_version))
                for f in getattr(response, "supported_features", ())
            },
        )

    async def update_features(
        self, updates: Mapping[str, FeatureUpdate], *, validate_only: bool = False
    ) -> Results[str]:
        """UpdateFeatures to the active controller; per feature None or its error.

        The controller accepts or refuses the request as a whole; a request-wide refusal is
        every feature's error, as Kafka's admin client reports it. Raises ``ValueError`` for no
        updates.
        """
        if not updates:
            raise ValueError("Feature updates can not be null or empty.")
        spec = RequestSpec(
            ApiKey.UPDATE_FEATURES,
            {
                "timeout": self._timeout,
                "feature_updates": [
                    {
                        "feature": name,
                        "max_version_level": update.max_version_level,
                        "upgrade_type": int(update.upgrade_type),
                        "allow_downgrade": update.upgrade_type is not UpgradeType.UPGRADE,
                    }
                    for name, update in updates.items()
                ],
                "validate_only": validate_only,
            },
        )

        async def attempt() -> Results[str]:
            response = await self.cluster.send_to_controller(spec)
            error = error_from_wire(response.error_code, response.error_message)
            if error is not None and error.code == ErrorCode.NOT_CONTROLLER:
                raise error
            if error is not None:
                return Results(dict.fromkeys(updates, error))
            answered = {
                r.feature: error_from_wire(r.error_code, r.error_message) for r in response.results
            }
            return Results(
                {
                    name: answered[name]
                    if name in answered
                    else KafkaError(
                        ErrorCode.UNKNOWN_SERVER_ERROR,
                        f"The controller response did not contain a result for feature {name}",
                    )
                    for name in updates
                }
            )

        return await self.cluster.retrying(attempt)

    # Partitions (sent to each partition's leader)

    async def list_offsets(
        self,
        specs: Mapping[TopicPartition, int],
        *,
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        """ListOffsets to each partition's leader; a spec is an ``OffsetSpec`` or a timestamp in
        ms. Raises UNKNOWN_TOPIC_OR_PARTITION at once for a partition that does not exist.
        """

        async def to_leader(leader: int, group: dict[TopicPartition, int]) -> dict:
            spec = RequestSpec(
                ApiKey.LIST_OFFSETS,
                {
                    "replica_id": -1,
                    "isolation_level": isolation_level,
                    "topics": _by_topic(
                        group,
                        lambda tp, ts: {
                            "partition_index": tp.partition,
                            "current_leader_epoch": -1,
                            "timestamp": ts,
                        },
                    ),
                    "timeout": self._timeout,
                },
            )
            response = await self.cluster.send_to_node(leader, spec)
            found = {}
            for t in response.topics:
                for p in t.partitions:
                    raise_for_error(p.error_code, f"{t.name}-{p.partition_index}")
                    found[TopicPartition(t.name, int(p.partition_index))] = ListOffsetsResultInfo(
                        int(p.offset),
                        int(getattr(p, "timestamp", -1)),
                        int(getattr(p, "leader_epoch", -1)),
                    )
            return found

        return await self._per_leader(specs, to_leader)

    async def delete_records(
        self, before_offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """DeleteRecords to each partition's leader, advancing its log start offset to the given
        offset; returns the new low watermarks. Raises a partition's error
        (OFFSET_OUT_OF_RANGE, ...).
        """

        async def to_leader(leader: int, group: dict[TopicPartition, int]) -> dict:
            spec = RequestSpec(
                ApiKey.DELETE_RECORDS,
                {
                    "topics": _by_topic(
                        group, lambda tp, off: {"partition_index": tp.partition, "offset": off}
                    ),
                    "timeout": self._timeout,
                },
            )
            response = await self.cluster.send_to_node(leader, spec)
            found = {}
            for t in response.topics:
                for p in t.partitions:
                    raise_for_error(p.error_code, f"{t.name}-{p.partition_index}")
                    found[TopicPartition(t.name, int(p.partition_index))] = int(p.low_watermark)
            return found

        return await self._per_leader(before_offsets, to_leader)

    # Consumer groups

    async def list_consumer_groups(self) -> list[ConsumerGroupListing]:
        """ListGroups to every broker (each lists the groups it coordinates), merged and sorted
        by group id.
        """
        return await self._list_groups([])

    async def _list_groups(self, types: list[str]) -> list[ConsumerGroupListing]:
        """ListGroups of the given group types (all types when empty) from every broker."""

        async def from_broker(node_id: int) -> list[ConsumerGroupListing]:
            spec = RequestSpec(ApiKey.LIST_GROUPS, {"states_filter": [], "types_filter": types})
            response = await self.cluster.send_to_node(node_id, spec)
            raise_for_error(response.error_code)
            return [
                ConsumerGroupListing(
                    g.group_id,
                    getattr(g, "group_state", ""),
                    g.protocol_type,
                    getattr(g, "group_type", ""),
                )
                for g in response.groups
            ]

        return await self._from_every_broker(from_broker, lambda g: g.group_id)

    async def _from_every_broker(
        self, ask: Callable[[int], Awaitable[list[T]]], key: Callable[[T], str]
    ) -> list[T]:
        """``ask`` every broker of fresh metadata (each answers for what it coordinates),
        merged by ``key`` and sorted by it; retried as a whole."""

        async def attempt() -> list[T]:
            await self.cluster.refresh_metadata([])
            per_broker = await asyncio.gather(*(ask(n) for n in self.cluster.brokers))
            merged = {key(item): item for listed in per_broker for item in listed}
            return sorted(merged.values(), key=key)

        return await self.cluster.retrying(attempt)

    # Transactions (KIP-664)

    async def list_transactions(self, states: Iterable[str] = ()) -> list[TransactionListing]:
        """ListTransactions to every broker (each lists the transactional ids it
        coordinates), in ``states`` when given (Kafka's names: ``Ongoing``,
        ``PrepareCommit``, ``CompleteCommit``...), sorted by transactional id."""
        filters = list(states)

        async def from_broker(node_id: int) -> list[TransactionListing]:
            spec = RequestSpec(
                ApiKey.LIST_TRANSACTIONS, {"state_filters": filters, "producer_id_filters": []}
            )
            response = await self.cluster.send_to_node(node_id, spec)
            raise_for_error(response.error_code)
            return [
                TransactionListing(t.transactional_id, int(t.producer_id), t.transaction_state)
                for t in response.transaction_states
            ]

        return await self._from_every_broker(from_broker, lambda t: t.transactional_id)

    async def describe_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, ConsumerGroupDescription]:
        """DescribeGroups to each group's coordinator: state, protocol and members. Raises a
        group's error (GROUP_AUTHORIZATION_FAILED, ...).
        """

        async def describe(group_id: str) -> ConsumerGroupDescription:
            spec = RequestSpec(
                ApiKey.DESCRIBE_GROUPS,
                {"groups": [group_id], "include_authorized_operations": False},
            )
            response = await self._to_coordinator(group_id, spec)
            group = response.groups[0]
            raise_for_error(group.error_code, getattr(group, "error_message", None))
            members = tuple(
                MemberDescription(
                    m.member_id,
                    getattr(m, "group_instance_id", None),
                    m.client_id,
                    m.client_host,
                    decode_assignment(m.member_assignment)
                    if group.protocol_type == "consumer"
                    else (),
                )
                for m in group.members
            )
            return ConsumerGroupDescription(
                group.group_id, group.group_state, group.protocol_type, group.protocol_data, members
            )

        ids = list(group_ids)
        described = await asyncio.gather(*(describe(g) for g in ids))
        return dict(zip(ids, described, strict=True))

    async def describe_consumer_protocol_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, ConsumerProtocolGroupDescription]:
        """ConsumerGroupDescribe (KIP-848 groups) to each group's coordinator. Raises a
        group's error; a classic group answers GROUP_ID_NOT_FOUND, as in Kafka."""

        async def describe(group_id: str) -> ConsumerProtocolGroupDescription:
            spec = RequestSpec(
                ApiKey.CONSUMER_GROUP_DESCRIBE,
                {"group_ids": [group_id], "include_authorized_operations": False},
            )
            response = await self._to_coordinator(group_id, spec)
            group = response.groups[0]
            raise_for_error(group.error_code, group.error_message)
            await self.cluster.refresh_metadata()
            names = await self._topic_names_by_id()

            def partitions(assignment: Any) -> tuple[TopicPartition, ...]:
                return tuple(
                    TopicPartition(names.get(t.topic_id, t.topic_name), p)
                    for t in assignment.topic_partitions
                    for p in t.partitions
                )

            return ConsumerProtocolGroupDescription(
                group.group_id,
                group.group_state,
                group.group_epoch,
                group.assignment_epoch,
                group.assignor_name,
                tuple(
                    ConsumerProtocolMember(
                        m.member_id,
                        m.instance_id,
                        m.client_id,
                        m.client_host,
                        m.member_epoch,
                        tuple(m.subscribed_topic_names),
                        m.subscribed_topic_regex,
                        partitions(m.assignment),
                        partitions(m.target_assignment),
                    )
                    for m in group.members
                ),
            )

        ids = list(group_ids)
        described = await asyncio.gather(*(describe(g) for g in ids))
        return dict(zip(ids, described, strict=True))

    async def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """OffsetFetch to the group's coordinator: the committed offsets of ``partitions`` (all
        of the group's when None); partitions without a commit are left out. Raises a
        partition's error.
        """
        wanted = None if partitions is None else list(partitions)
        await self.cluster.refresh_metadata(None if wanted is None else {tp.topic for tp in wanted})
        topics = None
        if wanted is not None:
            topics = [
                {
                    "name": topic,
                    "topic_id": self.cluster.topic_id(topic) or ZERO_UUID,
                    "partition_indexes": indexes,
                }
                for topic, indexes in _group_partitions(wanted).items()
            ]
        spec = RequestSpec(
            ApiKey.OFFSET_FETCH,
            {
                "group_id": group_id,
                "topics": topics,
                "groups": [
                    {"group_id": group_id, "member_id": None, "member_epoch": -1, "topics": topics}
                ],
                "require_stable": False,
            },
        )
        response = await self._to_coordinator(group_id, spec)
        if hasattr(response, "groups"):
            group = response.groups[0]
            raise_for_error(group.error_code)
            response_topics = group.topics
        else:
            raise_for_error(getattr(response, "error_code", 0))
            response_topics = response.topics
        names = await self._topic_names_by_id()
        offsets = {}
        for t in response_topics:
            name = getattr(t, "name", None) or names.get(getattr(t, "topic_id", None), "")
            for p in t.partitions:
                raise_for_error(p.error_code, f"{name}-{p.partition_index}")
                if int(p.committed_offset) < 0:
                    continue
                offsets[TopicPartition(name, int(p.partition_index))] = OffsetAndMetadata(
                    int(p.committed_offset),
                    p.metadata or "",
                    int(getattr(p, "committed_leader_epoch", -1)),
                )
        return offsets

    async def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
    ) -> Results[TopicPartition]:
        """OffsetCommit to the group's coordinator with generation -1, as Kafka's Admin does,
        so the group must be inactive; per partition None or its
        error.
        """
        normalized = {
            tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
            for tp, o in offsets.items()
        }
        await self.cluster.refresh_metadata({tp.topic for tp in normalized})
        topics = [
            {
                "name": topic,
                "topic_id": self.cluster.topic_id(topic) or ZERO_UUID,
                "partitions": [
                    {
                        "partition_index": tp.partition,
                        "committed_offset": om.offset,
                        "committed_leader_epoch": om.leader_epoch,
                        "committed_metadata": om.metadata,
                    }
                    for tp, om in normalized.items()
                    if tp.topic == topic
                ],
            }
            for topic in sorted({tp.topic for tp in normalized})
        ]
        spec = RequestSpec(
            ApiKey.OFFSET_COMMIT,
            {
                "group_id": group_id,
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": topics,
            },
        )
        response = await self._to_coordinator(group_id, spec)
        names = await self._topic_names_by_id()
        return Results(
            {
                TopicPartition(
                    getattr(t, "name", None) or names.get(getattr(t, "topic_id", None), ""),
                    int(p.partition_index),
                ): error_from_wire(p.error_code)
                for t in response.topics
                for p in t.partitions
            }
        )

    async def delete_consumer_groups(self, group_ids: Iterable[str]) -> Results[str]:
        """DeleteGroups to each group's coordinator; per group None or its error
        (NON_EMPTY_GROUP while members are active, GROUP_ID_NOT_FOUND).
        """

        async def delete(group_id: str) -> KafkaError | None:
            spec = RequestSpec(ApiKey.DELETE_GROUPS, {"groups_names": [group_id]})
            response = await self._to_coordinator(group_id, spec)
            return error_from_wire(response.results[0].error_code)

        ids = list(group_ids)
        errors = await asyncio.gather(*(delete(g) for g in ids))
        return Results(dict(zip(ids, errors, strict=True)))

    # Share groups (KIP-932)

    async def list_share_groups(self) -> list[ConsumerGroupListing]:
        """ListGroups of type ``share`` to every broker, merged and sorted by group id
        (Kafka's ``listGroups(ListGroupsOptions.forShareGroups())``)."""
        return await self._list_groups(["share"])

    async def describe_share_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, ShareGroupDescription]:
        """ShareGroupDescribe to each group's coordinator. Raises a group's error
        (GROUP_ID_NOT_FOUND for an unknown group or one of another type)."""

        async def describe(group_id: str) -> ShareGroupDescription:
            spec = RequestSpec(
                ApiKey.SHARE_GROUP_DESCRIBE,
                {"group_ids": [group_id], "include_authorized_operations": False},
            )
            response = await self._to_coordinator(group_id, spec)
            group = response.groups[0]
            raise_for_error(group.error_code, group.error_message)
            await self.cluster.refresh_metadata()
            names = await self._topic_names_by_id()
            return ShareGroupDescription(
                group.group_id,
                group.group_state,
                group.group_epoch,
                group.assignment_epoch,
                group.assignor_name,
                tuple(
                    ShareMemberDescription(
                        m.member_id,
                        m.client_id,
                        m.client_host,
                        m.member_epoch,
                        tuple(m.subscribed_topic_names),
                        tuple(
                            TopicPartition(names.get(t.topic_id, t.topic_name), p)
                            for t in m.assignment.topic_partitions
                            for p in t.partitions
                        ),
                    )
                    for m in group.members
                ),
            )

        ids = list(group_ids)
        described = await asyncio.gather(*(describe(g) for g in ids))
        return dict(zip(ids, described, strict=True))

    async def list_share_group_offsets(
        self, group_id: str, topics: Iterable[str] | None = None
    ) -> dict[TopicPartition, SharePartitionOffsetInfo]:
        """DescribeShareGroupOffsets to the group's coordinator: each partition's start offset
        (SPSO), with its lag and leader epoch where known (None otherwise), for every
        partition of ``topics`` or, when None, every partition the group has state for.
        Partitions without state are left out. Raises the group's or a partition's error."""
        wanted = None
        if topics is not None:
            names = sorted(set(topics))
            await self.cluster.refresh_metadata(names)
            wanted = [
                {"topic_name": name, "partitions": sorted(self.cluster.partitions_for(name))}
                for name in names
            ]
        spec = RequestSpec(
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
            {"groups": [{"group_id": group_id, "topics": wanted}]},
        )
        group = (await self._to_coordinator(group_id, spec)).groups[0]
        raise_for_error(group.error_code, group.error_message)
        offsets = {}
        for t in group.topics:
            for p in t.partitions:
                tp = TopicPartition(t.topic_name, int(p.partition_index))
                raise_for_error(p.error_code, p.error_message or f"{tp.topic}-{tp.partition}")
                if int(p.start_offset) < 0:
                    continue
                epoch, lag = int(p.leader_epoch), int(getattr(p, "lag", -1))
                offsets[tp] = SharePartitionOffsetInfo(
                    int(p.start_offset), None if epoch < 0 else epoch, None if lag < 0 else lag
                )
        return offsets

    async def alter_share_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> Results[TopicPartition]:
        """AlterShareGroupOffsets to the group's coordinator: each partition's share state
        starts over at the given start offset. The group must have no members (raises
        NON_EMPTY_GROUP; GROUP_ID_NOT_FOUND for a group of another type); an unknown group
        id becomes an Empty share group. Per partition None or its error."""
        topics = [
            {
                "topic_name": topic,
                "partitions": [
                    {"partition_index": tp.partition, "start_offset": offset}
                    for tp, offset in offsets.items()
                    if tp.topic == topic
                ],
            }
            for topic in sorted({tp.topic for tp in offsets})
        ]
        spec = RequestSpec(
            ApiKey.ALTER_SHARE_GROUP_OFFSETS, {"group_id": group_id, "topics": topics}
        )
        response = await self._to_coordinator(group_id, spec)
        raise_for_error(response.error_code, response.error_message)
        return Results(
            {
                TopicPartition(t.topic_name, int(p.partition_index)): error_from_wire(
                    p.error_code, p.error_message
                )
                for t in response.responses
                for p in t.partitions
            }
        )

    async def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str]
    ) -> Results[str]:
        """DeleteShareGroupOffsets to the group's coordinator: the group's share state of
        every partition of ``topics`` is deleted, so a consumer starts again where
        ``share.auto.offset.reset`` says. The group must have no members (raises
        NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND). Per topic None or its error."""
        names = list(dict.fromkeys(topics))
        spec = RequestSpec(
            ApiKey.DELETE_SHARE_GROUP_OFFSETS,
            {"group_id": group_id, "topics": [{"topic_name": name} for name in names]},
        )
        response = await self._to_coordinator(group_id, spec)
        raise_for_error(response.error_code, response.error_message)
        return Results(
            {
                t.topic_name: error_from_wire(t.error_code, t.error_message)
                for t in response.responses
            }
        )

    async def delete_share_groups(self, group_ids: Iterable[str]) -> Results[str]:
        """DeleteGroups for share groups (Kafka's ``deleteShareGroups``): an Empty share group
        is deleted with its share state; per group None or its error (NON_EMPTY_GROUP while
        members are active, GROUP_ID_NOT_FOUND)."""
        return await self.delete_consumer_groups(group_ids)

    # SCRAM users

    async def alter_user_scram_credentials(
        self,
        upsertions: Iterable[ScramUpsertion] = (),
        deletions: Iterable[tuple[str, str]] = (),
    ) -> Results[str]:
        """AlterUserScramCredentials to any broker: create or replace credentials (salted
        here: the password never leaves the client) and delete (user, mechanism) pairs; per
        user None or its error.
        """
        spec = RequestSpec(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            {
                "deletions": [
                    {"name": user, "mechanism": SCRAM_MECHANISM_CODES[mechanism]}
                    for user, mechanism in deletions
                ],
                "upsertions": [_scram_upsertion(u) for u in upsertions],
            },
        )
        response = await self._to_any(spec)
        return Results(
            {r.user: error_from_wire(r.error_code, r.error_message) for r in response.results}
        )

    async def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None
    ) -> dict[str, list[tuple[str, int]]]:
        """DescribeUserScramCredentials to any broker: user -> [(mechanism, iterations)]; every
        user with credentials when ``users`` is None. Raises the first error
        (RESOURCE_NOT_FOUND for a user without any).
        """
        names = None if users is None else [{"name": u} for u in users]
        response = await self._to_any(
            RequestSpec(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, {"users": names})
        )
        raise_for_error(response.error_code, response.error_message)
        described: dict[str, list[tuple[str, int]]] = {}
        for result in response.results:
            raise_for_error(result.error_code, result.error_message)
            described[result.user] = [
                (SCRAM_MECHANISMS[int(info.mechanism)], int(info.iterations))
                for info in result.credential_infos
            ]
        return described

    # client quotas

    async def describe_client_quotas(
        self, components: Iterable[QuotaFilterComponent] = (), *, strict: bool = False
    ) -> dict[QuotaEntity, dict[str, float]]:
        """DescribeClientQuotas to any broker: entity -> {key: value} for the entities the
        filter matches (every entity with no components and ``strict`` False). Raises the
        request's error (INVALID_REQUEST for a bad filter, CLUSTER_AUTHORIZATION_FAILED).
        """
        spec = RequestSpec(
            ApiKey.DESCRIBE_CLIENT_QUOTAS,
            {
                "components": [
                    {
                        "entity_type": c.entity_type,
                        "match_type": int(c.match_type),
                        "match": c.match,
                    }
                    for c in components
                ],
                "strict": strict,
            },
        )
        response = await self._to_any(spec)
        raise_for_error(response.error_code, response.error_message)
        return {
            _quota_entity(entry.entity): {v.key: float(v.value) for v in entry.values}
            for entry in response.entries or ()
        }

    async def alter_client_quotas(
        self, alterations: Iterable[QuotaAlteration], *, validate_only: bool = False
    ) -> Results[QuotaEntity]:
        """AlterClientQuotas to any broker; per entity None or its error (INVALID_REQUEST
        for an unknown key or entity type, a value not above zero, ...)."""
        wanted = list(alterations)
        spec = RequestSpec(
            ApiKey.ALTER_CLIENT_QUOTAS,
            {
                "entries": [
                    {
                        "entity": [{"entity_type": t, "entity_name": n} for t, n in a.entity],
                        "ops": [
                            {
                                "key": key,
                                "value": 0.0 if value is None else value,
                                "remove": value is None,
                            }
                            for key, value in a.ops.items()
                        ],
                    }
                    for a in wanted
                ],
                "validate_only": validate_only,
            },
        )
        response = await self._to_any(spec)
        return Results(
            {
                _quota_entity(entry.entity): error_from_wire(entry.error_code, entry.error_message)
                for entry in response.entries
            }
        )

    # ACLs

    async def create_acls(self, bindings: Iterable[AclBinding]) -> Results[AclBinding]:
        """CreateAcls to any broker; per binding None or its error
        (SECURITY_DISABLED without an authorizer, INVALID_REQUEST, ...).
        """
        wanted = list(bindings)
        spec = RequestSpec(
            ApiKey.CREATE_ACLS,
            {
                "creations": [
                    {
                        "resource_type": b.resource_type,
                        "resource_name": b.resource_name,
                        "resource_pattern_type": b.pattern_type,
                        "principal": b.principal,
                        "host": b.host,
                        "operation": b.operation,
                        "permission_type": b.permission_type,
                    }
                    for b in wanted
                ]
            },
        )
        response = await self._to_any(spec)
        return Results(
            {
                b: error_from_wire(r.error_code, r.error_message)
                for b, r in zip(wanted, response.results, strict=True)
            }
        )

    async def describe_acls(
        self, acl_filter: AclBindingFilter = MATCH_ALL_ACLS
    ) -> list[AclBinding]:
        """DescribeAcls to any broker: every binding matching ``acl_filter`` (all by default).
        Raises the request's error (SECURITY_DISABLED without an authorizer, ...).
        """
        spec = RequestSpec(ApiKey.DESCRIBE_ACLS, _filter_fields(acl_filter))
        response = await self._to_any(spec)
        raise_for_error(response.error_code, response.error_message)
        return [
            AclBinding(
                ResourceType(r.resource_type),
                r.resource_name,
                a.principal,
                AclOperation(a.operation),
                AclPermissionType(a.permission_type),
                a.host,
                PatternType(getattr(r, "pattern_type", PatternType.LITERAL)),
            )
            for r in response.resources
            for a in r.acls
        ]

    async def delete_acls(
        self, filters: Iterable[AclBindingFilter]
    ) -> dict[AclBindingFilter, list[AclBinding]]:
        """DeleteAcls to any broker: the bindings each filter deleted. Raises the first
        filter's error."""
        wanted = list(filters)
        spec = RequestSpec(ApiKey.DELETE_ACLS, {"filters": [_filter_fields(f) for f in wanted]})
        response = await self._to_any(spec)
        deleted: dict[AclBindingFilter, list[AclBinding]] = {}
        for acl_filter, result in zip(wanted, response.filter_results, strict=True):
            raise_for_error(result.error_code, result.error_message)
            deleted[acl_filter] = [
                AclBinding(
                    ResourceType(m.resource_type),
                    m.resource_name,
                    m.principal,
                    AclOperation(m.operation),
                    AclPermissionType(m.permission_type),
                    m.host,
                    PatternType(getattr(m, "pattern_type", PatternType.LITERAL)),
                )
                for m in result.matching_acls
                if error_from_wire(m.error_code) is None
            ]
        return deleted

    # Cluster mirroring (KIP-1279)

    async def create_mirror(self, name: str, configs: Mapping[str, str]) -> None:
        """CreateMirror (KIP-1279) to any broker, which forwards it to the controller; ``configs``
        are the mirror's source connection properties. Raises the error (MIRROR_ALREADY_EXISTS,
        INVALID_CONFIG, ...).
        """
        spec = RequestSpec(
            MirrorApiKey.CREATE_MIRROR,
            {"mirror_name": name, "config": [{"name": k, "value": v} for k, v in configs.items()]},
        )
        response = await self._to_any(spec)
        raise_for_error(response.error_code, response.error_message)

    async def add_topics_to_mirror(
        self,
        name: str,
        topics: Iterable[str],
        *,
        topic_ids: Mapping[str, uuid.UUID] | None = None,
    ) -> Results[str]:
        """AddTopicsToMirror to any broker (forwarded to the controller): mirror ``topics`` from
        the mirror's source; per topic None or its error. Raises a request-wide error
        (UNKNOWN_MIRROR, ...).

        Each topic goes with an id, which the broker holds against the source topic's
        (UNKNOWN_TOPIC_ID when they differ: the source topic was deleted and created again):
        the one in ``topic_ids``, else the id this cluster already has for the name (a
        re-added, failed-over topic keeps its source id), else the zero id, which matches
        any.
        """
        names = sorted(set(topics))
        await self.cluster.refresh_metadata(names)
        ids = {t: self.cluster.topic_id(t) or ZERO_UUID for t in names} | dict(topic_ids or {})
        spec = RequestSpec(
            MirrorApiKey.ADD_TOPICS_TO_MIRROR,
            {
                "mirror_name": name,
                "topics": [{"topic_id": ids[t], "topic_name": t} for t in names],
            },
        )
        return await self._mirror_topic_results(spec)

    async def remove_topics_from_mirror(self, name: str, topics: Iterable[str]) -> Results[str]:
        """RemoveTopicsFromMirror to any broker (forwarded to the controller): stop mirroring
        ``topics``, leaving them writable; per topic None or its error. Raises a request-wide
        error.
        """
        return await self._mirror_topics(MirrorApiKey.REMOVE_TOPICS_FROM_MIRROR, name, topics)

    async def pause_mirror_topics(self, name: str, topics: Iterable[str]) -> Results[str]:
        """PauseMirrorTopics to any broker (forwarded to the controller); per topic None or its
        error. Raises a request-wide error.
        """
        return await self._mirror_topics(MirrorApiKey.PAUSE_MIRROR_TOPICS, name, topics)

    async def resume_mirror_topics(self, name: str, topics: Iterable[str]) -> Results[str]:
        """ResumeMirrorTopics to any broker (forwarded to the controller); per topic None or its
        error. Raises a request-wide error.
        """
        return await self._mirror_topics(MirrorApiKey.RESUME_MIRROR_TOPICS, name, topics)

    async def delete_mirror(self, name: str) -> None:
        """DeleteMirror to any broker (forwarded to the controller). Raises the error
        (UNKNOWN_MIRROR, ...).
        """
        response = await self._to_any(
            RequestSpec(MirrorApiKey.DELETE_MIRROR, {"mirror_name": name})
        )
        raise_for_error(response.error_code, response.error_message)

    async def list_mirrors(self) -> list[MirrorListing]:
        """ListMirrors to any broker: name, source bootstrap, source cluster id and topic count
        of each mirror. Raises the request's error.
        """
        response = await self._to_any(RequestSpec(MirrorApiKey.LIST_MIRRORS))
        raise_for_error(response.error_code, response.error_message)
        return [
            MirrorListing(
                m.mirror_name, m.source_bootstrap, m.source_cluster_id, int(m.topic_count)
            )
            for m in response.mirrors
        ]

    async def describe_mirrors(
        self, names: Iterable[str] | None = None, *, include_authorized_operations: bool = False
    ) -> dict[str, MirrorDescription]:
        """DescribeMirrors: state and lag of every partition of the named mirrors (when None:
        all mirrors the caller may describe), with the caller's operations on each if asked.

        Each broker reports the partitions it leads, so the request goes to every broker and
        the answers are merged; a partition reported twice is kept once. Raises a mirror's
        error (UNKNOWN_MIRROR, ...).
        """
        spec = RequestSpec(
            MirrorApiKey.DESCRIBE_MIRRORS,
            {
                "mirror_names": list(names or ()),
                "include_authorized_operations": include_authorized_operations,
            },
        )

        async def attempt() -> dict[str, MirrorDescription]:
            await self.cluster.refresh_metadata([])
            responses = await asyncio.gather(
                *(self.cluster.send_to_node(n, spec) for n in sorted(self.cluster.brokers))
            )
            merged: dict[str, dict[tuple[str, int], MirrorPartitionDescription]] = defaultdict(dict)
            operations: dict[str, frozenset[AclOperation]] = {}
            for response in responses:
                raise_for_error(response.error_code, response.error_message)
                for mirror in response.mirrors:
                    raise_for_error(mirror.error_code, f"mirror {mirror.mirror_name}")
                    if mirror.authorized_operations != UNSET_AUTHORIZED_OPERATIONS:
                        operations[mirror.mirror_name] = _operations(mirror.authorized_operations)
                    partitions = merged[mirror.mirror_name]
                    for t in mirror.topics:
                        for p in t.partitions:
                            partitions.setdefault(
                                (t.topic_name, int(p.partition_index)),
                                MirrorPartitionDescription(
                                    t.topic_name,
                                    int(p.partition_index),
                                    int(p.source_offset),
                                    int(p.destination_offset),
                                    int(p.lag),
                                    p.state,
                                    int(p.last_mirror_epoch),
                                ),
                            )
            return {
                name: MirrorDescription(
                    name, tuple(parts[k] for k in sorted(parts)), operations.get(name)
                )
                for name, parts in sorted(merged.items())
            }

        return await self.cluster.retrying(attempt)

    async def _mirror_topics(self, api_key: int, name: str, topics: Iterable[str]) -> Results[str]:
        names = sorted(set(topics))
        await self.cluster.refresh_metadata(names)
        spec = RequestSpec(
            api_key,
            {
                "mirror_name": name,
                "topics": [
                    {"topic_id": self.cluster.topic_id(t) or ZERO_UUID, "topic_name": t}
                    for t in names
                ],
            },
        )
        return await self._mirror_topic_results(spec)

    async def _mirror_topic_results(self, spec: RequestSpec) -> Results[str]:
        response = await self._to_any(spec)
        raise_for_error(response.error_code, response.error_message)
        return Results(
            {t.name: error_from_wire(t.error_code, t.error_message) for t in response.topics}
        )

    # Routing

    async def _to_any(self, spec: RequestSpec) -> Any:
        return await self.cluster.retrying(lambda: self.cluster.send_to_any(spec))

    async def _to_node_or_any(self, node_id: int | None, spec: RequestSpec) -> Any:
        if node_id is None:
            return await self._to_any(spec)
        return await self.cluster.retrying(lambda: self.cluster.send_to_node(node_id, spec))

    async def _to_controller(self, spec: RequestSpec) -> Any:
        async def attempt() -> Any:
            response = await self.cluster.send_to_controller(spec)
            _raise_if_not_controller(response)
            return response

        return await self.cluster.retrying(attempt)

    async def _to_coordinator(self, group_id: str, spec: RequestSpec) -> Any:
        async def attempt() -> Any:
            coordinator = await self.cluster.find_coordinator(group_id, CoordinatorType.GROUP)
            response = await self.cluster.send_to_node(coordinator.node_id, spec)
            _raise_if_coordinator_moved(response)
            return response

        return await self.cluster.retrying(attempt)

    async def _per_leader(
        self,
        wanted: Mapping[TopicPartition, T],
        call: Callable[[int, dict[TopicPartition, T]], Awaitable[dict]],
    ) -> dict:
        """Send each leader its share of ``wanted``. A partition that does not exist fails at
        once; one without a leader (an election in progress) is retried."""
        topics = {tp.topic for tp in wanted}
        await self.cluster.retrying(lambda: self.cluster.refresh_metadata(topics))
        for tp in wanted:
            if tp.partition not in self.cluster.partitions_for(tp.topic):
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp.topic}-{tp.partition}")

        async def attempt() -> dict:
            await self.cluster.refresh_metadata(topics)
            by_leader: dict[int, dict[TopicPartition, T]] = defaultdict(dict)
            for tp, value in wanted.items():
                leader = self.cluster.leader_for(tp.topic, tp.partition)
                if leader is None:
                    raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{tp.topic}-{tp.partition}")
                by_leader[leader][tp] = value
            results = await asyncio.gather(*(call(n, group) for n, group in by_leader.items()))
            return {tp: value for result in results for tp, value in result.items()}

        return await self.cluster.retrying(attempt)

    async def _topic_names_by_id(self) -> dict[uuid.UUID | None, str]:
        return {t.topic_id: name for name, t in self.cluster.metadata.topics.items()}


def _by_topic(
    values: Mapping[TopicPartition, T], partition_fields: Callable[[TopicPartition, T], dict]
) -> list[dict]:
    topics: dict[str, list[dict]] = defaultdict(list)
    for tp, value in values.items():
        topics[tp.topic].append(partition_fields(tp, value))
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]


def _group_partitions(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        grouped[tp.topic].append(tp.partition)
    return grouped


def _filter_fields(acl_filter: AclBindingFilter) -> dict[str, Any]:
    return {
        "resource_type_filter": acl_filter.resource_type,
        "resource_name_filter": acl_filter.resource_name,
        "pattern_type_filter": acl_filter.pattern_type,
        "principal_filter": acl_filter.principal,
        "host_filter": acl_filter.host,
        "operation": acl_filter.operation,
        "permission_type": acl_filter.permission_type,
    }


def _config_type(value: int) -> ConfigResourceType:
    try:
        return ConfigResourceType(int(value))
    except ValueError:
        return ConfigResourceType.UNKNOWN


def _raise_if_not_controller(response: Any) -> None:
    """Controller-bound responses carry NOT_CONTROLLER per entity; retry the whole request."""
    for entities in ("topics", "responses", "results"):
        for entity in getattr(response, entities, ()):
            if int(getattr(entity, "error_code", 0)) == ErrorCode.NOT_CONTROLLER:
                raise KafkaError(ErrorCode.NOT_CONTROLLER)


def _raise_if_coordinator_moved(response: Any) -> None:
    moved = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
    code = int(getattr(response, "error_code", 0))
    groups = getattr(response, "groups", None) or getattr(response, "results", None) or ()
    codes = [code, *(int(getattr(g, "error_code", 0)) for g in groups)]
    for found in codes:
        if found in moved:
            raise KafkaError(ErrorCode(found))


def _config_targets(resources: Iterable[ConfigResource]) -> dict[int | None, list[ConfigResource]]:
    """Config resources by the node that must answer them: a BROKER or BROKER_LOGGER
    resource named by a broker id goes to that broker, everything else (None) to any."""
    targets: dict[int | None, list[ConfigResource]] = {}
    for resource in resources:
        named_broker = resource.type in (
            ConfigResourceType.BROKER,
            ConfigResourceType.BROKER_LOGGER,
        )
        node_id = int(resource.name) if named_broker and resource.name.isdigit() else None
        targets.setdefault(node_id, []).append(resource)
    return targets


def _quota_entity(wire: Iterable[Any]) -> QuotaEntity:
    return tuple(sorted((e.entity_type, e.entity_name) for e in wire))


SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
"""Kafka's ``ScramMechanism`` wire codes."""
SCRAM_MECHANISM_CODES = {name: code for code, name in SCRAM_MECHANISMS.items()}
_SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def _scram_upsertion(upsertion: ScramUpsertion) -> dict[str, Any]:
    """The salted password Kafka's Admin sends (PBKDF2 with the mechanism's hash)."""
    salt = upsertion.salt or secrets.token_bytes(32)
    salted = hashlib.pbkdf2_hmac(
        _SCRAM_HASHES[upsertion.mechanism],
        upsertion.password.encode(),
        salt,
        upsertion.iterations,
    )
    return {
        "name": upsertion.user,
        "mechanism": SCRAM_MECHANISM_CODES[upsertion.mechanism],
        "iterations": upsertion.iterations,
        "salt": salt,
        "salted_password": salted,
    }


def _operations(bits: int) -> frozenset[AclOperation]:
    """The operations of an AuthorizedOperations bitfield (bit n is ``AclOperation(n)``)."""
    return frozenset(op for op in AclOperation if bits & (1 << op))
