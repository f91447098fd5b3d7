"""Group offsets synced by timestamp: spec 003's MirrorGroupOffsetConnector, one pass.

For each committed upstream offset, the record at that offset is read from the source
(a consumer fetching as little as it can, ``max.partition.fetch.bytes=1``) for its
timestamp; the target's ListOffsets for that timestamp gives the earliest replicated
record at or after it; ``translate_by_timestamp`` decides whether to commit. No offset
syncs are involved, so how far the group lags does not change the error: only records
sharing the timestamp are re-read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import TracebackType

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition as AioTopicPartition

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import OffsetAndMetadata, TopicPartition
from mirrorsim.compare.mm2_records import Checkpoint
from mirrorsim.compare.timestamp_translation import translate_by_timestamp

FETCH_TIMEOUT_MS = 200
FETCH_ATTEMPTS = 50
NO_OFFSET = -1
"""ListOffsets' answer when no record has a timestamp at or after the one asked for."""


class TimestampGroupOffsetSync:
    """Translates and commits one group's offsets on the target by record timestamps."""

    def __init__(
        self, source_bootstrap: str, target_bootstrap: str, remote_topic: Callable[[str], str]
    ) -> None:
        self._target_bootstrap = target_bootstrap
        self._remote_topic = remote_topic
        self._reader = AIOKafkaConsumer(
            bootstrap_servers=source_bootstrap,
            enable_auto_commit=False,
            max_partition_fetch_bytes=1,
        )

    async def __aenter__(self) -> TimestampGroupOffsetSync:
        await self._reader.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._reader.stop()

    async def source_timestamp(self, tp: TopicPartition, offset: int) -> int | None:
        """The timestamp of the source record at ``offset``; None when there is none (not
        produced yet, deleted or compacted away): translation waits for a later pass."""
        atp = AioTopicPartition(tp.topic, tp.partition)
        self._reader.assign([atp])
        if offset >= (await self._reader.end_offsets([atp]))[atp]:
            return None
        self._reader.seek(atp, offset)
        for _ in range(FETCH_ATTEMPTS):
            fetched = await self._reader.getmany(atp, timeout_ms=FETCH_TIMEOUT_MS, max_records=1)
            for record in fetched.get(atp, []):
                return record.timestamp if record.offset == offset else None
        return None

    async def sync_group(
        self, group: str, committed: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> list[Checkpoint]:
        """Translate every committed upstream offset and commit those that move the target
        group forward; returns the translations committed."""
        timestamps = {tp: await self.source_timestamp(tp, o.offset) for tp, o in committed.items()}
        remote = {
            tp: TopicPartition(self._remote_topic(tp.topic), tp.partition) for tp in committed
        }
        async with Admin(bootstrap=self._target_bootstrap) as admin:
            asked = {remote[tp]: ts for tp, ts in timestamps.items() if ts is not None}
            answers = await admin.list_offsets(asked) if asked else {}
            current = await admin.list_consumer_group_offsets(group)
            translated: list[Checkpoint] = []
            for tp, offset in sorted(committed.items()):
                answer = answers.get(remote[tp])
                target_offset = (
                    None if answer is None or answer.offset == NO_OFFSET else answer.offset
                )
                previous = current.get(remote[tp])
                downstream = translate_by_timestamp(
                    timestamps[tp], target_offset, previous.offset if previous else None
                )
                if downstream is not None:
                    translated.append(
                        Checkpoint(group, remote[tp].topic, tp.partition, offset.offset, downstream)
                    )
            if translated:
                forward = {
                    TopicPartition(c.topic, c.partition): OffsetAndMetadata(c.downstream_offset)
                    for c in translated
                }
                (await admin.alter_consumer_group_offsets(group, forward)).all()
        return translated
