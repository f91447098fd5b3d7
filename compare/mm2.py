"""An MM2-style replicator: MirrorSourceConnector + MirrorCheckpointConnector + heartbeats.

It works the way KIP-382's MirrorMaker 2 does, so the comparison shows MM2's real costs:

- Records are consumed and re-produced one by one: the worker's consumer decompresses
  every batch and its producer builds and compresses new ones. Target offsets are
  whatever the target log assigns; timestamps are kept (``preserve_timestamps``) or the
  producer's clock is used.
- Topics are renamed ``<source alias>.<topic>`` (DefaultReplicationPolicy) on the target,
  and a topic that already passed through the target cluster is never copied (cycles are
  detected by name). Heartbeats topics (``heartbeats``, ``a.heartbeats``, …) are copied
  whatever ``topics`` says, as MirrorSourceConnector's ``shouldReplicateTopic`` does, so a
  chain A→B→C carries ``b.a.heartbeats`` to C and hops can be counted from the names
  (``compare/mirror_client.py``).
- The source side publishes offset syncs (every ``offset.lag.max + 1`` records, on jumps,
  and at each offset commit for the last record, see ``OffsetSyncEmitter``) to
  ``mm2-offset-syncs.<target>.internal`` on the source cluster (MM2's default location).
- The checkpoint side reads those syncs into a 64-entry cache per partition, translates
  each consumer group's committed offsets, writes checkpoints to
  ``<source>.checkpoints.internal`` on the target and (``sync.group.offsets.enabled``)
  commits them to the same group on the target, never moving a group backwards.
- With ``offset_translation="timestamp"`` the groups are committed by spec 003's
  MirrorGroupOffsetConnector instead (``compare/timestamp_sync.py``); checkpoints are
  still written, so both translations of one pass can be compared.
- Every replication pass first emits two heartbeats, as MM2's driver does for a flow A→B:
  the flow's MirrorHeartbeatConnector writes Heartbeat(A, B) to B's ``heartbeats``, and
  the heartbeat-only flow B→A that MM2 runs beside it writes Heartbeat(B, A) to A's,
  which this flow then replicates to B as ``a.heartbeats``. A pass stands for one
  ``emit.heartbeats.interval.seconds``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, get_args

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord
from aiokafka.structs import TopicPartition as AioTopicPartition

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import OffsetAndMetadata, TopicPartition
from mirrorsim.compare.kafka_io import (
    consume_until,
    create_topics_if_missing,
    matching_topics,
    partitions_of,
)
from mirrorsim.compare.mm2_records import (
    Checkpoint,
    checkpoint_record,
    decode_offset_sync,
    heartbeat_record,
    offset_sync_record,
)
from mirrorsim.compare.offset_sync import (
    UNTRANSLATABLE,
    OffsetSync,
    OffsetSyncCache,
    OffsetSyncEmitter,
    translate_downstream,
)
from mirrorsim.compare.replication_policy import HEARTBEATS_TOPIC, ReplicationPolicy
from mirrorsim.compare.timestamp_sync import TimestampGroupOffsetSync

OffsetTranslation = Literal["offset-sync", "timestamp"]
OFFSET_TRANSLATIONS: tuple[str, ...] = get_args(OffsetTranslation)


@dataclass(frozen=True, slots=True)
class MM2Config:
    """MM2's settings under their own names where one exists (``topics``, ``groups``,
    ``offset.lag.max``, ``sync.group.offsets.enabled``); ``offset_translation`` picks the
    connector that commits group offsets on the target: MirrorCheckpointConnector
    (offset syncs) or spec 003's MirrorGroupOffsetConnector (timestamps)."""

    source_alias: str
    target_alias: str
    source_bootstrap: str
    target_bootstrap: str
    topics: str = ".*"
    groups: str = ".*"
    offset_lag_max: int = 100
    sync_group_offsets_enabled: bool = True
    offset_translation: OffsetTranslation = "offset-sync"
    preserve_timestamps: bool = True
    compression_type: str = "lz4"
    policy: ReplicationPolicy = field(default_factory=ReplicationPolicy)


@dataclass(slots=True)
class ReplicationStats:
    records: int = 0
    record_bytes: int = 0
    offset_syncs: int = 0
    heartbeats: int = 0
    heartbeats_replicated: int = 0
    checkpoints: int = 0


@dataclass(slots=True)
class GroupOffsetsPass:
    """One checkpoint pass: the offset-sync translations (written as checkpoints) and, in
    timestamp mode, the translations committed by timestamp."""

    checkpoints: list[Checkpoint]
    committed_by_timestamp: list[Checkpoint] = field(default_factory=list)


