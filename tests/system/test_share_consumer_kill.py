"""SIGKILL a partition leader while a share consumer reads and acknowledges.

Three broker processes, RF=3. confluent-kafka's `ShareConsumer` accepts every record
explicitly and commits its acknowledgements after each poll; a record counts as
acknowledged once its partition's commit came back without error. One leader is killed
mid-way and restarted, and more records are produced, so the consumer reads from the
new leader. The new leader takes the share partition's state over from the
metadata store, so: no acknowledged record is delivered again, every record is delivered,
and only records not yet acknowledged at the kill are delivered twice.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
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
from helpers.processes import SYSTEM_CONFIGS, partition_row

from mirrorsim.broker.cluster import ClusterSpec
from mirrorsim.broker.supervisor import ProcessCluster

pytestmark = [pytest.mark.system, pytest.mark.slow]

TOPIC = GROUP = "share-kill"
PARTITIONS = 3
RECORDS = 20_000
LATER = 300
"""Produced after the restart, so the consumer certainly reads from the new leader."""
TIMEOUT_S = 120.0
CONFIGS = {
    **SYSTEM_CONFIGS,
    "group.share.heartbeat.interval.ms": 500,
    "group.share.record.lock.duration.ms": 5_000,
}

Delivery = tuple[int, int]


class Reader:
    """A share consumer thread that accepts everything and records, per record, how often
    it was delivered and whether its acknowledgement was committed."""

    def __init__(self, bootstrap: str) -> None:
        self.deliveries: dict[Delivery, int] = {}
        self.acknowledged: set[Delivery] = set()
        self.delivered_after_ack: list[Delivery] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._consumer = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "share.acknowledgement.mode": "explicit",
                "reconnect.backoff.max.ms": 500,
            }
        )
        self._consumer.subscribe([TOPIC])
        self._thread = threading.Thread(target=self._run, name="share-reader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            polled: dict[int, list[int]] = {}
            for message in self._consumer.poll(0.2):
                if message.error() is not None:
                    with self._lock:
                        self.errors.append(str(message.error()))
                    continue
                delivery = (message.partition(), message.offset())
                with self._lock:
                    if delivery in self.acknowledged:
                        self.delivered_after_ack.append(delivery)
                    self.deliveries[delivery] = self.deliveries.get(delivery, 0) + 1
                self._consumer.acknowledge(message, AcknowledgeType.ACCEPT)
                polled.setdefault(delivery[0], []).append(delivery[1])
            if polled:
                self._commit(polled)
        self._consumer.close()

    def _commit(self, polled: dict[int, list[int]]) -> None:
        try:
            results = self._consumer.commit_sync(30)
        except Exception as error:  # a commit cut by the kill: nothing counts as acknowledged
            with self._lock:
                self.errors.append(str(error))
            return
        committed = {tp.partition for tp, error in results.items() if error is None}
        with self._lock:
            for partition in committed:
                self.acknowledged.update((partition, offset) for offset in polled[partition])

    def snapshot(self) -> tuple[dict[Delivery, int], set[Delivery]]:
        with self._lock:
            return dict(self.deliveries), set(self.acknowledged)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT_S)
        assert not self._thread.is_alive(), "the share consumer did not close"


def _prepare(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)]).values():
        future.result(timeout=TIMEOUT_S)
    earliest = ConfigResource(
        ResourceType.GROUP,
        GROUP,
        incremental_configs=[
            ConfigEntry(
                "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
            )
        ],
    )
    for future in admin.incremental_alter_configs([earliest]).values():
        future.result(timeout=TIMEOUT_S)
    _produce(bootstrap, 0, RECORDS)


def _produce(bootstrap: str, start: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(TOPIC, value=b"%d" % i, partition=i % PARTITIONS)
    assert producer.flush(TIMEOUT_S) == 0


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[ProcessCluster]:
    spec = ClusterSpec(name="primary", data_dir=tmp_path / "primary", brokers=3, configs=CONFIGS)
    started = ProcessCluster(spec)
    await started.start()
    try:
        yield started
    finally:
        await started.stop()


async def test_a_killed_leader_loses_no_acknowledgement_and_redelivers_only_the_rest(
    cluster: ProcessCluster, wait_for: Any
) -> None:
    await asyncio.to_thread(_prepare, cluster.bootstrap)
    reader = Reader(cluster.bootstrap)
    try:
        await wait_for(
            lambda: len(reader.snapshot()[1]) >= RECORDS // 3,
            timeout=TIMEOUT_S,
            message="a third of the records acknowledged",
        )
        leader = partition_row(cluster, TOPIC, 0).leader
        _, acknowledged_before_kill = reader.snapshot()
        await cluster.kill(leader)
        await cluster.restart(leader)
        await asyncio.to_thread(_produce, cluster.bootstrap, RECORDS, LATER)
        await wait_for(
            lambda: len(reader.snapshot()[1]) == RECORDS + LATER,
            timeout=TIMEOUT_S,
            message="every record acknowledged",
        )
    finally:
        await asyncio.to_thread(reader.close)
    deliveries, acknowledged = reader.snapshot()
    assert len(acknowledged_before_kill) < RECORDS, "the kill came after everything was read"
    total = RECORDS + LATER
    assert acknowledged == {(i % PARTITIONS, i // PARTITIONS) for i in range(total)}
    assert reader.delivered_after_ack == [], "an acknowledged record came back"
    twice = {d for d, count in deliveries.items() if count > 1}
    assert not twice & acknowledged_before_kill
