"""One mirror fetcher: consumer Fetch requests to one source broker for one mirror.

Kafka's ``AbstractFetcherThread.doWork`` as one asyncio task over the pure per-partition
plan of ``mirrorsim.fetcher.plan``: each round asks every partition for its next action
and executes it. Truncations run on the local log, OffsetForLeaderEpoch and ListOffsets
go to the source, and all partitions that want to fetch share one consumer Fetch
(replica id -1, read_committed, so the source keeps no follower state and answers only
up to its LSO) over an incremental fetch session. Each partition's answer goes back
through the plan, which says what to append (the source's batches, unchanged) and what
to do next. A partition that fails goes to FAILED alone; one whose source leader moved
is handed back to the manager, which finds the new leader.

Partitions the broker's mirror replication quota throttles sit out the fetches while the
quota is exceeded (``mirrorsim.fetcher.throttle``), as Kafka's replica fetchers do.

Partitions are added and removed between requests; an answer for a partition removed
meanwhile is dropped, and every await is followed by that check again, so a partition
being stopped never sees an append after its fetcher let go of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from mirrorsim.broker.metrics.mirror import FetcherStats
from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut
from mirrorsim.fetcher.fetch_session import FetchSessionHandler, Key, PartitionRequest
from mirrorsim.fetcher.plan import (
    LEADERSHIP_ERRORS,
    EpochSupport,
    Fail,
    Fetch,
    FetchPhase,
    PartitionFetchState,
    QueryEpochEndOffset,
    QueryOffsetBounds,
    Truncate,
    TruncateFullyAndStartAt,
    Wait,
    fetched_from_wire,
    next_action,
    on_epoch_end_offset,
    on_fetch_response,
    on_offset_bounds,
    on_truncated,
)
from mirrorsim.fetcher.throttle import MirrorReplicationQuota
from mirrorsim.protocol.errors import ErrorCode, KafkaError, error_code_from_wire
from mirrorsim.protocol.records.raw_batch import RawBatch
from mirrorsim.protocol.uuids import ZERO_UUID

log = logging.getLogger(__name__)

FETCH_KEY = 1
LIST_OFFSETS_KEY = 2
OFFSET_FOR_LEADER_EPOCH_KEY = 23
DIVERGING_EPOCH_FETCH_VERSION = 12
MIN_OFFSET_FOR_LEADER_EPOCH_VERSION = 2
READ_COMMITTED = 1
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
PARTITION_MAX_BYTES = 1024 * 1024
# A few MiB per response rather than a consumer's 50 MiB: the response is built, sent,
# received and split in one piece, so a 32 MiB answer costs fresh, page-faulting buffers
# at every copy. 8 MiB (Kafka's replica fetcher allows 10) spends about a tenth less CPU
# per mirrored byte than 4 MiB: each response also reads every partition of the session
# on the source, most of them without room left (measured in docs/performance.md).
FETCH_MAX_BYTES = 8 * 1024 * 1024
BACKOFF_MS = 100
LIST_OFFSETS_TIMEOUT = datetime.timedelta(seconds=30)


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class MirrorPartition:
    topic: str
    partition: int
    topic_id: uuid.UUID
    source_leader_epoch: int
    state: PartitionFetchState | None = None


class MirrorSink(Protocol):
    """The destination side a fetcher writes to (the coordinator implements it)."""

    def local_log(self, topic: str, partition: int) -> Any: ...

    def append(self, topic: str, partition: int, batches: list[RawBatch]) -> None: ...

    def truncate_to(self, topic: str, partition: int, offset: int) -> None: ...

    def restart_at(self, topic: str, partition: int, offset: int) -> None: ...

    def follow_log_start(self, topic: str, partition: int, offset: int) -> None: ...

    def record_source_offsets(self, topic: str, partition: int, high_watermark: int) -> None: ...

    def partition_failed(self, topic: str, partition: int, reason: str) -> None: ...

    def relocate(self, topic: str, partition: int) -> None: ...


class MirrorFetcherTask:
    def __init__(
        self,
        *,
        client: ClusterClient,
        source_broker: int,
        sink: MirrorSink,
        max_wait_ms: Callable[[], int],
        stats: FetcherStats,
        quota: MirrorReplicationQuota,
    ) -> None:
        self.client = client
        self._quota = quota
        self.source_broker = source_broker
        self._sink = sink
        self._stats = stats
        self._max_wait_ms = max_wait_ms
        self.partitions: dict[Key, MirrorPartition] = {}
        self._session = FetchSessionHandler()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self._task = asyncio.create_task(
            self._run(), name=f"mirror fetcher {self.client.client_id}"
        )

    async def stop(self) -> None:
        """Stop the loop for good, even if one cancellation is lost inside a library await.

        The flag ends the loop at its next turn; cancelling again until the task is done
        covers a cancellation swallowed by an await that was completing at that instant.
        """
        self._stopping = True
        self._wakeup.set()
        task, self._task = self._task, None
        while task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)
        await self.client.close()

    @property
    def dead(self) -> bool:
        """The loop ended with an exception (Kafka's dead fetcher thread)."""
        task = self._task
        return (
            task is not None
            and task.done()
            and not task.cancelled()
            and task.exception() is not None
        )

    def add(self, mirror_partition: MirrorPartition) -> None:
        self.partitions[(mirror_partition.topic, mirror_partition.partition)] = mirror_partition
        self._wakeup.set()

    def remove(self, key: Key) -> None:
        self.partitions.pop(key, None)

    async def _run(self) -> None:
        while not self._stopping:
            if not self.partitions:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            try:
                await self._do_work()
            except (KafkaConnectionError, RequestTimedOut, KafkaError) as exc:
                log.warning("%s: fetch failed: %s", self.client.client_id, exc)
                self._session.reset()
                await self._idle(_now_ms() + BACKOFF_MS)
                if isinstance(exc, KafkaConnectionError | RequestTimedOut):
                    self._relocate_all()

    def _relocate_all(self) -> None:
        """The source broker is unreachable: it may have lost leadership while down, so
        every partition goes back to be placed at the leader the source metadata names."""
        for topic, partition in list(self.partitions):
            self.remove((topic, partition))
            self._sink.relocate(topic, partition)

    async def _idle(self, until_ms: int) -> None:
        """Back off until ``until_ms``, or until a partition is added."""
        self._wakeup.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0, until_ms - _now_ms()) / 1000):
                await self._wakeup.wait()

    async def _epoch_support(self) -> EpochSupport:
        connection = await self.client.connection(self.source_broker)
        fetch = connection.api_versions.get(FETCH_KEY, (0, -1))
        if fetch[1] >= DIVERGING_EPOCH_FETCH_VERSION:
            return EpochSupport.DIVERGING_EPOCH
        epochs = connection.api_versions.get(OFFSET_FOR_LEADER_EPOCH_KEY, (0, -1))
        if epochs[1] >= MIN_OFFSET_FOR_LEADER_EPOCH_VERSION:
            return EpochSupport.OFFSET_FOR_LEADER_EPOCH
        return EpochSupport.NONE

    async def _do_work(self) -> None:
        """One round: run every partition's next action; fetch for those that want to."""
        support = await self._epoch_support()
        fetches: dict[Key, Fetch] = {}
        waits: list[int] = []
        for key in list(self.partitions):
            mp = self.partitions.get(key)
            if mp is None:
                continue
            if mp.state is None:
                partition_log = self._sink.local_log(*key)
                mp.state = PartitionFetchState.initial(
                    log_end_offset=partition_log.log_end_offset,
                    latest_epoch=partition_log.latest_epoch,
                    current_leader_epoch=mp.source_leader_epoch,
                    epoch_support=support,
                )
            action = next_action(mp.state, _now_ms())
            if isinstance(action, Fetch):
                fetches[key] = action
            elif isinstance(action, Wait):
                waits.append(action.until_ms)
            else:
                await self._execute(mp, action)
        throttled = {key for key in fetches if self._quota.is_throttled(*key)}
        if throttled and self._quota.exceeded():
            for key in throttled:
                del fetches[key]
            throttled = set()
            waits.append(_now_ms() + self._quota.delay_ms())
        if fetches:
            await self._fetch(fetches, throttled)
        elif waits:
            await self._idle(min(waits))

    async def _execute(self, mp: MirrorPartition, action: Any) -> None:
        key = (mp.topic, mp.partition)
        if isinstance(action, Fail):
            self._fail(mp, action.reason)
        elif isinstance(action, Truncate | TruncateFullyAndStartAt):
            if isinstance(action, Truncate):
                self._sink.truncate_to(mp.topic, mp.partition, action.offset)
            else:
                self._sink.restart_at(mp.topic, mp.partition, action.offset)
            partition_log = self._sink.local_log(*key)
            assert mp.state is not None
            mp.state = on_truncated(
                mp.state,
                log_end_offset=partition_log.log_end_offset,
                latest_epoch=partition_log.latest_epoch,
            )
        elif isinstance(action, QueryEpochEndOffset):
            error, epoch, end_offset = await self._epoch_end_offset(mp, action)
            if key not in self.partitions or mp.state is None:
                return
            partition_log = self._sink.local_log(*key)
            mp.state = on_epoch_end_offset(
                mp.state,
                error=error,
                source_epoch=epoch,
                source_end_offset=end_offset,
                epoch_entries=partition_log.epoch_cache.epoch_entries,
                log_end_offset=partition_log.log_end_offset,
                now_ms=_now_ms(),
                backoff_ms=BACKOFF_MS,
            )
        elif isinstance(action, QueryOffsetBounds):
            earliest = await self._list_offset(mp, EARLIEST_TIMESTAMP)
            latest = await self._list_offset(mp, LATEST_TIMESTAMP)
            if key in self.partitions and mp.state is not None:
                mp.state = on_offset_bounds(
                    mp.state, source_log_start_offset=earliest, source_end_offset=latest
                )

    def _fail(self, mp: MirrorPartition, reason: str) -> None:
        self.remove((mp.topic, mp.partition))
        self._sink.partition_failed(mp.topic, mp.partition, reason)

    async def _fetch(self, fetches: dict[Key, Fetch], throttled: set[Key]) -> None:
        """One Fetch for ``fetches``; the ``throttled`` among them size it and count
        against the mirror replication quota."""
        request = self._session.build(
            {
                key: PartitionRequest(f.offset, f.current_leader_epoch, f.last_fetched_epoch)
                for key, f in fetches.items()
            }
        )
        max_bytes = self._quota.fetch_bytes(FETCH_MAX_BYTES) if throttled else FETCH_MAX_BYTES
        ids = {
            key: mp.topic_id if (mp := self.partitions.get(key)) else self._forgotten_id(key)
            for key in (*request.partitions, *request.forgotten)
        }
        spec = RequestSpec(
            FETCH_KEY,
            {
                "replica_id": -1,
                "max_wait": datetime.timedelta(milliseconds=self._max_wait_ms()),
                "min_bytes": 1,
                "max_bytes": max_bytes,
                "isolation_level": READ_COMMITTED,
                "session_id": request.session_id,
                "session_epoch": request.epoch,
                "topics": _by_topic(
                    request.partitions.items(),
                    ids,
                    lambda key, r: {
                        "partition": key[1],
                        "current_leader_epoch": r.current_leader_epoch,
                        "fetch_offset": r.fetch_offset,
                        "last_fetched_epoch": r.last_fetched_epoch,
                        "log_start_offset": -1,
                        "partition_max_bytes": min(PARTITION_MAX_BYTES, max_bytes)
                        if key in throttled
                        else PARTITION_MAX_BYTES,
                    },
                ),
                "forgotten_topics_data": [
                    {"topic": topic, "topic_id": topic_id, "partitions": parts}
                    for (topic, topic_id), parts in _group(request.forgotten, ids).items()
                ],
                "rack_id": "",
            },
        )
        response = await self.client.send_to_node_once(self.source_broker, spec)
        error = error_code_from_wire(response.error_code)
        self._session.handle_response(error, response.session_id)
        appended = throttled_bytes = 0
        if error == ErrorCode.NONE:
            names = {mp.topic_id: mp.topic for mp in self.partitions.values()}
            for topic_response in response.responses:
                topic = getattr(topic_response, "topic", None) or names.get(topic_response.topic_id)
                for data in topic_response.partitions if topic else ():
                    key = (topic, int(data.partition_index))
                    size = self._apply(*key, data)
                    appended += size
                    throttled_bytes += size if key in throttled else 0
        self._quota.record(throttled_bytes)
        source = self.client.brokers.get(self.source_broker)
        self._stats.record_fetch(
            broker_host=source.host if source is not None else "",
            broker_port=source.port if source is not None else -1,
            size=appended,
            partitions=fetches,
        )

    def _forgotten_id(self, key: Key) -> uuid.UUID:
        return self._sink.local_log(*key).topic_id or ZERO_UUID

    def _apply(self, topic: str, partition: int, data: Any) -> int:
        """Take one partition's answer; the bytes appended to the local log."""
        key = (topic, partition)
        mp = self.partitions.get(key)
        if mp is None or mp.state is None:
            return 0
        error = error_code_from_wire(data.error_code)
        if error in LEADERSHIP_ERRORS:
            self.remove(key)
            self._sink.relocate(topic, partition)
            return 0
        partition_log = self._sink.local_log(*key)
        outcome = on_fetch_response(
            mp.state,
            fetched_from_wire(data),
            epoch_entries=partition_log.epoch_cache.epoch_entries,
            log_end_offset=partition_log.log_end_offset,
            now_ms=_now_ms(),
            backoff_ms=BACKOFF_MS,
        )
        if outcome.append:
            try:
                self._sink.append(topic, partition, list(outcome.append))
            except KafkaError as exc:
                self._fail(mp, str(exc))
                return 0
        mp.state = outcome.state
        if outcome.source_log_start_offset is not None:
            self._sink.follow_log_start(topic, partition, outcome.source_log_start_offset)
        if error == ErrorCode.NONE:
            self._sink.record_source_offsets(topic, partition, int(data.high_watermark))
        if outcome.refresh_metadata:
            self.remove(key)
            self._sink.relocate(topic, partition)
        elif mp.state.phase is FetchPhase.FAILED:
            self._fail(mp, mp.state.failure or "failed")
        return sum(batch.size for batch in outcome.append)

    async def _epoch_end_offset(
        self, mp: MirrorPartition, action: QueryEpochEndOffset
    ) -> tuple[ErrorCode, int, int]:
        spec = RequestSpec(
            OFFSET_FOR_LEADER_EPOCH_KEY,
            {
                "replica_id": -1,
                "topics": [
                    {
                        "topic": mp.topic,
                        "partitions": [
                            {
                                "partition": mp.partition,
                                "current_leader_epoch": action.current_leader_epoch,
                                "leader_epoch": action.epoch,
                            }
                        ],
                    }
                ],
            },
        )
        response = await self.client.send_to_node_once(self.source_broker, spec)
        found = response.topics[0].partitions[0]
        return (
            ErrorCode(error_code_from_wire(found.error_code)),
            int(found.leader_epoch),
            int(found.end_offset),
        )

    async def _list_offset(self, mp: MirrorPartition, timestamp: int) -> int:
        spec = RequestSpec(
            LIST_OFFSETS_KEY,
            {
                "replica_id": -1,
                "isolation_level": READ_COMMITTED,
                "topics": [
                    {
                        "name": mp.topic,
                        "partitions": [
                            {
                                "partition_index": mp.partition,
                                "current_leader_epoch": -1,
                                "timestamp": timestamp,
                            }
                        ],
                    }
                ],
                "timeout": LIST_OFFSETS_TIMEOUT,
            },
        )
        response = await self.client.send_to_node_once(self.source_broker, spec)
        found = response.topics[0].partitions[0]
        if found.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode(found.error_code), f"ListOffsets {mp.topic}-{mp.partition}")
        return int(found.offset)


def _group(
    keys: Iterable[Key], ids: dict[Key, uuid.UUID]
) -> dict[tuple[str, uuid.UUID], list[int]]:
    grouped: dict[tuple[str, uuid.UUID], list[int]] = {}
    for key in keys:
        grouped.setdefault((key[0], ids[key]), []).append(key[1])
    return grouped


def _by_topic(
    items: Iterable[tuple[Key, PartitionRequest]],
    ids: dict[Key, uuid.UUID],
    partition: Callable[[Key, PartitionRequest], dict[str, Any]],
) -> list[dict[str, Any]]:
    grouped: dict[tuple[str, uuid.UUID], list[dict[str, Any]]] = {}
    for key, request in items:
        grouped.setdefault((key[0], ids[key]), []).append(partition(key, request))
    return [
        {"topic": topic, "topic_id": topic_id, "partitions": parts}
        for (topic, topic_id), parts in grouped.items()
    ]