class MM2Replicator:
    def __init__(self, config: MM2Config) -> None:
        self.config = config
        self.stats = ReplicationStats()
        self._topics: dict[str, int] = {}
        self._emitters: dict[tuple[str, int], OffsetSyncEmitter] = {}
        self._caches: dict[tuple[str, int], OffsetSyncCache] = {}
        self._replicated_end: dict[tuple[str, int], int] = {}
        self._consumer: AIOKafkaConsumer | None = None
        self._target_producer: AIOKafkaProducer | None = None
        self._source_producer: AIOKafkaProducer | None = None
        self._sync_reader: AIOKafkaConsumer | None = None

    @property
    def offset_syncs_topic(self) -> str:
        return self.config.policy.offset_syncs_topic(self.config.target_alias)

    @property
    def checkpoints_topic(self) -> str:
        return self.config.policy.checkpoints_topic(self.config.source_alias)

    def remote_topic(self, topic: str) -> str:
        return self.config.policy.format_remote_topic(self.config.source_alias, topic)

    async def __aenter__(self) -> MM2Replicator:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Discover the source topics, create their remote copies and the internal topics."""
        cfg = self.config
        await create_topics_if_missing(
            cfg.source_bootstrap, {self.offset_syncs_topic: 1, HEARTBEATS_TOPIC: 1}
        )
        async with Admin(bootstrap=cfg.source_bootstrap) as admin:
            found = await matching_topics(admin, ".*")
        self._topics = {t: n for t, n in found.items() if self._should_replicate(t)}
        await create_topics_if_missing(
            cfg.target_bootstrap,
            {
                **{self.remote_topic(t): n for t, n in self._topics.items()},
                HEARTBEATS_TOPIC: 1,
                self.checkpoints_topic: 1,
            },
        )
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=cfg.source_bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        self._sync_reader = AIOKafkaConsumer(
            bootstrap_servers=cfg.source_bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        self._target_producer = AIOKafkaProducer(
            bootstrap_servers=cfg.target_bootstrap,
            compression_type=cfg.compression_type,
            acks="all",
            linger_ms=5,
        )
        self._source_producer = AIOKafkaProducer(bootstrap_servers=cfg.source_bootstrap, acks="all")
        for client in (
            self._consumer,
            self._sync_reader,
            self._target_producer,
            self._source_producer,
        ):
            await client.start()
        self._consumer.assign(list(partitions_of(self._topics)))
        self._sync_reader.assign([AioTopicPartition(self.offset_syncs_topic, 0)])

    def _should_replicate(self, topic: str) -> bool:
        """MirrorSourceConnector.shouldReplicateTopic: matched by ``topics`` or a heartbeats
        topic, and neither internal nor already through the target cluster."""
        policy = self.config.policy
        wanted = re.fullmatch(self.config.topics, topic) or policy.is_heartbeats_topic(topic)
        return (
            bool(wanted)
            and not policy.is_internal(topic)
            and not policy.is_cycle(topic, self.config.target_alias)
        )

    async def stop(self) -> None:
        for client in (
            self._consumer,
            self._sync_reader,
            self._target_producer,
            self._source_producer,
        ):
            if client is not None:
                await client.stop()

    async def replicate_until_caught_up(self, timeout_s: float = 120.0) -> ReplicationStats:
        """Emit this pass's heartbeats, then copy every record produced so far (heartbeats
        included) and publish the due offset syncs; the pass ends with the task's offset
        commit, which publishes the syncs held back."""
        assert self._consumer is not None and self._target_producer is not None
        assert self._source_producer is not None
        await self._emit_heartbeats()
        end_offsets = await self._consumer.end_offsets(list(self._consumer.assignment()))
        async for tp, records in consume_until(self._consumer, end_offsets, timeout_s):
            await self._copy(tp, records)
            self._replicated_end[(tp.topic, tp.partition)] = records[-1].offset + 1
        await self._target_producer.flush()
        for (topic, partition), emitter in sorted(self._emitters.items()):
            delayed = emitter.promote_delayed()
            if delayed is not None:
                await self._publish_sync(topic, partition, delayed)
        await self._source_producer.flush()
        return self.stats

    async def _publish_sync(self, topic: str, partition: int, sync: OffsetSync) -> None:
        assert self._source_producer is not None
        key, value = offset_sync_record(topic, partition, sync)
        await self._source_producer.send(self.offset_syncs_topic, value, key=key)
        self.stats.offset_syncs += 1

    async def _emit_heartbeats(self) -> None:
        assert self._target_producer is not None and self._source_producer is not None
        source, target = self.config.source_alias, self.config.target_alias
        now_ms = int(time.time() * 1000)
        key, value = heartbeat_record(source, target, now_ms)
        await self._target_producer.send_and_wait(HEARTBEATS_TOPIC, value, key=key)
        key, value = heartbeat_record(target, source, now_ms)
        await self._source_producer.send_and_wait(HEARTBEATS_TOPIC, value, key=key)
        self.stats.heartbeats += 2

    async def _copy(self, tp: AioTopicPartition, records: list[ConsumerRecord]) -> None:
        assert self._target_producer is not None and self._source_producer is not None
        remote = self.remote_topic(tp.topic)
        sends = [
            await self._target_producer.send(
                remote,
                r.value,
                key=r.key,
                partition=tp.partition,
                timestamp_ms=r.timestamp if self.config.preserve_timestamps else None,
                headers=list(r.headers),
            )
            for r in records
        ]
        emitter = self._emitters.setdefault(
            (tp.topic, tp.partition), OffsetSyncEmitter(self.config.offset_lag_max)
        )
        for record, sent in zip(records, sends, strict=True):
            metadata = await sent
            if self.config.policy.is_heartbeats_topic(tp.topic):
                self.stats.heartbeats_replicated += 1
            else:
                self.stats.records += 1
                self.stats.record_bytes += len(record.key or b"") + len(record.value or b"")
            sync = emitter.update(record.offset, metadata.offset)
            if sync is not None:
                await self._publish_sync(tp.topic, tp.partition, sync)

    async def _read_offset_syncs(self) -> None:
        """Feed the caches with the syncs published since the last read (MM2's checkpoint
        task consumes the offset-syncs topic; it never sees the source task's memory)."""
        assert self._sync_reader is not None
        tp = AioTopicPartition(self.offset_syncs_topic, 0)
        end = (await self._sync_reader.end_offsets([tp]))[tp]
        async for _, records in consume_until(self._sync_reader, {tp: end}, timeout_s=30):
            for record in records:
                topic, partition, sync = decode_offset_sync(record.key, record.value)
                cache = self._caches.setdefault((topic, partition), OffsetSyncCache())
                cache.update(sync)

    def translate(self, topic: str, partition: int, upstream_offset: int) -> int:
        cache = self._caches.get((topic, partition))
        if cache is None:
            return UNTRANSLATABLE
        return translate_downstream(
            cache.syncs,
            upstream_offset,
            upstream_log_end=self._replicated_end.get((topic, partition)),
        )

    async def emit_checkpoints(self) -> GroupOffsetsPass:
        """Translate every matching group's offsets; write checkpoints; sync the groups
        with the configured translation."""
        assert self._target_producer is not None
        await self._read_offset_syncs()
        pattern = re.compile(self.config.groups)
        committed_by_group: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        async with Admin(bootstrap=self.config.source_bootstrap) as admin:
            groups = [g.group_id for g in await admin.list_consumer_groups()]
            for group in sorted(g for g in groups if pattern.fullmatch(g)):
                committed = await admin.list_consumer_group_offsets(group)
                committed_by_group[group] = {
                    tp: o for tp, o in committed.items() if tp.topic in self._topics
                }
        checkpoints = [
            c
            for g, committed in committed_by_group.items()
            for c in self._checkpoints_for(g, committed)
        ]
        for checkpoint in checkpoints:
            key, value = checkpoint_record(checkpoint)
            await self._target_producer.send(self.checkpoints_topic, value, key=key)
        await self._target_producer.flush()
        self.stats.checkpoints += len(checkpoints)
        result = GroupOffsetsPass(checkpoints)
        if not self.config.sync_group_offsets_enabled:
            return result
        if self.config.offset_translation == "offset-sync":
            await self._sync_group_offsets(checkpoints)
            return result
        async with TimestampGroupOffsetSync(
            self.config.source_bootstrap, self.config.target_bootstrap, self.remote_topic
        ) as by_timestamp:
            for group, committed in committed_by_group.items():
                result.committed_by_timestamp += await by_timestamp.sync_group(group, committed)
        return result

    def _checkpoints_for(
        self, group: str, committed: dict[TopicPartition, OffsetAndMetadata]
    ) -> list[Checkpoint]:
        checkpoints = []
        for tp, offset in sorted(committed.items()):
            if tp.topic not in self._topics:
                continue
            downstream = self.translate(tp.topic, tp.partition, offset.offset)
            if downstream == UNTRANSLATABLE:
                continue
            checkpoints.append(
                Checkpoint(
                    group,
                    self.remote_topic(tp.topic),
                    tp.partition,
                    offset.offset,
                    downstream,
                    offset.metadata,
                )
            )
        return checkpoints

    async def _sync_group_offsets(self, checkpoints: list[Checkpoint]) -> None:
        by_group: dict[str, list[Checkpoint]] = {}
        for checkpoint in checkpoints:
            by_group.setdefault(checkpoint.group, []).append(checkpoint)
        async with Admin(bootstrap=self.config.target_bootstrap) as admin:
            for group, group_checkpoints in by_group.items():
                current = await admin.list_consumer_group_offsets(group)
                forward = {
                    TopicPartition(c.topic, c.partition): OffsetAndMetadata(c.downstream_offset)
                    for c in group_checkpoints
                    if c.downstream_offset
                    >= current.get(
                        TopicPartition(c.topic, c.partition), OffsetAndMetadata(0)
                    ).offset
                }
                if forward:
                    (await admin.alter_consumer_group_offsets(group, forward)).all()
