"""What a consumer group sees on the destination after a failover, per copy mode.

Records are identified by content (each value is unique), so the same question has one
answer whatever the mode did to offsets: at which target offset is the first record the
group had not consumed on the source, and where does the group actually resume?
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition as AioTopicPartition

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import TopicPartition
from mirrorsim.compare.kafka_io import consume_until


@dataclass(frozen=True, slots=True)
class PartitionOutcome:
    partition: int
    source_committed: int
    expected_target_offset: int
    resume_offset: int

    @property
    def reprocessed(self) -> int:
        return max(0, self.expected_target_offset - self.resume_offset)

    @property
    def skipped(self) -> int:
        return max(0, self.resume_offset - self.expected_target_offset)


@dataclass(frozen=True, slots=True)
class TranslationOutcome:
    """Where one group offset translation would resume the group, and what that costs."""

    method: str
    resume_offsets: list[int]
    reprocessed: int
    skipped: int
    committed: bool
    """Whether this translation is the one the group was committed with."""


@dataclass(slots=True)
class ModeOutcome:
    mode: str
    target_topic: str
    partitions: list[PartitionOutcome] = field(default_factory=list)
    offsets_preserved: bool = False
    topic_name_preserved: bool = False
    topic_id_preserved: bool = False
    records_copied: int = 0
    missing_records: int = 0
    replicate_seconds: float = 0.0
    failover_seconds: float = 0.0
    recompression_cpu_seconds: float = 0.0
    failback_bytes: int = 0
    failback_basis: str = ""
    translations: list[TranslationOutcome] = field(default_factory=list)

    @property
    def reprocessed(self) -> int:
        return sum(p.reprocessed for p in self.partitions)

    @property
    def skipped(self) -> int:
        return sum(p.skipped for p in self.partitions)


async def read_offsets_by_value(
    bootstrap: str, topic: str, partitions: int
) -> list[dict[bytes, int]]:
    """Per partition: record value → offset, read from the log start to the end."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [AioTopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        found: list[dict[bytes, int]] = [{} for _ in tps]
        async for tp, records in consume_until(consumer, ends, timeout_s=60):
            found[tp.partition].update((r.value, r.offset) for r in records if r.value)
        return found
    finally:
        await consumer.stop()


async def resume_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    """Where the group starts on each partition: its committed offset, or the log start
    (``auto.offset.reset=earliest``, the no-data-loss choice) when it has none."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    async with Admin(bootstrap=bootstrap) as admin:
        committed = await admin.list_consumer_group_offsets(group)
        earliest = await admin.list_offsets({tp: -2 for tp in tps})
    return [committed[tp].offset if tp in committed else earliest[tp].offset for tp in tps]


async def topic_id(bootstrap: str, topic: str) -> object:
    async with Admin(bootstrap=bootstrap) as admin:
        return (await admin.describe_topics([topic]))[topic].topic_id
