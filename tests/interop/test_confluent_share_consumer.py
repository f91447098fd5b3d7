"""confluent-kafka's `ShareConsumer` (KIP-932) against the broker: share consumers split a
topic's records without duplicates, explicit acknowledgements accept, release and reject,
a record whose acquisition lock expires goes to another consumer, and acknowledged
records stay acknowledged across a broker restart.

Each consumer runs in its own thread: librdkafka's calls block, and the broker answers on
the test's event loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

pytestmark = pytest.mark.interop
TIMEOUT_S = 60.0
PARTITIONS = 3
LOCK_MS = 2_000
CONFIGS = {
    "group.share.heartbeat.interval.ms": 500,
    "group.share.record.lock.duration.ms": LOCK_MS,
}

Delivery = tuple[int, int]
"""A record as (partition, offset)."""


class Member:
    """One share consumer polling in a thread; ``decide`` picks each record's
    acknowledgement (None leaves it unacknowledged, so its lock runs out)."""

    def __init__(
        self,
        name: str,
        bootstrap: str,
        group: str,
        topic: str,
        decide: Callable[[Any], AcknowledgeType | None] | None = None,
    ) -> None:
        self.name = name
        self.deliveries: list[tuple[Delivery, int]] = []
        self.errors: list[str] = []
        self._decide = decide
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._consumer = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "share.acknowledgement.mode": "implicit" if decide is None else "explicit",
            }
        )
        self._consumer.subscribe([topic])
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        """A record left unacknowledged is held: the consumer polls no more (librdkafka
        refuses a poll before every record of the last one is acknowledged) and keeps
        heartbeating until it is closed."""
        holding = False
        while not self._stop.is_set():
            for message in self._consumer.poll(0.2):
                if message.error() is not None:
                    with self._lock:
                        self.errors.append(str(message.error()))
                    continue
                delivery = (message.partition(), message.offset())
                with self._lock:
                    self.deliveries.append((delivery, message.delivery_count() or 0))
                if self._decide is not None:
                    kind = self._decide(message)
                    if kind is None:
                        holding = True
                    else:
                        self._consumer.acknowledge(message, kind)
            if holding:
                self._stop.wait()
            elif self._decide is not None:
                self._consumer.commit_sync(TIMEOUT_S)
        self._consumer.close()

    def seen(self) -> list[tuple[Delivery, int]]:
        with self._lock:
            return list(self.deliveries)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT_S)
        assert not self._thread.is_alive(), f"{self.name} did not close"


@pytest.fixture
async def members() -> AsyncIterator[list[Member]]:
    """Members still running when the test ends, closed off the event loop."""
    started: list[Member] = []
    yield started
    for member in started:
        await asyncio.to_thread(member.close)


def _create_topic(bootstrap: str, topic: str, group: str, partitions: int = PARTITIONS) -> None:
    """The topic, and the group reading it from the earliest offset (Kafka's default is
    the latest)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(timeout=TIMEOUT_S)
    reset = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(
                "share.auto.offset.reset",
                "earliest",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    for future in admin.incremental_alter_configs([reset]).values():
        future.result(timeout=TIMEOUT_S)


def _produce(
    bootstrap: str, topic: str, count: int, start: int = 0, partitions: int = PARTITIONS
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, value=f"{i}".encode(), partition=i % partitions)
    assert producer.flush(TIMEOUT_S) == 0


def _all_records(count: int) -> set[Delivery]:
    return {(i % PARTITIONS, i // PARTITIONS) for i in range(count)}


async def test_two_share_consumers_split_a_topic_without_duplicates(
    start_cluster: Any, wait_for: Any, members: list[Member]
) -> None:
    """Records are produced in rounds until both consumers have some: the first member to
    join is assigned every partition until the second one's heartbeat splits them, and
    may read everything produced before it hears of the split. Locks last 30 s here: a lock
    that runs out between two polls of a slow consumer hands its records to the other one,
    which is at-least-once delivery working, not a duplicate the split made."""
    cluster = await start_cluster(
        configs={**CONFIGS, "group.share.record.lock.duration.ms": 30_000}
    )
    topic = group = "share-split"
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic, group)
    first = Member("first", cluster.bootstrap, group, topic)
    second = Member("second", cluster.bootstrap, group, topic)
    members.extend([first, second])
    produced = 0

    async def both_read() -> bool:
        nonlocal produced
        if first.seen() and second.seen():
            return True
        await asyncio.to_thread(_produce, cluster.bootstrap, topic, 30, produced)
        produced += 30
        return False

    await wait_for(both_read, timeout=TIMEOUT_S, message="both consumers get records")

    def delivered() -> list[Delivery]:
        return [d for m in (first, second) for d, _ in m.seen()]

    await wait_for(
        lambda: set(delivered()) == _all_records(produced), timeout=TIMEOUT_S, message="all read"
    )
    assert sorted(delivered()) == sorted(_all_records(produced))
    assert not first.errors and not second.errors


async def test_explicit_acknowledgements_release_reject_and_accept(
    start_cluster: Any, wait_for: Any, members: list[Member]
) -> None:
    cluster = await start_cluster(configs=CONFIGS)
    topic = group = "share-acks"
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic, group)
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, 30)
    released_once: set[Delivery] = set()

    def decide(message: Any) -> AcknowledgeType:
        """Offset 0 of each partition is released once, offset 1 rejected, the rest
        accepted."""
        delivery = (message.partition(), message.offset())
        if message.offset() == 0 and delivery not in released_once:
            released_once.add(delivery)
            return AcknowledgeType.RELEASE
        if message.offset() == 1:
            return AcknowledgeType.REJECT
        return AcknowledgeType.ACCEPT

    member = Member("explicit", cluster.bootstrap, group, topic, decide)
    members.append(member)
    redelivered = {((p, 0), 2) for p in range(PARTITIONS)}
    await wait_for(
        lambda: redelivered <= set(member.seen()) and len(member.seen()) >= 33,
        timeout=TIMEOUT_S,
        message="the released records come back with delivery count 2",
    )
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, 3, 30)
    await wait_for(
        lambda: {(p, 10) for p in range(PARTITIONS)} <= {d for d, _ in member.seen()},
        timeout=TIMEOUT_S,
        message="records produced later are read",
    )
    counts: dict[Delivery, int] = {}
    for delivery, _ in member.seen():
        counts[delivery] = counts.get(delivery, 0) + 1
    assert counts == {d: 2 if d[1] == 0 else 1 for d in _all_records(33)}
    assert not member.errors


