"""Read one offset range of a partition from its leader as raw batches, like a consumer.

Consumer Fetch requests (replica id -1, no fetch session, no leader epoch fencing) go to
the partition leader; the batches come back exactly as the leader stores them, so their
fingerprints are comparable with the segment files of any replica of either cluster.

Two properties of Fetch shape the loop: the answer may begin with a batch that starts
below the fetch offset (the one holding it), and it may end in a partial batch cut by
the byte limit. The first is left for the caller to judge (it may own the batch), the
second is dropped and fetched again from its base offset; a single batch larger than the
limit doubles the limit until it fits. Leadership changes are retried after a metadata
refresh; a fetch offset that retention moved below the log start offset continues at the
new log start, since those records are gone on this side.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator, Mapping

from mirrorsim.client import Admin, RequestSpec
from mirrorsim.client.admin_types import IsolationLevel, OffsetSpec, TopicPartition
from mirrorsim.client.cluster import versions_we_have
from mirrorsim.client.errors import raise_for_error
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.records import RawBatch, iter_batches
from mirrorsim.verify.live_partitions import CLIENT_ID, OffsetRange

FETCH_KEY = 1
TOPIC_IDS_VERSION = 13
PARTITION_MAX_BYTES = 4 * 1024 * 1024


class RangeFetcher:
    """Fetches the batches of one ``OffsetRange`` chunk by chunk through an ``Admin``."""

    def __init__(
        self, admin: Admin, offset_range: OffsetRange, isolation_level: IsolationLevel
    ) -> None:
        self.admin = admin
        self.range = offset_range
        self.isolation_level = isolation_level
        self.position = offset_range.start
        self.max_bytes = PARTITION_MAX_BYTES

    @property
    def done(self) -> bool:
        return self.position >= self.range.end

    async def next_batches(self) -> list[RawBatch]:
        """The next complete batches that hold an offset at or past the position and begin
        below the range end; empty once the range is read (or the log ends earlier)."""
        while not self.done:
            try:
                records = await self._fetch()
            except KafkaError as error:
                if error.code != ErrorCode.OFFSET_OUT_OF_RANGE:
                    raise
                await self._skip_to_log_start(error)
                continue
            batches = [b for b in iter_batches(records) if b.last_offset >= self.position]
            if not batches:
                if not records:
                    self.position = self.range.end
                    return []
                self.max_bytes *= 2
                continue
            # A batch beginning at or past the range end also moves the position past it.
            self.position = batches[-1].last_offset + 1
            return [b for b in batches if b.base_offset < self.range.end]
        return []

    async def _fetch(self) -> bytes:
        cluster = self.admin.cluster
        topic, partition = self.range.topic, self.range.partition

        async def attempt() -> bytes:
            if cluster.leader_for(topic, partition) is None:
                await cluster.refresh_metadata([topic])
            leader = cluster.leader_for(topic, partition)
            if leader is None:
                raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition}")
            response = await cluster.send_to_node(leader, self._spec())
            raise_for_error(response.error_code)
            data = response.responses[0].partitions[0]
            raise_for_error(data.error_code, f"{topic}-{partition} at {self.position}")
            return bytes(data.records or b"")

        return await cluster.retrying(attempt)

    def _spec(self) -> RequestSpec:
        topic_id = self.admin.cluster.topic_id(self.range.topic)
        versions = versions_we_have(FETCH_KEY)
        if topic_id is None:
            versions = tuple(v for v in versions if v < TOPIC_IDS_VERSION)
        return RequestSpec(
            FETCH_KEY,
            {
                "replica_id": -1,
                "max_wait": datetime.timedelta(0),
                "min_bytes": 1,
                "max_bytes": self.max_bytes,
                "isolation_level": self.isolation_level,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": self.range.topic,
                        "topic_id": topic_id,
                        "partitions": [
                            {
                                "partition": self.range.partition,
                                "current_leader_epoch": -1,
                                "fetch_offset": self.position,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": self.max_bytes,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
            versions=versions,
        )

    async def _skip_to_log_start(self, error: KafkaError) -> None:
        tp = TopicPartition(self.range.topic, self.range.partition)
        found = await self.admin.list_offsets(
            {tp: OffsetSpec.EARLIEST}, isolation_level=self.isolation_level
        )
        log_start = found[tp].offset
        if log_start <= self.position:
            raise error
        self.position = log_start


def fetch_range(
    bootstrap: str,
    offset_range: OffsetRange,
    *,
    config: Mapping[str, str],
    isolation_level: IsolationLevel,
) -> Iterator[RawBatch]:
    """The batches of ``offset_range``, streamed from a client of its own.

    Spark calls a reader from plain threads, so this runs its own event loop and hands
    batches over one fetch at a time instead of loading the whole range first.
    """
    with asyncio.Runner() as runner:
        admin = Admin(bootstrap, config=config, client_id=CLIENT_ID)
        runner.run(admin.start())
        try:
            fetcher = RangeFetcher(admin, offset_range, isolation_level)
            while not fetcher.done:
                yield from runner.run(fetcher.next_batches())
        finally:
            runner.run(admin.close())


def owned(batch: RawBatch, offset_range: OffsetRange) -> bool:
    """Whether ``batch`` is this range's row in the batch view (see ``OffsetRange``)."""
    if batch.base_offset >= offset_range.end:
        return False
    if offset_range.overlapping:
        return batch.last_offset >= offset_range.start
    return batch.base_offset >= offset_range.start
