"""Legacy MirrorMaker (KIP-3): consume → produce → flush → commit, with no data loss.

The consumer never auto-commits; after each fetched chunk is handed to the producer, the
producer is flushed (every send acknowledged by all in-sync replicas) and only then are
the consumed offsets committed to the source cluster under the mirror's own group. A
crash anywhere in the loop therefore re-sends records (duplicates) but never skips one.
Topic names and partitions are kept; offsets, batches and timestamps are not (timestamps
are kept when ``preserve_timestamps``). Consumer group offsets are not copied at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import OffsetAndMetadata as AioOffsetAndMetadata

from mirrorsim.client import Admin
from mirrorsim.compare.kafka_io import (
    consume_until,
    create_topics_if_missing,
    matching_topics,
    partitions_of,
)


@dataclass(frozen=True, slots=True)
class LegacyMirrorMakerConfig:
    source_bootstrap: str
    target_bootstrap: str
    whitelist: str = ".*"
    group_id: str = "mirrormaker"
    compression_type: str = "lz4"
    preserve_timestamps: bool = True


@dataclass(slots=True)
class LegacyStats:
    records: int = 0
    record_bytes: int = 0
    commits: int = 0


class LegacyMirrorMaker:
    def __init__(self, config: LegacyMirrorMakerConfig) -> None:
        self.config = config
        self.stats = LegacyStats()
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None

    async def __aenter__(self) -> LegacyMirrorMaker:
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
        cfg = self.config
        async with Admin(bootstrap=cfg.source_bootstrap) as admin:
            topics = {
                t: n
                for t, n in (await matching_topics(admin, cfg.whitelist)).items()
                if not t.startswith("__")
            }
        await create_topics_if_missing(cfg.target_bootstrap, topics)
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=cfg.source_bootstrap,
            group_id=cfg.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        self._producer = AIOKafkaProducer(
            bootstrap_servers=cfg.target_bootstrap,
            compression_type=cfg.compression_type,
            acks="all",
            linger_ms=5,
        )
        await self._consumer.start()
        await self._producer.start()
        self._consumer.assign(list(partitions_of(topics)))

    async def stop(self) -> None:
        for client in (self._consumer, self._producer):
            if client is not None:
                await client.stop()

    async def mirror_until_caught_up(self, timeout_s: float = 120.0) -> LegacyStats:
        """Run the loop until the mirror's group has committed the source's end offsets."""
        assert self._consumer is not None and self._producer is not None
        end_offsets = await self._consumer.end_offsets(list(self._consumer.assignment()))
        async for tp, records in consume_until(self._consumer, end_offsets, timeout_s):
            for r in records:
                await self._producer.send(
                    tp.topic,
                    r.value,
                    key=r.key,
                    partition=tp.partition,
                    timestamp_ms=r.timestamp if self.config.preserve_timestamps else None,
                    headers=list(r.headers),
                )
                self.stats.records += 1
                self.stats.record_bytes += len(r.key or b"") + len(r.value or b"")
            await self._producer.flush()
            await self._consumer.commit({tp: AioOffsetAndMetadata(records[-1].offset + 1, "")})
            self.stats.commits += 1
        return self.stats
