"""The transaction coordinator: transactional ids, their producer epochs and their markers.

Decisions are pure functions in ``state.py``; this class serializes the requests of one
transactional id (an ``asyncio.Lock`` per id), reads the current metadata from the
store, persists the decision, and then drives the markers of a Prepare* transaction to
completion in a task of its own. The metadata store is the only copy of the state, so a
coordinator that restarts, or a broker that takes over an id after the live set changed,
continues where the previous one stopped: ``scan`` (at start and every
``transaction.abort.timed.out.transaction.cleanup.interval.ms``) resumes every Prepare*
transaction this broker coordinates and aborts every expired Ongoing one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from mirrorsim.broker.txn.state import (
    GROUP_OFFSETS_TOPIC,
    TopicPartition,
    TxnError,
    TxnMetadata,
    TxnState,
    check_producer,
    decide_add_partitions,
    decide_complete,
    decide_end_txn,
    decide_init_producer_id,
    decide_timeout_abort,
)
from mirrorsim.broker.txn.store import StaleTxnMetadata, TxnStore
from mirrorsim.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

_RETRY_BACKOFF_S = 0.02
_PREPARE_WAIT_S = 1.0
"""How long a request for an id whose markers are in flight waits for them before it
answers CONCURRENT_TRANSACTIONS. Kafka answers at once and the client retries after
its backoff; waiting briefly gives the same answer a retry would, without the backoff."""
_MAX_RETRY_BACKOFF_S = 1.0
_DONE = (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_PRODUCER_EPOCH)
"""Marker results that end the retries: written; the partition is gone (Kafka drops its
marker); or a newer epoch already wrote there (the producer moved on)."""


class TxnCluster(Protocol):
    """What the coordinator needs to know about the cluster, from the broker's view."""

    def owns(self, transactional_id: str) -> bool: ...

    def partition_exists(self, topic: str, partition: int) -> bool: ...

    def offsets_partition(self, group_id: str) -> int: ...


class MarkerSink(Protocol):
    async def write(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]: ...


@dataclass(frozen=True, slots=True)
class TxnCoordinatorConfig:
    max_timeout_ms: int = 900_000
    cleanup_interval_ms: int = 10_000
    stop_before_markers: bool = False
    """Fault injection for crash tests: persist Prepare* but never send its markers."""


