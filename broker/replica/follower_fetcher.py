"""Follower replication: fetcher tasks that copy the leaders' logs over the wire.

Theory of operation (Kafka's ``ReplicaFetcherManager`` / ``ReplicaFetcherThread``): a
follower partition is handed to the fetcher of its leader broker and fetcher index
(``hash(topic, partition) % num.replica.fetchers``), so partitions led by one broker share
a few connections and one Fetch carries many partitions. Each round of a fetcher is
``truncate; fetch``:

- truncation happens on the fetch path (Fetch v12+): the follower sends its log end offset
  and the epoch of its last batch; a leader whose log diverges answers ``diverging_epoch``
  and the follower truncates (``truncation_offset``) and fetches again. A leader older
  than v12 is asked OffsetForLeaderEpoch first, as Kafka did before KIP-595.
- records are appended unchanged (``append_as_follower``) after KAFKA-18723's check that
  no batch carries an epoch newer than the one the request was made in; for a mirror
  partition the batches carry the source cluster's epochs, so the check uses the
  ``MirrorLeaderEpoch`` (Fetch v19) instead: the request names the latest epoch of the
  leader's log the follower knows, the leader fences it as it fences CurrentLeaderEpoch,
  and the follower adopts the one a fencing error or a response reports.
- the follower's high watermark follows the leader's (capped at its own log end).
- fencing and not-leader errors park the partition until the metadata names a new leader
  (``replica.fetch.backoff.ms``); the whole fetcher backs off when the leader is down.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mirrorsim.broker.config import MIRROR_NAME
from mirrorsim.client.config import ClientConfig
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.records.raw_batch import RawBatch, iter_batches

if TYPE_CHECKING:
    from mirrorsim.broker.replica.manager import ReplicaManager
    from mirrorsim.broker.replica.partition import Partition

log = logging.getLogger(__name__)

FETCH_KEY = 1
LIST_OFFSETS_KEY = 2
OFFSET_FOR_LEADER_EPOCH_KEY = 23
DIVERGING_EPOCH_VERSION = 12
TOPIC_IDS_VERSION = 13
FETCH_VERSIONS = range(4, 20)
LIST_OFFSETS_VERSIONS = range(1, 9)
OFFSET_FOR_LEADER_EPOCH_VERSIONS = range(2, 5)
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
UNDEFINED_EPOCH = -1

Endpoint = tuple[str, int]
PartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """Kafka's ``replica.fetch.*`` settings."""

    num_fetchers: int = 1
    fetch_max_bytes: int = 1_048_576
    response_max_bytes: int = 10_485_760
    wait_max_ms: int = 500
    min_bytes: int = 1
    backoff_ms: int = 1000

    @classmethod
    def from_broker_config(cls, config: Callable[[str], Any]) -> FetcherConfig:
        return cls(
            num_fetchers=int(config("num.replica.fetchers")),
            fetch_max_bytes=int(config("replica.fetch.max.bytes")),
            response_max_bytes=int(config("replica.fetch.response.max.bytes")),
            wait_max_ms=int(config("replica.fetch.wait.max.ms")),
            min_bytes=int(config("replica.fetch.min.bytes")),
            backoff_ms=int(config("replica.fetch.backoff.ms")),
        )


def truncation_offset(
    leader_epoch: int,
    leader_end_offset: int,
    follower_epoch_end: tuple[int, int],
    log_end_offset: int,
    high_watermark: int,
) -> tuple[int, bool]:
    """Where a follower cuts its log, and whether truncation is complete (Kafka's rule).

    ``(leader_epoch, leader_end_offset)`` is the leader's answer for the follower's last
    epoch; ``follower_epoch_end`` is the follower's own ``end_offset_for_epoch`` of that
    leader epoch. If the follower does not know the leader's epoch, it cuts at the end of
    its largest smaller epoch and asks again; otherwise at the smaller of the two ends of
    that epoch (both logs agree up to there).
    """
    if leader_epoch == UNDEFINED_EPOCH:
        return min(high_watermark, log_end_offset), True
    follower_epoch, follower_end = follower_epoch_end
    if follower_epoch != leader_epoch:
        return min(follower_end, log_end_offset), False
    return min(follower_end, leader_end_offset, log_end_offset), True


