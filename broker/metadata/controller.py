"""Validated writes to the metadata store: topics, partitions and configs.

Every broker can serve admin requests (there is no separate controller quorum): the
database transaction is what serializes concurrent changes. Validation follows Kafka's
controller, with its error codes and messages, and ``validate_only`` runs all of it
without writing.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from mirrorsim.broker.config import (
    BROKER_CONFIGS,
    MIRROR_NAME,
    TOPIC_CONFIGS,
    ConfigError,
    effective_broker_config,
    topic_name_error,
    validate_broker_configs,
    validate_topic_configs,
)
from mirrorsim.broker.metadata.alter_ops import AlterConfigOp, apply_alter_ops
from mirrorsim.broker.metadata.assignment import assign_replicas, validate_manual_assignment
from mirrorsim.broker.metadata.ids import new_topic_id
from mirrorsim.broker.metadata.models import (
    PartitionAssignment,
    TopicExistsError,
    TopicRecord,
    UnknownTopicError,
)
from mirrorsim.broker.metadata.store import CLUSTER_DEFAULT, MetadataStore
from mirrorsim.broker.metadata.view import ClusterSnapshot
from mirrorsim.protocol.errors import ErrorCode, KafkaError

DEFAULT = -1
"""CreateTopics' "use the broker default" marker for partitions and replication factor."""
ZERO_UUID = uuid.UUID(int=0)


