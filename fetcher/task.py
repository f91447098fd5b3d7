"""One mirror fetcher: consumer Fetch requests to one source broker for one mirror.

Kafka's ``AbstractFetcherThread.doWork`` as one asyncio task over the pure per-partition
plan of ``mirrorsim.fetcher.plan``: each round asks partitions for their next action and
executes it. Truncations run on the local log, OffsetForLeaderEpoch and ListOffsets go to
the source, and all partitions that want to fetch share one consumer Fetch (replica id
-1, read_committed, so the source keeps no follower state and answers only up to its
LSO) over an incremental fetch session. Each partition's answer goes back through the
plan, which says what to append (the source's batches, unchanged) and what to do next. A
partition that fails goes to FAILED alone; one whose source leader moved is handed back
to the manager, which finds the new leader.

A destination may mirror a hundred thousand partitions, nearly all idle, and a round
runs once per source max wait; so a round costs what changed, not what is mirrored. The
plan's next action depends only on the partition's state, except that a ``Wait`` turns
into something else once its time has come. So a round asks again only the partitions
whose state changed since they were last asked (added, answered, or after an executed
action) and those whose wait is over (a heap of timers); every other partition keeps the
``Fetch`` it last wanted, and the fetch session is told only of the changes.

The source and the destination are separate processes, so a fetcher that appended a
response before asking for the next would leave the source idle while it appends and
itself idle while the source reads. A response therefore moves its partitions' plans on
at once, the next Fetch is written, and the batches are appended while the source
answers it. There is still one Fetch in flight at a time, asked with offsets the plans
already reached; an append that fails fails its partition, whose part of the next
answer is then dropped. Each batch's CRC is checked then, just before its append, and
not while the plan picks the batches: a mismatch fails the partition with nothing of
that answer appended, as the plan would, and the check no longer delays the next Fetch.
Anything else that touches the local log first appends what is waiting, so those
appends are only ever behind by the one Fetch.

Partitions the broker's mirror replication quota throttles sit out the fetches while the
quota is exceeded (``mirrorsim.fetcher.throttle``), as Kafka's replica fetchers do; the
quota's replica lists are read once per topic and round.

Partitions are added and removed between requests; an answer for a partition removed
meanwhile is dropped, and every await is followed by that check again, so a partition
being stopped never sees an append after its fetcher let go of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import heapq
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from mirrorsim.broker.metrics.mirror import FetcherStats
from mirrorsim.client.cluster import ClusterClient, RequestSpec, negotiated
from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut
from mirrorsim.fetcher.fetch_session import FetchSessionHandler, Key, PartitionRequest
from mirrorsim.fetcher.plan import (
    LEADERSHIP_ERRORS,
    EpochSupport,
    Fail,
    Fetch,
    FetchOutcome,
    FetchPhase,
    PartitionFetchState,
    QueryEpochEndOffset,
    QueryOffsetBounds,
    Truncate,
    TruncateFullyAndStartAt,
    Wait,
    crc_problem,
    fetched_from_wire,
    next_action,
    on_epoch_end_offset,
    on_fetch_response,
    on_offset_bounds,
    on_truncated,
)
from mirrorsim.fetcher.throttle import MirrorReplicationQuota, TopicThrottle
from mirrorsim.protocol.errors import ErrorCode, KafkaError, error_code_from_wire
from mirrorsim.protocol.messages.fetch_request import (
    FetchRequestBody,
    FetchRequestPartition,
    FetchRequestTopic,
    ForgottenTopic,
)
from mirrorsim.protocol.messages.fetch_versions import FETCH_KEY
from mirrorsim.protocol.records.raw_batch import RawBatch, first_corrupt
from mirrorsim.protocol.uuids import ZERO_UUID

log = logging.getLogger(__name__)

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


@dataclass(slots=True)
class _Unwritten:
    """A partition's answer whose plan has moved on and whose batches still wait to be
    appended; ``high_watermark`` is the source's, when the answer carried no error."""

    mp: MirrorPartition
    outcome: FetchOutcome
    high_watermark: int | None


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
        self._changed: dict[Key, None] = {}
        """Partitions to ask for their next action at the next round (insertion-ordered)."""
        self._fetches: dict[Key, Fetch] = {}
        """The Fetch each fetching partition wanted when last asked."""
        self._fetching_topics: dict[str, set[int]] = {}
        """``_fetches`` by topic, for the quota's once-per-topic replica lists."""
        self._held: set[Key] = set()
        """Fetching partitions left out of the session while the quota is exceeded."""
        self._waiting: dict[Key, int] = {}
        """When each waiting partition's wait ends; ``_timers`` entries that disagree are
        stale and skipped."""
        self._timers: list[tuple[int, Key]] = []
        self._unreported: dict[Key, None] = {}
        """Partitions that started fetching and whose fetcher the stats do not know yet
        (rebuilt rather than emptied: a dict emptied by deletions still iterates slowly)."""
        self._unwritten: list[_Unwritten] = []
        """Answers taken from the last response and not yet appended (see the module's
        docstring); an entry whose partition was removed meanwhile is dropped."""
        self._topic_names: dict[uuid.UUID, str] = {}
        self._topic_id_partitions: dict[uuid.UUID, int] = {}
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
        key = (mirror_partition.topic, mirror_partition.partition)
        self.remove(key)
        self.partitions[key] = mirror_partition
        topic_id = mirror_partition.topic_id
        self._topic_names[topic_id] = mirror_partition.topic
        self._topic_id_partitions[topic_id] = self._topic_id_partitions.get(topic_id, 0) + 1
        self._changed[key] = None
        self._wakeup.set()

    def remove(self, key: Key) -> None:
        mp = self.partitions.pop(key, None)
        if mp is None:
            return
        left = self._topic_id_partitions[mp.topic_id] - 1
        if left:
            self._topic_id_partitions[mp.topic_id] = left
        else:
            del self._topic_id_partitions[mp.topic_id], self._topic_names[mp.topic_id]
        self._stop_fetching(key)
        self._waiting.pop(key, None)
        self._changed.pop(key, None)
        self._unreported.pop(key, None)

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
        self._write_unwritten()
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
        """One round: run the next action of every partition that changed or whose wait is
        over; fetch for all that want to."""
        support = await self._epoch_support()
        self._end_waits(_now_ms())
        due = list(self._changed)
        self._changed = {}
        for index, key in enumerate(due):
            try:
                await self._next(key, support)
            except BaseException:
                self._changed.update(dict.fromkeys(due[index:]))
                raise
        throttled = self._throttled_topics()
        quota_wait: int | None = None
        if throttled and self._quota.exceeded():
            self._hold(
                {
                    (topic, partition)
                    for topic, found in throttled.items()
                    for partition in self._fetching_topics[topic]
                    if partition in found
                }
            )
            throttled = {}
            quota_wait = _now_ms() + self._quota.delay_ms()
        else:
            self._hold(set())
        if self._session.wanted:
            await self._fetch(throttled)
            return
        waits = [w for w in (self._next_wait(), quota_wait) if w is not None]
        if waits:
            await self._idle(min(waits))

    async def _next(self, key: Key, support: EpochSupport) -> None:
        """Ask one partition for its next action: keep a Fetch or a Wait, run the rest."""
        mp = self.partitions.get(key)
        if mp is None:
            return
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
            self._waiting.pop(key, None)
            self._start_fetching(key, action)
            return
        self._stop_fetching(key)
        if isinstance(action, Wait):
            self._waiting[key] = action.until_ms
            heapq.heappush(self._timers, (action.until_ms, key))
            return
        self._waiting.pop(key, None)
        await self._execute(mp, action)
        if key in self.partitions:
            self._changed[key] = None

    def _start_fetching(self, key: Key, action: Fetch) -> None:
        known = self._fetches.get(key)
        if known == action:
            return
        self._fetches[key] = action
        if known is None:
            self._fetching_topics.setdefault(key[0], set()).add(key[1])
            self._unreported[key] = None
        if key not in self._held:
            self._session.set(key, _partition_request(action))

    def _stop_fetching(self, key: Key) -> None:
        if self._fetches.pop(key, None) is None:
            return
        topic, partition = key
        partitions = self._fetching_topics[topic]
        partitions.discard(partition)
        if not partitions:
            del self._fetching_topics[topic]
        self._held.discard(key)
        self._session.remove(key)

    def _end_waits(self, now_ms: int) -> None:
        """Partitions whose wait is over are asked again."""
        while self._timers and self._timers[0][0] <= now_ms:
            until_ms, key = heapq.heappop(self._timers)
            if self._waiting.get(key) == until_ms:
                del self._waiting[key]
                self._changed[key] = None

    def _next_wait(self) -> int | None:
        """When the first partition's wait ends, if any partition waits."""
        while self._timers and self._waiting.get(self._timers[0][1]) != self._timers[0][0]:
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def _throttled_topics(self) -> dict[str, TopicThrottle]:
        """The throttled partitions of each topic with a throttled partition fetching: one
        replica-list lookup per topic, none per partition."""
        throttled: dict[str, TopicThrottle] = {}
        for topic, partitions in self._fetching_topics.items():
            found = self._quota.throttled_partitions(topic)
            if found.every or not found.partitions.isdisjoint(partitions):
                throttled[topic] = found
        return throttled

    def _hold(self, held: set[Key]) -> None:
        """Leave exactly ``held`` out of the session; the others fetch what they want."""
        if held == self._held:
            return
        for key in self._held - held:
            self._session.set(key, _partition_request(self._fetches[key]))
        for key in held - self._held:
            self._session.remove(key)
        self._held = held

    async def _execute(self, mp: MirrorPartition, action: Any) -> None:
        self._write_unwritten()
        key = (mp.topic, mp.partition)
        if self.partitions.get(key) is not mp:
            return
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

    async def _fetch(self, throttled: dict[str, TopicThrottle]) -> None:
        """One Fetch for the partitions in the session; those ``throttled`` names size it
        and count against the mirror replication quota."""
        request = self._session.build()
        asked = [key for key in self._unreported if key in self._fetches and key not in self._held]
        max_bytes = self._quota.fetch_bytes(FETCH_MAX_BYTES) if throttled else FETCH_MAX_BYTES
        ids = {
            key: mp.topic_id if (mp := self.partitions.get(key)) else self._forgotten_id(key)
            for key in (*request.partitions, *request.forgotten)
        }
        connection = await self.client.connection(self.source_broker)
        body = FetchRequestBody(
            version=negotiated(connection, FETCH_KEY, FetchRequestBody.VERSIONS),
            max_wait_ms=self._max_wait_ms(),
            min_bytes=1,
            max_bytes=max_bytes,
            isolation_level=READ_COMMITTED,
            session_id=request.session_id,
            session_epoch=request.epoch,
            topics=_by_topic(
                request.partitions.items(),
                ids,
                lambda key, r: FetchRequestPartition(
                    partition=key[1],
                    current_leader_epoch=r.current_leader_epoch,
                    fetch_offset=r.fetch_offset,
                    last_fetched_epoch=r.last_fetched_epoch,
                    partition_max_bytes=min(PARTITION_MAX_BYTES, max_bytes)
                    if _in(throttled, key)
                    else PARTITION_MAX_BYTES,
                ),
            ),
            forgotten=[
                ForgottenTopic(topic, topic_id, parts)
                for (topic, topic_id), parts in _group(request.forgotten, ids).items()
            ],
        )
        in_flight = connection.start(body)
        self._write_unwritten()
        response = await in_flight.response()
        error = error_code_from_wire(response.error_code)
        self._session.handle_response(error, response.session_id)
        appended = throttled_bytes = 0
        if error == ErrorCode.NONE:
            for topic_response in response.responses:
                topic = getattr(topic_response, "topic", None) or self._topic_names.get(
                    topic_response.topic_id
                )
                for data in topic_response.partitions if topic else ():
                    key = (topic, int(data.partition_index))
                    size = self._apply(*key, data)
                    appended += size
                    throttled_bytes += size if _in(throttled, key) else 0
        self._quota.record(throttled_bytes)
        source = self.client.brokers.get(self.source_broker)
        self._stats.record_fetch(
            broker_host=source.host if source is not None else "",
            broker_port=source.port if source is not None else -1,
            size=appended,
            partitions=[key for key in asked if key in self.partitions],
        )
        if asked:
            reported = set(asked)
            self._unreported = {key: None for key in self._unreported if key not in reported}

    def _forgotten_id(self, key: Key) -> uuid.UUID:
        return self._sink.local_log(*key).topic_id or ZERO_UUID

    def _apply(self, topic: str, partition: int, data: Any) -> int:
        """Take one partition's answer: its plan moves on now, and its batches are appended
        now or, for a plain answer, once the next Fetch is on its way. The bytes taken."""
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
            verify_crc=False,
        )
        mp.state = outcome.state
        self._changed[key] = None
        answer = _Unwritten(
            mp, outcome, int(data.high_watermark) if error == ErrorCode.NONE else None
        )
        if (
            outcome.append
            and not outcome.refresh_metadata
            and outcome.state.phase is not FetchPhase.FAILED
        ):
            self._unwritten.append(answer)
        else:
            self._write(answer)
        return sum(batch.size for batch in outcome.append)

    def _write_unwritten(self) -> None:
        unwritten, self._unwritten = self._unwritten, []
        for answer in unwritten:
            self._write(answer)

    def _write(self, answer: _Unwritten) -> None:
        """Append one taken answer to the local log, unless its partition was let go; a
        batch that fails its CRC fails the partition instead (the plan left the check here)."""
        mp, outcome = answer.mp, answer.outcome
        topic, partition = mp.topic, mp.partition
        if self.partitions.get((topic, partition)) is not mp:
            return
        if outcome.append:
            corrupt = first_corrupt(outcome.append)
            if corrupt is not None:
                self._fail(mp, crc_problem(corrupt))
                return
            try:
                self._sink.append(topic, partition, list(outcome.append))
            except KafkaError as exc:
                self._fail(mp, str(exc))
                return
        if outcome.source_log_start_offset is not None:
            self._sink.follow_log_start(topic, partition, outcome.source_log_start_offset)
        if answer.high_watermark is not None:
            self._sink.record_source_offsets(topic, partition, answer.high_watermark)
        if outcome.refresh_metadata:
            self.remove((topic, partition))
            self._sink.relocate(topic, partition)
        elif outcome.state.phase is FetchPhase.FAILED:
            self._fail(mp, outcome.state.failure or "failed")

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


def _partition_request(fetch: Fetch) -> PartitionRequest:
    return PartitionRequest(fetch.offset, fetch.current_leader_epoch, fetch.last_fetched_epoch)


def _in(throttled: dict[str, TopicThrottle], key: Key) -> bool:
    """Whether ``key`` is among the ``throttled`` partitions (by topic)."""
    found = throttled.get(key[0])
    return found is not None and key[1] in found


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
    partition: Callable[[Key, PartitionRequest], FetchRequestPartition],
) -> list[FetchRequestTopic]:
    grouped: dict[tuple[str, uuid.UUID], list[FetchRequestPartition]] = {}
    for key, request in items:
        grouped.setdefault((key[0], ids[key]), []).append(partition(key, request))
    return [
        FetchRequestTopic(topic, topic_id, parts) for (topic, topic_id), parts in grouped.items()
    ]
