"""Producer and consumer workloads: real aiokafka clients that keep a ledger.

Every record a producer writes carries a unique value id (``<workload>-<seq>``), and the
ledger keeps where each acknowledged one landed; consumers keep every record they saw.
RPO, loss and duplicates are then counted from the ledgers, not estimated. A workload
can be moved to another cluster mid-run (failover): it finishes its current chunk, drops
its client and carries on against the new bootstrap with the same sequence (producer)
or the same group id (consumer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError as ClientError

from mirrorsim.drills.context import Ack, DrillContext

log = logging.getLogger(__name__)
T = TypeVar("T")
ClientT = TypeVar("ClientT")

TICK_S = 0.05
UNPACED_CHUNK = 200
CLIENT_STOP_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_MS = 5000
BACKOFF_S = 0.2
ID_SEPARATOR = b"|"


def value_id(value: bytes | None) -> str:
    return "" if value is None else value.split(ID_SEPARATOR, 1)[0].decode(errors="replace")


async def _stop_client(client: Any) -> None:
    """A client of a dead cluster may never finish stopping; give up after a while."""
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await asyncio.wait_for(client.stop(), CLIENT_STOP_TIMEOUT_S)


class Switch:
    """Where a workload should be connected, and a signal that interrupts work in flight
    against the old cluster when it moves (a dead cluster can hold a send for its whole
    request timeout, which would otherwise count into the RTO)."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self._moved = asyncio.Event()
        self._retired: set[asyncio.Task[None]] = set()

    def move(self, cluster: str) -> None:
        self.cluster = cluster
        self._moved.set()

    def connected(self) -> None:
        self._moved.clear()

    async def unless_moved(self, work: Awaitable[T]) -> T | None:
        """``work``'s result, or None when the workload moved first (work cancelled)."""
        task = asyncio.ensure_future(work)
        moved = asyncio.ensure_future(self._moved.wait())
        await asyncio.wait({task, moved}, return_when=asyncio.FIRST_COMPLETED)
        moved.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return None

    def retire(self, client: Any) -> None:
        """Stop an old client in the background; the workload carries on at once."""
        task = asyncio.create_task(_stop_client(client))
        self._retired.add(task)
        task.add_done_callback(self._retired.discard)

    async def drain(self) -> None:
        await asyncio.gather(*self._retired)


@dataclass(frozen=True, slots=True)
class ProducerSpec:
    name: str
    cluster: str
    topic: str
    records: int | None = None
    duration: float | None = None
    rate: float | None = None
    keyed: bool = True
    key_space: int = 100
    compression: str | None = None
    transactional: bool = False
    value_bytes: int = 100