class MetadataController:
    def __init__(
        self,
        store: MetadataStore,
        *,
        broker_id: int,
        static_configs: Mapping[str, str],
        snapshot: Callable[[], ClusterSnapshot],
        live_broker_ids: Callable[[], list[int]],
        on_change: Callable[[], Awaitable[None]],
    ) -> None:
        self._store = store
        self._broker_id = broker_id
        self._static = static_configs
        self._snapshot = snapshot
        self._live_broker_ids = live_broker_ids
        self._on_change = on_change

    def broker_config(self, name: str) -> Any:
        layers = self._snapshot().config_layers(self._broker_id, self._static)
        return effective_broker_config(layers, name)

    async def create_topic(
        self,
        name: str,
        *,
        num_partitions: int = DEFAULT,
        replication_factor: int = DEFAULT,
        assignments: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str | None] | None = None,
        validate_only: bool = False,
        topic_id: uuid.UUID | None = None,
    ) -> TopicRecord:
        """``topic_id`` is CreateTopics v8's ``MirrorInfo.TopicId``: the source cluster's id,
        refused if another topic here has it. KIP-1279 also requires every replica of the
        assignment to be live (not fenced, not shutting down), so that a stale log dir of
        an earlier topic with this id is never taken for the current one (KAFKA-16234);
        replicas are only ever planned or accepted on live brokers, which covers it."""
        problem = topic_name_error(name)
        if problem:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        self._check_collision(name)
        if topic_id is not None:
            self._check_topic_id_unused(topic_id)
        overrides = dict(configs or {})
        try:
            validate_topic_configs(overrides)
        except ConfigError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        await self._refresh_if_brokers_unknown(assignments, replication_factor)
        replicas = self._plan_replicas(num_partitions, replication_factor, assignments)
        record = TopicRecord(
            name=name,
            topic_id=new_topic_id() if topic_id is None else topic_id,
            configs={k: v for k, v in overrides.items() if v is not None},
            partitions=tuple(
                PartitionAssignment(p, r, leader=r[0], leader_epoch=0, isr=r)
                for p, r in sorted(replicas.items())
            ),
        )
        if validate_only:
            return record
        try:
            await asyncio.to_thread(self._store.create_topic, record)
        except TopicExistsError as exc:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, str(exc)) from None
        await self._on_change()
        return record

    def _check_topic_id_unused(self, topic_id: uuid.UUID) -> None:
        if topic_id == ZERO_UUID:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "The mirror topic id must not be zero.")
        other = self._snapshot().topic_by_id(topic_id)
        if other is not None:
            raise KafkaError(
                ErrorCode.TOPIC_ALREADY_EXISTS,
                f"Topic id {topic_id} is already used by topic '{other.name}'.",
            )

    def _check_collision(self, name: str) -> None:
        existing = self._snapshot().topics
        if name in existing:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        folded = name.replace(".", "_")
        for other in existing:
            if other.replace(".", "_") == folded:
                raise KafkaError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topic: {other}",
                )

    async def _refresh_if_brokers_unknown(
        self, assignments: Mapping[int, Sequence[int]] | None, replication_factor: int
    ) -> None:
        """A broker that registered after this broker's last metadata refresh is live but
        not yet in the snapshot; refresh once rather than refuse a valid assignment."""
        live = set(self._live_broker_ids())
        wanted = {b for replicas in (assignments or {}).values() for b in replicas}
        if not wanted <= live or replication_factor > len(live):
            await self._on_change()

    def _plan_replicas(
        self,
        num_partitions: int,
        replication_factor: int,
        assignments: Mapping[int, Sequence[int]] | None,
    ) -> dict[int, tuple[int, ...]]:
        live = self._live_broker_ids()
        if assignments:
            if num_partitions != DEFAULT or replication_factor != DEFAULT:
                raise KafkaError(
                    ErrorCode.INVALID_REQUEST,
                    "Both numPartitions or replicationFactor and replicasAssignment were set.",
                )
            return validate_manual_assignment(assignments, live)
        if num_partitions == DEFAULT:
            num_partitions = int(self.broker_config("num.partitions"))
        if replication_factor == DEFAULT:
            replication_factor = int(self.broker_config("default.replication.factor"))
        if num_partitions <= 0:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS,
                "Number of partitions was set to an invalid non-positive value.",
            )
        if replication_factor <= 0:
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        return assign_replicas(live, num_partitions, replication_factor)

    async def delete_topic(self, name: str) -> TopicRecord:
        try:
            record = await asyncio.to_thread(self._store.delete_topic, name)
        except UnknownTopicError:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None
        await self._on_change()
        return record

    async def create_partitions(
        self,
        name: str,
        count: int,
        *,
        assignments: Sequence[Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> None:
        topic = self._snapshot().topics.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        current = len(topic.partitions)
        if count < current:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS,
                f"Topic currently has {current} partitions, which is higher than the "
                f"requested {count}.",
            )
        if count == current:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions."
            )
        added = count - current
        replication_factor = len(topic.partitions[0].replicas) if topic.partitions else 1
        await self._refresh_if_brokers_unknown(
            dict(enumerate(assignments or ())), replication_factor
        )
        if assignments:
            if len(assignments) != added:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Attempted to add {added} additional partition(s), but only "
                    f"{len(assignments)} assignment(s) were specified.",
                )
            replicas = validate_manual_assignment(
                {current + i: r for i, r in enumerate(assignments)},
                self._live_broker_ids(),
                first_partition=current,
            )
        else:
            replicas = assign_replicas(
                self._live_broker_ids(), added, replication_factor, first_partition=current
            )
        if validate_only:
            return
        new = [
            PartitionAssignment(p, r, leader=r[0], leader_epoch=0, isr=r)
            for p, r in sorted(replicas.items())
        ]
        await asyncio.to_thread(self._store.add_partitions, name, new)
        await self._on_change()

    async def alter_topic_configs(
        self, name: str, ops: Sequence[AlterConfigOp], *, validate_only: bool = False
    ) -> None:
        topic = self._snapshot().topics.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if any(op.name == MIRROR_NAME for op in ops):
            raise KafkaError(
                ErrorCode.INVALID_CONFIG,
                f"{MIRROR_NAME} can only be changed through the mirror APIs",
            )
        definitions = {n: d.definition for n, d in TOPIC_CONFIGS.items() if not d.internal}
        try:
            updated = apply_alter_ops(topic.configs, ops, definitions)
            validate_topic_configs(updated, allow_internal=True)
        except ConfigError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        if validate_only:
            return
        await self.set_topic_configs(name, updated)

    async def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace a topic's overrides, internal ones included (the mirror APIs use this)."""
        try:
            await asyncio.to_thread(self._store.set_topic_configs, name, configs)
        except UnknownTopicError:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None
        await self._on_change()

    async def alter_broker_configs(
        self, resource_name: str, ops: Sequence[AlterConfigOp], *, validate_only: bool = False
    ) -> None:
        """``resource_name`` is a broker id, or empty for the cluster-wide default."""
        if resource_name != CLUSTER_DEFAULT and not resource_name.isdigit():
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, f"Invalid broker resource name: {resource_name}"
            )
        snapshot = self._snapshot()
        current = (
            snapshot.dynamic_default_configs
            if resource_name == CLUSTER_DEFAULT
            else snapshot.dynamic_broker_configs.get(int(resource_name), {})
        )
        try:
            updated = apply_alter_ops(current, ops, BROKER_CONFIGS)
            validate_broker_configs({op.name: updated.get(op.name) for op in ops})
        except ConfigError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        if validate_only:
            return
        await asyncio.to_thread(self._store.set_broker_configs, resource_name, updated)
        await self._on_change()