async def test_a_record_whose_lock_expires_goes_to_another_consumer(
    start_cluster: Any, wait_for: Any, members: list[Member]
) -> None:
    """One partition, so both members are assigned it (a share partition is shared when
    a group has more members than partitions)."""
    cluster = await start_cluster(configs=CONFIGS)
    topic = group = "share-locks"
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic, group, 1)
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, 3, 0, 1)
    holder = Member("holder", cluster.bootstrap, group, topic, decide=lambda _m: None)
    members.append(holder)
    await wait_for(
        lambda: len(holder.seen()) == 3, timeout=TIMEOUT_S, message="the holder acquires all"
    )
    taker = Member("taker", cluster.bootstrap, group, topic)
    members.append(taker)
    await wait_for(
        lambda: {d for d, _ in taker.seen()} == {(0, 0), (0, 1), (0, 2)},
        timeout=TIMEOUT_S,
        message="after the lock expires the other consumer gets the records",
    )
    assert all(count >= 2 for _, count in taker.seen())


async def test_acknowledged_records_stay_acknowledged_across_a_restart(
    start_cluster: Any, wait_for: Any, members: list[Member]
) -> None:
    cluster = await start_cluster(configs=CONFIGS)
    topic = group = "share-restart"
    await asyncio.to_thread(_create_topic, cluster.bootstrap, topic, group)
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, 60)
    before = Member(
        "before", cluster.bootstrap, group, topic, decide=lambda _m: AcknowledgeType.ACCEPT
    )
    members.append(before)
    await wait_for(lambda: len(before.seen()) == 60, timeout=TIMEOUT_S, message="all accepted")
    await asyncio.to_thread(before.close)
    members.remove(before)
    broker = cluster.brokers[0]
    await broker.stop()
    await broker.start()
    await asyncio.to_thread(_produce, cluster.bootstrap, topic, 6, 60)
    after = Member("after", cluster.bootstrap, group, topic)
    members.append(after)
    await wait_for(lambda: len(after.seen()) >= 6, timeout=TIMEOUT_S, message="new records read")
    assert {d for d, _ in after.seen()} == _all_records(66) - _all_records(60)