class ProducerWorkload:
    def __init__(self, ctx: DrillContext, spec: ProducerSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.switch = Switch(spec.cluster)
        self.sent = 0
        self.acked = 0
        self.failed = 0
        self.moved_at: float | None = None
        self.first_ack_after_move: float | None = None
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"producer {self.spec.name}")

    async def wait(self) -> None:
        if self._task is not None:
            await self._task

    async def stop(self) -> None:
        self._stopping = True
        await self.wait()

    def move(self, cluster: str) -> None:
        self.switch.move(cluster)
        self.moved_at = self.ctx.now()
        self.first_ack_after_move = None

    @property
    def done(self) -> bool:
        return self._task is not None and self._task.done()

    def _finished(self, began: float) -> bool:
        if self._stopping:
            return True
        if self.spec.records is not None and self.sent >= self.spec.records:
            return True
        return self.spec.duration is not None and self.ctx.now() - began >= self.spec.duration

    def _chunk_size(self) -> int:
        size = UNPACED_CHUNK if self.spec.rate is None else max(1, round(self.spec.rate * TICK_S))
        if self.spec.records is not None:
            size = min(size, self.spec.records - self.sent)
        return size

    async def _run(self) -> None:
        began = self.ctx.now()
        producer: AIOKafkaProducer | None = None
        connected_to = ""
        try:
            while not self._finished(began):
                if producer is None or connected_to != self.switch.cluster:
                    if producer is not None:
                        self.switch.retire(producer)
                    connected_to = self.switch.cluster
                    self.switch.connected()
                    producer = await self._connect(connected_to)
                    if producer is None:
                        await asyncio.sleep(BACKOFF_S)
                        continue
                chunk = self._chunk_size()
                first = self.sent
                self.sent += chunk
                ok = await self.switch.unless_moved(
                    self._send_chunk(producer, connected_to, first, chunk)
                )
                if not ok:
                    self.failed += chunk
                    if ok is not None:
                        await asyncio.sleep(BACKOFF_S)
                await self._pace(began)
        finally:
            if producer is not None:
                self.switch.retire(producer)
            await self.switch.drain()

    async def _connect(self, cluster: str) -> AIOKafkaProducer | None:
        spec = self.spec
        producer = AIOKafkaProducer(
            bootstrap_servers=self.ctx.cluster(cluster).bootstrap,
            acks="all",
            linger_ms=5,
            compression_type=spec.compression,
            enable_idempotence=True,
            transactional_id=f"{spec.name}-txn" if spec.transactional else None,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            client_id=f"drill-{spec.name}",
        )
        try:
            await producer.start()
        except (ClientError, OSError) as exc:
            log.info("producer %s cannot reach %s yet: %s", spec.name, cluster, exc)
            await _stop_client(producer)
            return None
        return producer

    def _record(self, seq: int) -> tuple[bytes | None, bytes]:
        head = f"{self.spec.name}-{seq}".encode() + ID_SEPARATOR
        value = head + b"." * max(0, self.spec.value_bytes - len(head))
        key = f"k{seq % self.spec.key_space}".encode() if self.spec.keyed else None
        return key, value

    async def _send_chunk(
        self, producer: AIOKafkaProducer, cluster: str, first: int, count: int
    ) -> bool:
        topic = self.spec.topic
        try:
            if self.spec.transactional:
                await producer.begin_transaction()
            futures = []
            for seq in range(first, first + count):
                key, value = self._record(seq)
                futures.append((seq, await producer.send(topic, value, key=key)))
            _, pending = await asyncio.wait(
                [f for _, f in futures], timeout=REQUEST_TIMEOUT_MS / 1000
            )
            if pending:
                return False
            if self.spec.transactional:
                await producer.commit_transaction()
        except (ClientError, OSError) as exc:
            log.info("producer %s: chunk failed on %s: %s", self.spec.name, cluster, exc)
            return False
        now = self.ctx.now()
        for seq, future in futures:
            if future.exception() is not None:
                continue
            meta = future.result()
            self.ctx.acks.append(
                Ack(
                    self.spec.name,
                    f"{self.spec.name}-{seq}",
                    cluster,
                    topic,
                    meta.partition,
                    meta.offset,
                    now,
                )
            )
            self.acked += 1
        if self.moved_at is not None and self.first_ack_after_move is None:
            self.first_ack_after_move = now
        return True

    async def _pace(self, began: float) -> None:
        if self.spec.rate is None:
            return
        due = began + self.sent / self.spec.rate
        delay = due - self.ctx.now()
        if delay > 0:
            await asyncio.sleep(delay)


@dataclass(frozen=True, slots=True)
class Seen:
    value: str
    cluster: str
    topic: str
    partition: int
    offset: int
    time: float


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    name: str
    cluster: str
    topics: tuple[str, ...]
    group: str
    auto_offset_reset: str = "earliest"
    isolation_level: str = "read_uncommitted"


