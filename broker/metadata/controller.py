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
from dataclasses import dataclass
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
    TopicConfigsChangedError,
    TopicExistsError,
    TopicRecord,
    UnknownTopicError,
)
from mirrorsim.broker.metadata.store import CLUSTER_DEFAULT, MetadataStore
from mirrorsim.broker.metadata.view import ClusterSnapshot
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.uuids import ZERO_UUID

DEFAULT = -1
"""CreateTopics' "use the broker default" marker for partitions and replication factor."""


@dataclass(frozen=True, slots=True)
class NewTopicRequest:
    """One topic of a CreateTopics request, as the controller validates it."""

    name: str
    num_partitions: int = DEFAULT
    replication_factor: int = DEFAULT
    assignments: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str | None] | None = None
    topic_id: uuid.UUID | None = None
    internal_configs: bool = False
    """Whether ``configs`` may hold internal names (``mirror.name``): only the mirror
    lifecycle sets it, so that a mirror topic is read-only from its first record."""


class _TakenNames:
    """The names, collision forms and topic ids a new topic must not reuse: the snapshot's
    topics and those planned earlier in the same request, looked up in constant time."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self._names: set[str] = set()
        self._folded: dict[str, str] = {}
        self._ids: dict[uuid.UUID, str] = {}
        for topic in snapshot.topics.values():
            self.add(topic)

    def add(self, topic: TopicRecord) -> None:
        self._names.add(topic.name)
        self._folded.setdefault(topic.name.replace(".", "_"), topic.name)
        self._ids.setdefault(topic.topic_id, topic.name)

    def check_name(self, name: str) -> None:
        if name in self._names:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        other = self._folded.get(name.replace(".", "_"))
        if other is not None:
            raise KafkaError(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Topic '{name}' collides with existing topic: {other}",
            )

    def check_topic_id(self, topic_id: uuid.UUID) -> None:
        if topic_id == ZERO_UUID:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "The mirror topic id must not be zero.")
        other = self._ids.get(topic_id)
        if other is not None:
            raise KafkaError(
                ErrorCode.TOPIC_ALREADY_EXISTS,
                f"Topic id {topic_id} is already used by topic '{other}'.",
            )


ConfigChange = Callable[[dict[str, str]], Mapping[str, str]]
"""A topic's new overrides from its current ones (may raise ``KafkaError`` to refuse)."""