class TransactionCoordinator:
    def __init__(
        self,
        *,
        store: TxnStore,
        cluster: TxnCluster,
        markers: MarkerSink,
        allocate_producer_id: Callable[[], int],
        clock_ms: Callable[[], int],
        config: TxnCoordinatorConfig,
    ) -> None:
        self._store = store
        self._cluster = cluster
        self._markers = markers
        self._allocate = allocate_producer_id
        self._now = clock_ms
        self._config = config
        self._locks: dict[str, asyncio.Lock] = {}
        self._cache: dict[str, TxnMetadata] = {}
        self._completions: dict[str, asyncio.Task[None]] = {}
        self._scanner: asyncio.Task[None] | None = None
        self.coordinator_epoch = -1

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        self.coordinator_epoch = await asyncio.to_thread(self._store.next_coordinator_epoch)
        await self.scan()
        self._scanner = asyncio.create_task(self._scan_periodically(), name="txn coordinator scan")

    async def stop(self) -> None:
        tasks = [t for t in [self._scanner, *self._completions.values()] if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._completions.clear()
        self._scanner = None

    async def _scan_periodically(self) -> None:
        while True:
            await asyncio.sleep(self._config.cleanup_interval_ms / 1000)
            try:
                await self.scan()
            except Exception:
                log.exception("transaction coordinator scan failed")

    async def scan(self) -> None:
        """Resume the markers of Prepare* transactions and abort expired Ongoing ones."""
        now = self._now()
        for meta in await asyncio.to_thread(self._store.all):
            if not self._cluster.owns(meta.transactional_id):
                self._cache.pop(meta.transactional_id, None)
                continue
            if meta.state.is_prepare:
                self._ensure_completion(meta.transactional_id)
            elif meta.has_expired(now):
                await self._abort_expired(meta.transactional_id)

    async def _abort_expired(self, transactional_id: str) -> None:
        async with self._lock(transactional_id):
            current = await self._load(transactional_id)
            if current is None or not current.has_expired(self._now()):
                return
            log.info(
                "transaction %r of producer %d expired after %d ms; aborting",
                transactional_id,
                current.producer_id,
                current.timeout_ms,
            )
            await self._persist(current, decide_timeout_abort(current, self._now()))
        self._ensure_completion(transactional_id)

    # -- requests -------------------------------------------------------------------------

    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, producer_id: int, producer_epoch: int
    ) -> tuple[int, int]:
        self._check_coordinator(transactional_id)
        if timeout_ms <= 0 or timeout_ms > self._config.max_timeout_ms:
            raise TxnError(
                ErrorCode.INVALID_TRANSACTION_TIMEOUT,
                f"transaction.timeout.ms {timeout_ms} is not in (0, "
                f"{self._config.max_timeout_ms}] (transaction.max.timeout.ms)",
            )
        await self._await_markers_in_flight(transactional_id)
        async with self._lock(transactional_id):
            current = await self._load(transactional_id)
            decision = decide_init_producer_id(
                current,
                transactional_id=transactional_id,
                timeout_ms=timeout_ms,
                expected_producer_id=producer_id,
                expected_epoch=producer_epoch,
                now_ms=self._now(),
                new_producer_id=self._allocate,
            )
            if decision.metadata is not current:
                await self._persist(current, decision.metadata)
        if decision.metadata.state.is_prepare:
            self._ensure_completion(transactional_id)
        if decision.error is not ErrorCode.NONE:
            raise TxnError(decision.error)
        return decision.metadata.producer_id, decision.metadata.producer_epoch

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """Kafka's rule: if any partition is unknown, none is added."""
        self._check_coordinator(transactional_id)
        wanted = list(partitions)
        unknown = {tp for tp in wanted if not self._cluster.partition_exists(*tp)}
        await self._await_markers_in_flight(transactional_id)
        async with self._lock(transactional_id):
            current = await self._load(transactional_id)
            if unknown:
                check_producer(current, producer_id, producer_epoch)
                return {
                    tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    if tp in unknown
                    else ErrorCode.OPERATION_NOT_ATTEMPTED
                    for tp in wanted
                }
            new = decide_add_partitions(
                current,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                partitions=wanted,
                now_ms=self._now(),
            )
            if new is not current:
                await self._persist(current, new)
        return dict.fromkeys(wanted, ErrorCode.NONE)

    async def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> None:
        """The group's offsets partition joins the transaction: its marker goes to the group
        coordinator, which then materializes or drops the pending offsets."""
        partition = (GROUP_OFFSETS_TOPIC, self._cluster.offsets_partition(group_id))
        self._check_coordinator(transactional_id)
        await self._await_markers_in_flight(transactional_id)
        async with self._lock(transactional_id):
            current = await self._load(transactional_id)
            new = decide_add_partitions(
                current,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                partitions=[partition],
                now_ms=self._now(),
            )
            if new is not current:
                await self._persist(current, new)

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """Answered once Prepare* is durable; the markers follow in the background."""
        self._check_coordinator(transactional_id)
        async with self._lock(transactional_id):
            current = await self._load(transactional_id)
            new = decide_end_txn(
                current,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                commit=commit,
                now_ms=self._now(),
            )
            if new is not current:
                await self._persist(current, new)
        if new.state.is_prepare:
            self._ensure_completion(transactional_id)

    async def list_transactions(self) -> list[TxnMetadata]:
        """The transactions this broker coordinates (ListTransactions asks every broker)."""
        return [
            meta
            for meta in await asyncio.to_thread(self._store.all)
            if self._cluster.owns(meta.transactional_id)
        ]

    async def describe(self, transactional_id: str) -> TxnMetadata:
        self._check_coordinator(transactional_id)
        found = await self._load(transactional_id)
        if found is None:
            raise TxnError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        return found

    async def _await_markers_in_flight(self, transactional_id: str) -> None:
        task = self._completions.get(transactional_id)
        if task is not None:
            await asyncio.wait({task}, timeout=_PREPARE_WAIT_S)

    # -- markers --------------------------------------------------------------------------

    def _ensure_completion(self, transactional_id: str) -> None:
        if self._config.stop_before_markers:
            log.warning("fault injection: markers of %r are not sent", transactional_id)
            return
        running = self._completions.get(transactional_id)
        if running is not None and not running.done():
            return
        task = asyncio.create_task(
            self._complete(transactional_id), name=f"txn markers {transactional_id}"
        )
        self._completions[transactional_id] = task
        task.add_done_callback(lambda _: self._forget_completion(transactional_id, task))

    def _forget_completion(self, transactional_id: str, task: asyncio.Task[None]) -> None:
        if self._completions.get(transactional_id) is task:
            del self._completions[transactional_id]
        if not task.cancelled() and task.exception() is not None:
            log.error(
                "markers of transaction %r failed", transactional_id, exc_info=task.exception()
            )

    async def wait_for_completion(self, transactional_id: str) -> None:
        """Until the markers of the transaction's current Prepare* state are written."""
        task = self._completions.get(transactional_id)
        if task is not None:
            await asyncio.shield(task)

    async def _complete(self, transactional_id: str) -> None:
        meta = await self._load(transactional_id)
        if meta is None or not meta.state.is_prepare:
            return
        pending = set(meta.partitions)
        backoff = _RETRY_BACKOFF_S
        while pending:
            results = await self._markers.write(
                producer_id=meta.producer_id,
                producer_epoch=meta.producer_epoch,
                commit=meta.state is TxnState.PREPARE_COMMIT,
                coordinator_epoch=self.coordinator_epoch,
                partitions=pending,
            )
            if ErrorCode.TRANSACTION_COORDINATOR_FENCED in results.values():
                log.warning(
                    "coordinator epoch %d is fenced; leaving %r",
                    self.coordinator_epoch,
                    transactional_id,
                )
                return
            pending = {tp for tp, code in results.items() if code not in _DONE}
            if pending:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _MAX_RETRY_BACKOFF_S)
        async with self._lock(transactional_id):
            current = await self._load(transactional_id)
            if current == meta:
                await self._persist(current, decide_complete(current, self._now()))

    # -- helpers --------------------------------------------------------------------------

    def _check_coordinator(self, transactional_id: str) -> None:
        if not transactional_id:
            raise TxnError(ErrorCode.INVALID_REQUEST, "empty transactional id")
        if not self._cluster.owns(transactional_id):
            raise TxnError(ErrorCode.NOT_COORDINATOR)

    def _lock(self, transactional_id: str) -> asyncio.Lock:
        return self._locks.setdefault(transactional_id, asyncio.Lock())

    async def _load(self, transactional_id: str) -> TxnMetadata | None:
        """From the cache when this coordinator wrote it last; a stale entry (another
        broker changed the id meanwhile) fails the compare-and-set of the next write."""
        cached = self._cache.get(transactional_id)
        if cached is not None:
            return cached
        return await asyncio.to_thread(self._store.get, transactional_id)

    async def _persist(self, expected: TxnMetadata | None, new: TxnMetadata) -> None:
        try:
            await asyncio.to_thread(self._store.replace, expected, new)
            self._cache[new.transactional_id] = new
        except StaleTxnMetadata as exc:
            self._cache.pop(new.transactional_id, None)
            raise KafkaError(
                ErrorCode.CONCURRENT_TRANSACTIONS,
                f"transaction {new.transactional_id!r} changed concurrently",
            ) from exc