def fetcher_index(topic: str, partition: int, num_fetchers: int) -> int:
    """A stable spread of partitions over a leader's fetchers."""
    return (zlib.crc32(topic.encode()) * 31 + partition) % num_fetchers


def batches_within_epoch(batches: list[RawBatch], max_epoch: int) -> list[RawBatch]:
    """KAFKA-18723: keep batches up to the first one from an epoch newer than ``max_epoch``."""
    if max_epoch < 0:
        return batches
    kept: list[RawBatch] = []
    for batch in batches:
        if batch.partition_leader_epoch > max_epoch:
            break
        kept.append(batch)
    return kept


@dataclass(slots=True)
class FollowerState:
    """What one fetcher tracks for one follower partition."""

    delayed_until: float = 0.0
    mirror_leader_epoch: int = UNDEFINED_EPOCH
    needs_epoch_truncation: bool = True


class ReplicaFetcherManager:
    """Assigns follower partitions to fetchers by (leader broker, fetcher index)."""

    def __init__(
        self,
        *,
        broker_id: int,
        replica_manager: ReplicaManager,
        endpoint: Callable[[int], Endpoint | None],
        config: FetcherConfig,
        security: ClientConfig,
        broker_epoch: Callable[[], int] = lambda: UNDEFINED_EPOCH,
    ) -> None:
        """``security``: the inter-broker client settings (protocol, SASL, TLS);
        ``broker_epoch``: this incarnation's, sent in every Fetch so that a leader can
        refuse an incarnation the controller has fenced."""
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self._replicas = replica_manager
        self._endpoint = endpoint
        self.config = config
        self.security = security
        self._fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._assigned: dict[PartitionKey, tuple[int, int]] = {}
        self._retiring: set[asyncio.Task[None]] = set()
        self._stopped = False

    def follow(self, partition: Partition) -> None:
        """Fetch ``partition`` from its current leader (moving it off any other fetcher).

        Ignored once the manager is stopped: a metadata refresh that applies a partition
        change after the broker began to stop must not start a fetcher nobody stops."""
        if self._stopped:
            return
        key = (partition.topic, partition.index)
        target = (
            partition.state.leader,
            fetcher_index(partition.topic, partition.index, self.config.num_fetchers),
        )
        current = self._assigned.get(key)
        if current is not None and current != target:
            self.unfollow(partition.topic, partition.index)
        fetcher = self._fetchers.get(target)
        if fetcher is None:
            fetcher = ReplicaFetcher(self, leader_id=target[0], index=target[1])
            self._fetchers[target] = fetcher
            fetcher.start()
        self._assigned[key] = target
        fetcher.add(key)

    def unfollow(self, topic: str, partition: int) -> None:
        """Stop fetching a partition; a fetcher left without partitions is shut down."""
        target = self._assigned.pop((topic, partition), None)
        if target is None:
            return
        fetcher = self._fetchers[target]
        fetcher.remove((topic, partition))
        if not fetcher.partitions:
            del self._fetchers[target]
            retiring = asyncio.get_running_loop().create_task(fetcher.stop())
            self._retiring.add(retiring)
            retiring.add_done_callback(self._retiring.discard)

    def is_following(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self._assigned

    async def stop(self) -> None:
        """Stop every fetcher, for good (see :meth:`follow`)."""
        self._stopped = True
        fetchers, self._fetchers = list(self._fetchers.values()), {}
        self._assigned.clear()
        await asyncio.gather(*(f.stop() for f in fetchers), *self._retiring)


@dataclass(eq=False)
class ReplicaFetcher:
    """One fetcher task: fetches every partition it holds from one leader broker."""

    manager: ReplicaFetcherManager
    leader_id: int
    index: int
    partitions: dict[PartitionKey, FollowerState] = field(default_factory=dict)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None
    _connection: BrokerConnection | None = None
    _stopped: bool = False

    def start(self) -> None:
        self._task = asyncio.create_task(
            self._run(),
            name=f"replica fetcher {self.manager.broker_id}<-{self.leader_id}#{self.index}",
        )

    def add(self, key: PartitionKey) -> None:
        self.partitions[key] = FollowerState()
        self._wake.set()

    def remove(self, key: PartitionKey) -> None:
        self.partitions.pop(key, None)

    async def stop(self) -> None:
        """Stop the task; the flag covers a cancellation that Python 3.11's ``wait_for``
        swallows when it races with a response."""
        self._stopped = True
        self._wake.set()
        await self._drop_connection()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    # -- the loop ---------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = self.manager.config.backoff_ms / 1000
        while not self._stopped:
            ready = self._ready_partitions()
            if not ready:
                self._wake.clear()
                delays = [s.delayed_until for s in self.partitions.values()]
                timeout = max(0.0, min(delays) - time.monotonic()) if delays else None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
                continue
            try:
                connection = await self._leader_connection()
                await self._fetch_round(connection, ready)
            except (KafkaConnectionError, RequestTimedOut, OSError) as exc:
                log.info(
                    "broker %d: fetch from leader %d failed (%s); backing off",
                    self.manager.broker_id,
                    self.leader_id,
                    exc,
                )
                await self._drop_connection()
                self._delay(ready, backoff)
            except Exception:
                log.exception(
                    "broker %d: fetcher for leader %d failed",
                    self.manager.broker_id,
                    self.leader_id,
                )
                await self._drop_connection()
                self._delay(ready, backoff)

    def _ready_partitions(self) -> list[PartitionKey]:
        now = time.monotonic()
        return [key for key, state in self.partitions.items() if state.delayed_until <= now]

    def _delay(self, keys: list[PartitionKey], seconds: float) -> None:
        until = time.monotonic() + seconds
        for key in keys:
            state = self.partitions.get(key)
            if state is not None:
                state.delayed_until = until

    async def _leader_connection(self) -> BrokerConnection:
        if self._connection is not None and self._connection.connected:
            return self._connection
        endpoint = self.manager._endpoint(self.leader_id)
        if endpoint is None:
            raise KafkaConnectionError(f"leader {self.leader_id} is not registered")
        connection = BrokerConnection(
            endpoint[0],
            endpoint[1],
            client_id=f"broker-{self.manager.broker_id}-fetcher-{self.index}",
            ssl_context=self.manager.security.ssl_context,
            sasl=self.manager.security.sasl,
            request_timeout_ms=self.manager.config.wait_max_ms + 30_000,
        )
        await connection.connect()
        self._connection = connection
        return connection

    async def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    # -- one round --------------------------------------------------------------------

    async def _fetch_round(self, connection: BrokerConnection, keys: list[PartitionKey]) -> None:
        version = connection.max_supported(FETCH_KEY, FETCH_VERSIONS)
        if version is None:
            raise KafkaConnectionError(f"leader {self.leader_id} serves no usable Fetch version")
        if version < DIVERGING_EPOCH_VERSION:
            await self._truncate_by_offset_for_leader_epoch(connection, keys)
        followers = self._followers(keys)
        self._delay([k for k in keys if k not in followers], self.manager.config.backoff_ms / 1000)
        if not followers:
            return
        requested = {
            key: (p.leader_epoch, p.log_end_offset, self._mirror_epoch_to_send(key, p))
            for key, p in followers.items()
        }
        request = build_request(FETCH_KEY, version, self._fetch_fields(followers))
        response = await connection.send(request)
        if int(response.error_code) != ErrorCode.NONE:
            self._delay(keys, self.manager.config.backoff_ms / 1000)
            return
        for topic in response.responses:
            name = self._topic_name(topic, followers)
            for data in topic.partitions:
                key = (name, int(data.partition_index))
                if key in followers and key in self.partitions:
                    self._apply(key, followers[key], requested[key], data)

    def _followers(self, keys: list[PartitionKey]) -> dict[PartitionKey, Partition]:
        found: dict[PartitionKey, Partition] = {}
        for key in keys:
            try:
                partition = self.manager._replicas.partition(*key)
            except KafkaError:
                self.remove(key)
                continue
            if partition.is_follower and partition.state.leader == self.leader_id:
                found[key] = partition
        return found

    def _fetch_fields(self, followers: dict[PartitionKey, Partition]) -> dict[str, Any]:
        config = self.manager.config
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, index), partition in followers.items():
            latest = partition.log.latest_epoch
            topics.setdefault(topic, []).append(
                {
                    "partition": index,
                    "current_leader_epoch": partition.leader_epoch,
                    "fetch_offset": partition.log_end_offset,
                    "last_fetched_epoch": UNDEFINED_EPOCH if latest is None else latest,
                    "log_start_offset": partition.log_start_offset,
                    "partition_max_bytes": config.fetch_max_bytes,
                    "mirror_leader_epoch": self._mirror_epoch_to_send((topic, index), partition),
                }
            )
        replica_id = self.manager.broker_id
        return {
            "replica_id": replica_id,
            "replica_state": {
                "replica_id": replica_id,
                "replica_epoch": self.manager.broker_epoch(),
            },
            "max_wait": datetime.timedelta(milliseconds=config.wait_max_ms),
            "min_bytes": config.min_bytes,
            "max_bytes": config.response_max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "topic_id": self.manager._replicas.topic_id(topic),
                    "partitions": partitions,
                }
                for topic, partitions in topics.items()
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }

    def _mirror_epoch_to_send(self, key: PartitionKey, partition: Partition) -> int:
        if not partition.state.configs.get(MIRROR_NAME):
            return UNDEFINED_EPOCH
        return self.partitions[key].mirror_leader_epoch

    def _topic_name(self, topic: Any, followers: dict[PartitionKey, Partition]) -> str:
        name = getattr(topic, "topic", None)
        if name:
            return str(name)
        return self.manager._replicas.topic_name(topic.topic_id) or ""

    def _apply(
        self,
        key: PartitionKey,
        partition: Partition,
        requested: tuple[int, int, int],
        data: Any,
    ) -> None:
        """Handle one partition's answer, unless the partition moved on since the request."""
        epoch, fetch_offset, sent_mirror_epoch = requested
        if partition.leader_epoch != epoch or partition.log_end_offset != fetch_offset:
            return
        state = self.partitions[key]
        code = ErrorCode(int(data.error_code))
        replicas = self.manager._replicas
        if code == ErrorCode.NONE:
            diverging = getattr(data, "diverging_epoch", None)
            if diverging is not None and int(diverging.epoch) >= 0:
                self._truncate_on_divergence(
                    key, partition, int(diverging.epoch), int(diverging.end_offset)
                )
                return
            state.needs_epoch_truncation = False
            batches = list(iter_batches(data.records or b"", allow_partial_tail=True))
            mirror_epoch = int(getattr(data, "mirror_leader_epoch", UNDEFINED_EPOCH))
            if partition.state.configs.get(MIRROR_NAME):
                state.mirror_leader_epoch = mirror_epoch
                limit = mirror_epoch if sent_mirror_epoch == UNDEFINED_EPOCH else sent_mirror_epoch
            else:
                limit = epoch
            replicas.append_follower_records(
                key[0],
                key[1],
                batches_within_epoch(batches, limit),
                int(data.high_watermark),
                int(data.log_start_offset),
            )
        elif self._adopt_mirror_epoch(state, code, sent_mirror_epoch, data):
            return
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            asyncio.get_running_loop().create_task(self._reset_out_of_range(key, partition))
            self._delay([key], self.manager.config.backoff_ms / 1000)
        else:
            log.debug(
                "broker %d: %s-%d fetch from %d: %s",
                self.manager.broker_id,
                key[0],
                key[1],
                self.leader_id,
                code.name,
            )
            self._delay([key], self.manager.config.backoff_ms / 1000)

    @staticmethod
    def _adopt_mirror_epoch(
        state: FollowerState, code: ErrorCode, sent_mirror_epoch: int, data: Any
    ) -> bool:
        """A leader that fenced the mirror leader epoch sent names its own; take it and
        fetch again at once. Fencing on the current leader epoch leaves it unchanged, so
        that case still waits for the metadata to name the new leader."""
        if code not in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH):
            return False
        answered = int(getattr(data, "mirror_leader_epoch", UNDEFINED_EPOCH))
        if sent_mirror_epoch == UNDEFINED_EPOCH or answered == sent_mirror_epoch:
            return False
        state.mirror_leader_epoch = answered
        return True

    def _truncate_on_divergence(
        self, key: PartitionKey, partition: Partition, leader_epoch: int, leader_end: int
    ) -> None:
        offset, _complete = truncation_offset(
            leader_epoch,
            leader_end,
            partition.end_offset_for_epoch(leader_epoch),
            partition.log_end_offset,
            partition.high_watermark,
        )
        log.info(
            "broker %d: truncating %s-%d to %d (leader %d has epoch %d ending at %d)",
            self.manager.broker_id,
            key[0],
            key[1],
            offset,
            self.leader_id,
            leader_epoch,
            leader_end,
        )
        self.manager._replicas.truncate_to(key[0], key[1], offset)

    async def _truncate_by_offset_for_leader_epoch(
        self, connection: BrokerConnection, keys: list[PartitionKey]
    ) -> None:
        """Pre-v12 leaders: ask where our last epoch ends on the leader, then truncate."""
        pending = {
            key: p
            for key, p in self._followers(keys).items()
            if self.partitions[key].needs_epoch_truncation and p.log.latest_epoch is not None
        }
        if not pending:
            return
        version = connection.max_supported(
            OFFSET_FOR_LEADER_EPOCH_KEY, OFFSET_FOR_LEADER_EPOCH_VERSIONS
        )
        if version is None:
            return
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, index), p in pending.items():
            topics.setdefault(topic, []).append(
                {
                    "partition": index,
                    "current_leader_epoch": p.leader_epoch,
                    "leader_epoch": p.log.latest_epoch,
                }
            )
        request = build_request(
            OFFSET_FOR_LEADER_EPOCH_KEY,
            version,
            {
                "replica_id": self.manager.broker_id,
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            },
        )
        response = await connection.send(request)
        for topic in response.topics:
            for answer in topic.partitions:
                key = (str(topic.topic), int(answer.partition))
                partition = pending.get(key)
                if partition is None or int(answer.error_code) != ErrorCode.NONE:
                    continue
                offset, complete = truncation_offset(
                    int(answer.leader_epoch),
                    int(answer.end_offset),
                    partition.end_offset_for_epoch(int(answer.leader_epoch)),
                    partition.log_end_offset,
                    partition.high_watermark,
                )
                self.manager._replicas.truncate_to(key[0], key[1], offset)
                self.partitions[key].needs_epoch_truncation = not complete

    async def _reset_out_of_range(self, key: PartitionKey, partition: Partition) -> None:
        """Kafka's rule: behind the leader's log start, start over there; ahead of the
        leader's log end (an unclean election), cut back to it."""
        try:
            connection = await self._leader_connection()
            leader_end = await self._list_offset(connection, key, partition, LATEST_TIMESTAMP)
            replicas = self.manager._replicas
            if partition.log_end_offset > leader_end:
                replicas.truncate_to(key[0], key[1], leader_end)
                return
            leader_start = await self._list_offset(connection, key, partition, EARLIEST_TIMESTAMP)
            if partition.log_end_offset < leader_start:
                replicas.truncate_fully_and_start_at(key[0], key[1], leader_start)
        except (KafkaConnectionError, RequestTimedOut, KafkaError, OSError) as exc:
            log.info(
                "broker %d: offset reset of %s-%d failed: %s", self.manager.broker_id, *key, exc
            )
        finally:
            state = self.partitions.get(key)
            if state is not None:
                state.delayed_until = 0.0
                self._wake.set()

    async def _list_offset(
        self, connection: BrokerConnection, key: PartitionKey, partition: Partition, timestamp: int
    ) -> int:
        version = connection.max_supported(LIST_OFFSETS_KEY, LIST_OFFSETS_VERSIONS)
        if version is None:
            raise KafkaConnectionError("leader serves no usable ListOffsets version")
        request = build_request(
            LIST_OFFSETS_KEY,
            version,
            {
                "replica_id": self.manager.broker_id,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": key[0],
                        "partitions": [
                            {
                                "partition_index": key[1],
                                "current_leader_epoch": partition.leader_epoch,
                                "timestamp": timestamp,
                            }
                        ],
                    }
                ],
            },
        )
        response = await connection.send(request)
        answer = response.topics[0].partitions[0]
        if int(answer.error_code) != ErrorCode.NONE:
            raise KafkaError(ErrorCode(int(answer.error_code)))
        return int(answer.offset)
