"""Follower replication: fetcher tasks that copy the leaders' logs over the wire.

Theory of operation (Kafka's ``ReplicaFetcherManager`` / ``ReplicaFetcherThread``): a
follower partition is handed to the fetcher of its leader broker and fetcher index
(``fetcher_index``, the mirror fetchers' formula), so partitions led by one broker share
a few connections and one Fetch carries many partitions.

Every decision is the shared fetcher plan's (``mirrorsim.fetcher.plan`` under
``FOLLOWER_RULES``), the one the mirror fetchers run under ``MIRROR_RULES``: each round
asks every partition for its next action, executes it against the leader (through a
:class:`~mirrorsim.broker.replica.leader_endpoint.LeaderEndpoint`) or the local log, and
feeds the answer back. So truncation on a diverging epoch (Fetch v12+) or after
OffsetForLeaderEpoch (older leaders, as Kafka before KIP-595), KAFKA-18723's check that no
batch carries an epoch newer than the request's, the CRC check, retention and unclean
elections (OFFSET_OUT_OF_RANGE) follow one set of rules for both kinds of fetcher.

What is the follower's own:

- records are appended unchanged (``append_follower_records``), and the follower's high
  watermark follows the leader's (capped at its own log end);
- for a mirror partition the batches carry the source cluster's epochs, so the batch
  check uses the ``MirrorLeaderEpoch`` (Fetch v19) instead of the leader epoch: the
  request names the latest epoch of the leader's log the follower knows, the leader
  fences it as it fences CurrentLeaderEpoch, and the follower adopts the one a fencing
  error or a response reports;
- leadership errors park the partition until the metadata names a new leader
  (``replica.fetch.backoff.ms``), and the whole fetcher backs off when the leader is down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mirrorsim.broker.config import MIRROR_NAME
from mirrorsim.broker.replica.leader_endpoint import (
    EpochQuery,
    FetchLimits,
    FollowerAnswer,
    FollowerFetch,
    LeaderEndpoint,
    WireLeaderEndpoint,
)
from mirrorsim.client.config import ClientConfig
from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut
from mirrorsim.fetcher.plan import (
    FOLLOWER_RULES,
    EpochSupport,
    Fetch,
    PartitionFetchState,
    QueryEpochEndOffset,
    QueryOffsetBounds,
    Truncate,
    TruncateFullyAndStartAt,
    Wait,
    fetcher_index,
    next_action,
    on_epoch_end_offset,
    on_fetch_response,
    on_offset_bounds,
    on_truncated,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from mirrorsim.broker.replica.manager import ReplicaManager
    from mirrorsim.broker.replica.partition import Partition

log = logging.getLogger(__name__)

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

    @property
    def limits(self) -> FetchLimits:
        return FetchLimits(
            partition_max_bytes=self.fetch_max_bytes,
            response_max_bytes=self.response_max_bytes,
            wait_max_ms=self.wait_max_ms,
            min_bytes=self.min_bytes,
        )


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass(slots=True)
class FollowerState:
    """What one fetcher tracks for one follower partition: the plan's state (None until
    a round places it), the mirror leader epoch last learned, and the fetcher's backoff."""

    fetch: PartitionFetchState | None = None
    mirror_leader_epoch: int = UNDEFINED_EPOCH
    delayed_until_ms: int = 0

    def ready(self, now_ms: int) -> bool:
        return self.due_ms() <= now_ms

    def due_ms(self) -> int:
        plan_delay = self.fetch.delayed_until_ms if self.fetch is not None else 0
        return max(self.delayed_until_ms, plan_delay)