def _altered(configs: Mapping[str, str], ops: Sequence[AlterConfigOp]) -> dict[str, str]:
    """``configs`` after IncrementalAlterConfigs ``ops``, validated; INVALID_CONFIG if not."""
    definitions = {n: d.definition for n, d in TOPIC_CONFIGS.items() if not d.internal}
    try:
        updated = apply_alter_ops(configs, ops, definitions)
        validate_topic_configs(updated, allow_internal=True)
    except ConfigError as exc:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    return dict(updated)


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
        """One topic of ``create_topics``; its error is raised."""
        request = NewTopicRequest(
            name, num_partitions, replication_factor, assignments, configs, topic_id
        )
        (outcome,) = await self.create_topics([request], validate_only=validate_only)
        if isinstance(outcome, KafkaError):
            raise outcome
        return outcome

    async def create_topics(
        self, requests: Sequence[NewTopicRequest], *, validate_only: bool = False
    ) -> list[TopicRecord | KafkaError]:
        """Each topic validated on its own, in order (a topic sees the ones before it in
        the same request as existing); per topic, its record or its error.

        The writes of the whole request run on one worker thread and are followed by one
        metadata refresh: a refresh re-reads and diffs every partition of the cluster, so
        one per topic made a request of many topics quadratic.
        """
        planned: list[TopicRecord | KafkaError] = []
        taken = _TakenNames(self._snapshot())
        for request in requests:
            try:
                record = await self._plan_topic(request, taken)
            except KafkaError as exc:
                planned.append(exc)
            else:
                taken.add(record)
                planned.append(record)
        if validate_only:
            return planned
        records = [p for p in planned if isinstance(p, TopicRecord)]
        if not records:
            return planned
        refused = await asyncio.to_thread(self._write_topics, records)
        await self._on_change()
        return [refused.get(p.name, p) if isinstance(p, TopicRecord) else p for p in planned]

    def _write_topics(self, records: Sequence[TopicRecord]) -> dict[str, KafkaError]:
        """Another broker may have created a name since the snapshot: the store refuses it."""
        refused = {}
        for record in records:
            try:
                self._store.create_topic(record)
            except TopicExistsError as exc:
                refused[record.name] = KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, str(exc))
        return refused

    async def _plan_topic(self, request: NewTopicRequest, taken: _TakenNames) -> TopicRecord:
        """``topic_id`` is CreateTopics v8's ``MirrorInfo.TopicId``: the source cluster's id,
        refused if another topic here has it. KIP-1279 also requires every replica of the
        assignment to be live (not fenced, not shutting down), so that a stale log dir of
        an earlier topic with this id is never taken for the current one (KAFKA-16234);
        replicas are only ever planned or accepted on live brokers, which covers it."""
        problem = topic_name_error(request.name)
        if problem:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        taken.check_name(request.name)
        if request.topic_id is not None:
            taken.check_topic_id(request.topic_id)
        overrides = dict(request.configs or {})
        try:
            validate_topic_configs(overrides, allow_internal=request.internal_configs)
        except ConfigError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        await self._refresh_if_brokers_unknown(request.assignments, request.replication_factor)
        replicas = self._plan_replicas(
            request.num_partitions, request.replication_factor, request.assignments
        )
        return TopicRecord(
            name=request.name,
            topic_id=new_topic_id() if request.topic_id is None else request.topic_id,
            configs={k: v for k, v in overrides.items() if v is not None},
            partitions=tuple(
                PartitionAssignment(p, r, leader=r[0], leader_epoch=0, isr=r)
                for p, r in sorted(replicas.items())
            ),
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
        """IncrementalAlterConfigs of one topic: the operations apply to the stored
        overrides as they are when written, not to this broker's snapshot of them."""
        topic = self._snapshot().topics.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if any(op.name == MIRROR_NAME for op in ops):
            raise KafkaError(
                ErrorCode.INVALID_CONFIG,
                f"{MIRROR_NAME} can only be changed through the mirror APIs",
            )
        _altered(topic.configs, ops)
        if validate_only:
            return
        await self.update_topic_configs(name, lambda current: _altered(current, ops))

    async def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace a topic's overrides, internal ones included (the mirror APIs use this)."""
        error = (await self.set_configs_of_topics({name: configs}))[name]
        if error is not None:
            raise error

    async def set_configs_of_topics(
        self,
        changes: Mapping[str, Mapping[str, str]],
        *,
        expected: Mapping[str, Mapping[str, str]] | None = None,
    ) -> dict[str, KafkaError | None]:
        """``set_topic_configs`` for many topics: the writes on one worker thread, then one
        metadata refresh. Per topic, None or its error. A topic named in ``expected`` is
        written only if its overrides still equal the given ones, else its error is
        INVALID_UPDATE_VERSION (the caller read them too long ago)."""
        if not changes:
            return {}
        outcomes = await asyncio.to_thread(self._write_topic_configs, changes, expected or {})
        if any(error is None for error in outcomes.values()):
            await self._on_change()
        return outcomes

    def _write_topic_configs(
        self,
        changes: Mapping[str, Mapping[str, str]],
        expected: Mapping[str, Mapping[str, str]],
    ) -> dict[str, KafkaError | None]:
        outcomes: dict[str, KafkaError | None] = {}
        for name, configs in changes.items():
            try:
                self._store.set_topic_configs(name, configs, expected=expected.get(name))
            except UnknownTopicError:
                outcomes[name] = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            except TopicConfigsChangedError:
                outcomes[name] = KafkaError(
                    ErrorCode.INVALID_UPDATE_VERSION,
                    f"the configs of topic {name} changed since they were read",
                )
            else:
                outcomes[name] = None
        return outcomes

    async def update_topic_configs(self, name: str, change: ConfigChange) -> None:
        """Apply ``change`` to a topic's stored overrides in one store transaction; its
        error is raised."""
        error = (await self.update_configs_of_topics({name: change}))[name]
        if error is not None:
            raise error

    async def update_configs_of_topics(
        self, changes: Mapping[str, ConfigChange]
    ) -> dict[str, KafkaError | None]:
        """``update_topic_configs`` for many topics, then one metadata refresh. Per topic,
        None or its error (a ``KafkaError`` the change raised, or unknown topic)."""
        if not changes:
            return {}
        outcomes = await asyncio.to_thread(self._update_topic_configs, changes)
        if any(error is None for error in outcomes.values()):
            await self._on_change()
        return outcomes

    def _update_topic_configs(
        self, changes: Mapping[str, ConfigChange]
    ) -> dict[str, KafkaError | None]:
        outcomes: dict[str, KafkaError | None] = {}
        for name, change in changes.items():
            try:
                self._store.update_topic_configs(name, change)
            except UnknownTopicError:
                outcomes[name] = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            except KafkaError as exc:
                outcomes[name] = exc
            else:
                outcomes[name] = None
        return outcomes

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