class ConsumerWorkload(ABC, Generic[ClientT]):
    """A group member that commits after every poll, so a switch re-delivers only what
    the committed offsets (or their mirrored copies) do not cover.

    Subclasses bring the client (``_connect``, ``_poll``; aiokafka here, confluent-kafka in
    ``confluent_workloads``); moving, stopping and the counts are shared. A record is
    *done* once the commit (or acknowledgement) that covers it succeeded: only then can
    a sync carry it."""

    def __init__(self, ctx: DrillContext, spec: ConsumerSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.switch = Switch(spec.cluster)
        self.seen: list[Seen] = []
        self.done_at: dict[str, float] = {}
        self.resumed_at: dict[str, int] = {}
        self.positions: dict[str, int] = {}
        self.moved_from: str | None = None
        self.moved_at: float | None = None
        self._moved = False
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._stopping = False
        self._task = asyncio.create_task(self._run(), name=f"consumer {self.spec.name}")

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            await self._task
            self._task = None

    @property
    def cluster(self) -> str:
        return self.switch.cluster

    def move(self, cluster: str) -> None:
        self.moved_from, self.moved_at = self.switch.cluster, self.ctx.now()
        self.switch.move(cluster)
        self._moved = True
        self.resumed_at = {}

    def duplicates(self) -> int:
        return sum(n - 1 for n in Counter(s.value for s in self.seen).values() if n > 1)

    def reprocessed(self) -> int | None:
        """Records delivered on the cluster moved to that had been delivered on the one
        moved from: what the synced offsets did not cover. None before any move."""
        if self.moved_at is None:
            return None
        before = {s.value for s in self.seen if s.cluster == self.moved_from}
        after = {
            s.value for s in self.seen if s.cluster == self.cluster and s.time >= self.moved_at
        }
        return len(before & after)

    def reprocess_bound(self, failover_time: float, sync_interval_s: float) -> int | None:
        """How many records a move after a failover at ``failover_time`` may deliver again:
        those of the cluster moved from that were done after the last sync cycle that
        read the source, plus those still in flight (delivered, not done) at the move.
        That cycle started no more than one interval and its own run before the failover,
        or before the consumer's last commit there when the cluster died first; a second
        interval stands for the run. None before any move."""
        if self.moved_at is None:
            return None
        old = [s for s in self.seen if s.cluster == self.moved_from]
        last_done = max(
            (self.done_at[s.value] for s in old if s.value in self.done_at), default=failover_time
        )
        since = min(failover_time, last_done) - 2 * sync_interval_s
        return len({s.value for s in old if self.done_at.get(s.value, math.inf) >= since})

    def in_flight(self) -> int | None:
        """Records delivered on the cluster moved from that were not done at the move."""
        if self.moved_at is None:
            return None
        moved_at = self.moved_at
        return len(
            {
                s.value
                for s in self.seen
                if s.cluster == self.moved_from and self.done_at.get(s.value, math.inf) >= moved_at
            }
        )

    def _saw(
        self, cluster: str, topic: str, partition: int, offset: int, value: bytes | None
    ) -> str:
        """Record one delivery; returns its value id."""
        key = f"{topic}-{partition}"
        if self._moved and cluster == self.switch.cluster:
            self.resumed_at.setdefault(key, offset)
        seen = Seen(value_id(value), cluster, topic, partition, offset, self.ctx.now())
        self.seen.append(seen)
        return seen.value

    def _done(self, values: list[str]) -> None:
        now = self.ctx.now()
        for value in values:
            self.done_at.setdefault(value, now)

    async def _run(self) -> None:
        consumer: ClientT | None = None
        connected_to = ""
        try:
            while not self._stopping:
                if consumer is None or connected_to != self.switch.cluster:
                    if consumer is not None:
                        self.switch.retire(consumer)
                    connected_to = self.switch.cluster
                    self.switch.connected()
                    consumer = await self._connect(connected_to)
                    if consumer is None:
                        await asyncio.sleep(BACKOFF_S)
                        continue
                await self.switch.unless_moved(self._poll(consumer, connected_to))
        finally:
            if consumer is not None:
                self.switch.retire(consumer)
            await self.switch.drain()

    @abstractmethod
    async def _connect(self, cluster: str) -> ClientT | None:
        """A client of ``cluster`` with an async ``stop()``, or None while it cannot be
        reached (tried again after a backoff)."""

    @abstractmethod
    async def _poll(self, client: ClientT, cluster: str) -> None:
        """One poll: record what it delivered (``_saw``), commit, mark it ``_done``."""


class AioConsumerWorkload(ConsumerWorkload[AIOKafkaConsumer]):
    """A classic-protocol group member (aiokafka)."""

    async def _connect(self, cluster: str) -> AIOKafkaConsumer | None:
        consumer = AIOKafkaConsumer(
            *self.spec.topics,
            bootstrap_servers=self.ctx.cluster(cluster).bootstrap,
            group_id=self.spec.group,
            enable_auto_commit=False,
            auto_offset_reset=self.spec.auto_offset_reset,
            isolation_level=self.spec.isolation_level,
            metadata_max_age_ms=1000,
            request_timeout_ms=REQUEST_TIMEOUT_MS + 1000,
            client_id=f"drill-{self.spec.name}",
        )
        try:
            await consumer.start()
        except (ClientError, OSError) as exc:
            log.info("consumer %s cannot reach %s yet: %s", self.spec.name, cluster, exc)
            await _stop_client(consumer)
            return None
        return consumer

    async def _poll(self, consumer: AIOKafkaConsumer, cluster: str) -> None:
        try:
            batches = await consumer.getmany(timeout_ms=200)
            values = [
                self._saw(cluster, tp.topic, tp.partition, message.offset, message.value)
                for tp, messages in batches.items()
                for message in messages
            ]
            self.positions = {
                f"{tp.topic}-{tp.partition}": await consumer.position(tp)
                for tp in consumer.assignment()
            }
            if batches:
                await consumer.commit()
                self._done(values)
        except (ClientError, OSError) as exc:
            log.info("consumer %s on %s: %s", self.spec.name, cluster, exc)
            await asyncio.sleep(BACKOFF_S)