LeaderEndpointFactory = Callable[[int, int], LeaderEndpoint]
"""(leader broker id, fetcher index) → the endpoint that fetcher talks to."""


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
        leader_endpoint: LeaderEndpointFactory | None = None,
    ) -> None:
        """``security``: the inter-broker client settings (protocol, SASL, TLS);
        ``broker_epoch``: this incarnation's, sent in every Fetch so that a leader can
        refuse an incarnation the controller has fenced; ``leader_endpoint``: how a
        fetcher reaches its leader, over the wire unless a test says otherwise."""
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
        self._leader_endpoint = leader_endpoint or self._wire_endpoint

    def _wire_endpoint(self, leader_id: int, index: int) -> LeaderEndpoint:
        return WireLeaderEndpoint(
            broker_id=self.broker_id,
            broker_epoch=self.broker_epoch,
            leader_id=leader_id,
            client_id=f"broker-{self.broker_id}-fetcher-{index}",
            address=self._endpoint,
            security=self.security,
            limits=self.config.limits,
            topics=self._replicas,
        )

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
            fetcher = ReplicaFetcher(
                self,
                leader_id=target[0],
                index=target[1],
                endpoint=self._leader_endpoint(*target),
            )
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
    """One fetcher task: runs the plan of every partition it holds against one leader."""

    manager: ReplicaFetcherManager
    leader_id: int
    index: int
    endpoint: LeaderEndpoint
    partitions: dict[PartitionKey, FollowerState] = field(default_factory=dict)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None
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
        await self.endpoint.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @property
    def _backoff_ms(self) -> int:
        return self.manager.config.backoff_ms

    # -- the loop ---------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopped:
            now = _now_ms()
            ready = [key for key, state in self.partitions.items() if state.ready(now)]
            if not ready:
                self._wake.clear()
                dues = [state.due_ms() for state in self.partitions.values()]
                timeout = max(0, min(dues) - now) / 1000 if dues else None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
                continue
            try:
                await self._round(ready)
                await asyncio.sleep(0)
            except (KafkaConnectionError, RequestTimedOut, OSError) as exc:
                log.info(
                    "broker %d: fetch from leader %d failed (%s); backing off",
                    self.manager.broker_id,
                    self.leader_id,
                    exc,
                )
                await self.endpoint.close()
                self._delay(ready)
            except Exception:
                log.exception(
                    "broker %d: fetcher for leader %d failed",
                    self.manager.broker_id,
                    self.leader_id,
                )
                await self.endpoint.close()
                self._delay(ready)

    def _delay(self, keys: list[PartitionKey]) -> None:
        until = _now_ms() + self._backoff_ms
        for key in keys:
            state = self.partitions.get(key)
            if state is not None:
                state.delayed_until_ms = until

    # -- one round --------------------------------------------------------------------

    async def _round(self, keys: list[PartitionKey]) -> None:
        """Every ready partition's next action: local truncations at once, then one
        OffsetForLeaderEpoch for those verifying an epoch, then one Fetch."""
        support = await self.endpoint.epoch_support()
        followers = self._followers(keys)
        self._delay([key for key in keys if key not in followers])
        now = _now_ms()
        fetches: dict[PartitionKey, Fetch] = {}
        queries: dict[PartitionKey, QueryEpochEndOffset] = {}
        for key, partition in followers.items():
            plan = self._plan(key, partition, support)
            action = next_action(plan, now)
            if isinstance(action, Fetch):
                fetches[key] = action
            elif isinstance(action, QueryEpochEndOffset):
                queries[key] = action
            elif isinstance(action, Truncate | TruncateFullyAndStartAt):
                self._truncate(key, partition, action)
            elif isinstance(action, QueryOffsetBounds):
                await self._learn_offset_bounds(key, partition)
            elif not isinstance(action, Wait):
                self.partitions[key].fetch = None
                self._delay([key])
        if queries:
            await self._query_epochs(queries, followers)
        if fetches:
            await self._fetch(fetches, followers)

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

    def _plan(
        self, key: PartitionKey, partition: Partition, support: EpochSupport
    ) -> PartitionFetchState:
        """The partition's plan state, started afresh when the leader epoch, the leader's
        protocol or the local log (truncated by someone else) no longer match it."""
        state = self.partitions[key]
        plan = state.fetch
        stale = (
            plan is None
            or plan.current_leader_epoch != partition.leader_epoch
            or plan.epoch_support is not support
            or (plan.pending is None and plan.fetch_offset != partition.log_end_offset)
        )
        if plan is None or stale:
            plan = PartitionFetchState.initial(
                log_end_offset=partition.log_end_offset,
                latest_epoch=partition.log.latest_epoch,
                current_leader_epoch=partition.leader_epoch,
                epoch_support=support,
                rules=FOLLOWER_RULES,
            )
            state.fetch = plan
        return plan

    def _truncate(
        self, key: PartitionKey, partition: Partition, action: Truncate | TruncateFullyAndStartAt
    ) -> None:
        replicas = self.manager._replicas
        log.info(
            "broker %d: truncating %s-%d to %d (leader %d)",
            self.manager.broker_id,
            key[0],
            key[1],
            action.offset,
            self.leader_id,
        )
        if isinstance(action, Truncate):
            replicas.truncate_to(key[0], key[1], action.offset)
        else:
            replicas.truncate_fully_and_start_at(key[0], key[1], action.offset)
        state = self.partitions[key]
        assert state.fetch is not None
        state.fetch = on_truncated(
            state.fetch,
            log_end_offset=partition.log_end_offset,
            latest_epoch=partition.log.latest_epoch,
        )

    async def _query_epochs(
        self,
        queries: dict[PartitionKey, QueryEpochEndOffset],
        followers: dict[PartitionKey, Partition],
    ) -> None:
        answers = await self.endpoint.epoch_end_offsets(
            {key: EpochQuery(q.current_leader_epoch, q.epoch) for key, q in queries.items()}
        )
        for key, answer in answers.items():
            state = self.partitions.get(key)
            partition = followers.get(key)
            if state is None or state.fetch is None or partition is None or key not in queries:
                continue
            state.fetch = on_epoch_end_offset(
                state.fetch,
                error=answer.error,
                source_epoch=answer.epoch,
                source_end_offset=answer.end_offset,
                epoch_entries=partition.log.epoch_cache.epoch_entries,
                log_end_offset=partition.log_end_offset,
                now_ms=_now_ms(),
                backoff_ms=self._backoff_ms,
                high_watermark=partition.high_watermark,
            )

    async def _learn_offset_bounds(self, key: PartitionKey, partition: Partition) -> None:
        """OFFSET_OUT_OF_RANGE: the leader's log start and end say whether to restart at
        its start (retention) or cut back to its end (an unclean election)."""
        state = self.partitions[key]
        try:
            start, end = await self.endpoint.offset_bounds(key, partition.leader_epoch)
        except KafkaError as exc:
            log.info("broker %d: offsets of %s-%d: %s", self.manager.broker_id, *key, exc)
            self._delay([key])
            return
        if state.fetch is not None and key in self.partitions:
            state.fetch = on_offset_bounds(
                state.fetch, source_log_start_offset=start, source_end_offset=end
            )

    async def _fetch(
        self, fetches: dict[PartitionKey, Fetch], followers: dict[PartitionKey, Partition]
    ) -> None:
        requests = {
            key: FollowerFetch(
                fetch_offset=f.offset,
                current_leader_epoch=f.current_leader_epoch,
                last_fetched_epoch=f.last_fetched_epoch,
                log_start_offset=followers[key].log_start_offset,
                mirror_leader_epoch=self._mirror_epoch_to_send(key, followers[key]),
            )
            for key, f in fetches.items()
        }
        answers = await self.endpoint.fetch(requests)
        for key, answer in answers.items():
            if key in self.partitions and key in requests:
                self._apply(key, followers[key], requests[key], answer)

    def _mirror_epoch_to_send(self, key: PartitionKey, partition: Partition) -> int:
        if not partition.state.configs.get(MIRROR_NAME):
            return UNDEFINED_EPOCH
        return self.partitions[key].mirror_leader_epoch

    def _apply(
        self,
        key: PartitionKey,
        partition: Partition,
        request: FollowerFetch,
        answer: FollowerAnswer,
    ) -> None:
        """Handle one partition's answer, unless the partition moved on since the request."""
        moved_on = (
            partition.leader_epoch != request.current_leader_epoch
            or partition.log_end_offset != request.fetch_offset
        )
        state = self.partitions[key]
        if moved_on or state.fetch is None:
            return
        fetched = answer.fetched
        if self._adopt_mirror_epoch(state, fetched.error, request.mirror_leader_epoch, answer):
            return
        is_mirror = bool(partition.state.configs.get(MIRROR_NAME))
        epoch_limit = None
        if is_mirror:
            sent = request.mirror_leader_epoch
            epoch_limit = answer.mirror_leader_epoch if sent == UNDEFINED_EPOCH else sent
            if fetched.error is ErrorCode.NONE:
                state.mirror_leader_epoch = answer.mirror_leader_epoch
        outcome = on_fetch_response(
            state.fetch,
            fetched,
            epoch_entries=partition.log.epoch_cache.epoch_entries,
            log_end_offset=partition.log_end_offset,
            now_ms=_now_ms(),
            backoff_ms=self._backoff_ms,
            high_watermark=partition.high_watermark,
            epoch_limit=epoch_limit,
        )
        if fetched.error is ErrorCode.NONE and fetched.diverging_epoch is None:
            try:
                self.manager._replicas.append_follower_records(
                    key[0],
                    key[1],
                    list(outcome.append),
                    fetched.high_watermark,
                    fetched.log_start_offset,
                    crc_checked=True,
                )
            except KafkaError as exc:
                log.warning("broker %d: append to %s-%d: %s", self.manager.broker_id, *key, exc)
                state.fetch = None
                self._delay([key])
                return
        elif fetched.error is not ErrorCode.NONE:
            log.debug(
                "broker %d: %s-%d fetch from %d: %s",
                self.manager.broker_id,
                key[0],
                key[1],
                self.leader_id,
                fetched.error.name,
            )
        state.fetch = outcome.state

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
