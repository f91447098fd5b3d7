"""The ``__mirror_state`` partitions this broker leads, as replayed ``MirrorStateStore``s.

A broker coordinates the mirror partitions whose key hashes to a ``__mirror_state``
partition it leads. When it becomes leader it replays that partition's log into a
``MirrorStateStore``; when it stops leading it drops the store so it never answers from
stale memory. Writes append to the log first and apply to memory only once every ISR
member has the append (the high watermark passed it), so memory never runs ahead of what
the next leader would replay, even after a controlled shutdown hands the partition to a
follower.

The topic is created on first use (the first CreateMirror) with
``mirror.topic.num.partitions`` partitions and ``mirror.topic.replication.factor``
replicas, capped at the live broker count so a small cluster can still mirror.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from mirrorsim.broker.log.results import AppendInfo
from mirrorsim.broker.metadata.view import ClusterSnapshot
from mirrorsim.broker.replica.partition import Partition
from mirrorsim.coordinator.mirror_state_store import (
    MirrorStateRecord,
    MirrorStateStore,
    mirror_state_partition,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.mirror_state_records import MIRROR_STATE_TOPIC
from mirrorsim.protocol.records import Record, build_batch, decode_records
from mirrorsim.protocol.records.raw_batch import RawBatch

log = logging.getLogger(__name__)

STATE_TOPIC_CONFIGS = {"cleanup.policy": "compact", "retention.ms": "-1"}


@runtime_checkable
class StateTopicCreator(Protocol):
    async def create_topic(
        self,
        name: str,
        *,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str | None] | None,
    ) -> object: ...


@runtime_checkable
class StateTopicReplicas(Protocol):
    def partition(self, topic: str, partition: int) -> Partition: ...

    def partitions(self) -> list[Partition]: ...

    async def append_internal_replicated(
        self, topic: str, partition: int, batches: list[RawBatch], timeout_ms: int
    ) -> AppendInfo: ...


@runtime_checkable
class StateTopicHost(Protocol):
    """What the state topic needs of its broker: who it is, what the metadata says, how
    to create the topic, and the replica manager that holds its partitions."""

    @property
    def broker_id(self) -> int: ...

    @property
    def snapshot(self) -> ClusterSnapshot: ...

    @property
    def controller(self) -> StateTopicCreator: ...

    @property
    def replica_manager(self) -> StateTopicReplicas: ...

    def config(self, name: str) -> Any: ...

    def live_brokers(self) -> Collection[object]: ...

    async def refresh_metadata(self) -> None: ...


class MirrorStateTopic:
    def __init__(self, broker: StateTopicHost) -> None:
        self._broker = broker
        self._stores: dict[int, MirrorStateStore] = {}

    @property
    def exists(self) -> bool:
        return MIRROR_STATE_TOPIC in self._broker.snapshot.topics

    def num_partitions(self) -> int:
        topic = self._broker.snapshot.topics.get(MIRROR_STATE_TOPIC)
        if topic is not None:
            return len(topic.partitions)
        return int(self._broker.config("mirror.topic.num.partitions"))

    def partition_for(self, mirror: str, topic_id: Any, partition: int) -> int:
        return mirror_state_partition(mirror, topic_id, partition, self.num_partitions())

    def leader_of(self, state_partition: int) -> int:
        """The broker coordinating ``state_partition``, or -1 when unknown."""
        topic = self._broker.snapshot.topics.get(MIRROR_STATE_TOPIC)
        if topic is None or state_partition >= len(topic.partitions):
            return -1
        return int(topic.partitions[state_partition].leader)

    async def ensure_created(self) -> None:
        if self.exists:
            return
        live = max(1, len(self._broker.live_brokers()))
        replication = min(int(self._broker.config("mirror.topic.replication.factor")), live)
        try:
            await self._broker.controller.create_topic(
                MIRROR_STATE_TOPIC,
                num_partitions=int(self._broker.config("mirror.topic.num.partitions")),
                replication_factor=replication,
                configs=STATE_TOPIC_CONFIGS,
            )
        except KafkaError as exc:
            if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise
            await self._broker.refresh_metadata()

    def _hosts_as_leader(self, index: int) -> bool:
        """Whether the replica manager hosts the state partition as its leader (asked per
        named partition: the broker may host 100,000 others)."""
        try:
            return self._broker.replica_manager.partition(MIRROR_STATE_TOPIC, index).is_leader
        except KafkaError:
            return False

    def on_metadata_change(self) -> None:
        """Load the partitions this broker now leads; forget those it no longer leads.

        A partition counts as led only when the snapshot names this broker its leader and
        the replica manager already hosts it as leader: a broker that restarts fenced sees
        its leaderships in the snapshot before it applies them."""
        topic = self._broker.snapshot.topics.get(MIRROR_STATE_TOPIC)
        named = set()
        if topic is not None:
            named = {p.partition for p in topic.partitions if p.leader == self._broker.broker_id}
        led = {index for index in named if self._hosts_as_leader(index)}
        for index in list(self._stores):
            if index not in led:
                del self._stores[index]
        for index in sorted(led - set(self._stores)):
            started = time.monotonic()
            self._stores[index] = MirrorStateStore.replayed(self._replay(index))
            log.info(
                "broker %d loaded %s-%d in %.3fs",
                self._broker.broker_id,
                MIRROR_STATE_TOPIC,
                index,
                time.monotonic() - started,
            )

    def _replay(self, index: int) -> Iterable[tuple[bytes, bytes | None]]:
        partition = self._broker.replica_manager.partition(MIRROR_STATE_TOPIC, index)
        for batch in partition.log.batches():
            if batch.is_control:
                continue
            for record in decode_records(batch):
                if record.key is not None:
                    yield record.key, record.value

    def store(self, index: int) -> MirrorStateStore:
        """The replayed store of a partition this broker leads; else NOT_COORDINATOR."""
        found = self._stores.get(index)
        if found is None:
            raise KafkaError(
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                f"broker {self._broker.broker_id} does not lead {MIRROR_STATE_TOPIC}-{index}",
            )
        return found

    def stores(self) -> dict[int, MirrorStateStore]:
        return dict(self._stores)

    async def append(self, index: int, records: list[MirrorStateRecord]) -> None:
        """Append ``records`` to the partition's log, wait until the ISR has them, then
        apply them to its store. A follower leaves the ISR within
        ``replica.lag.time.max.ms``, so waiting longer than twice that means trouble at the
        leader: REQUEST_TIMED_OUT, and the writer retries."""
        if not records:
            return
        store = self.store(index)
        now = int(time.time() * 1000)
        batch = build_batch(
            [Record(offset, now, r.key, r.value) for offset, r in enumerate(records)]
        )
        await self._broker.replica_manager.append_internal_replicated(
            MIRROR_STATE_TOPIC,
            index,
            [batch],
            2 * int(self._broker.config("replica.lag.time.max.ms")),
        )
        for record in records:
            store.apply(record)
