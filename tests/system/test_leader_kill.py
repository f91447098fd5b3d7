"""SIGKILL the partition leader again and again under an idempotent acks=all producer.

Three broker processes, RF=3, min.insync.replicas=2, confluent-kafka with
enable.idempotence=true. After every kill the controller elects a new leader from the ISR
(and, when the killed broker held the controller lease, a new controller first); the
killed broker is restarted, truncates to the new leader's epoch boundary and rejoins the
ISR. At the end every acknowledged record is in the partition exactly once and the three
replicas' segment files are byte-identical.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from helpers.processes import partition_row, process_clusters
from helpers.replica_files import TOPIC, consume_all, replicas_identical

from mirrorsim.broker.supervisor import ProcessCluster
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic

pytestmark = pytest.mark.system


@pytest.fixture
async def process_cluster(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    async with process_clusters(tmp_path) as start:
        yield start


class IdempotentWriter:
    """A producer thread: unique values, acks=all, records what was acknowledged."""

    def __init__(self, bootstrap: str) -> None:
        self.acked: set[bytes] = set()
        self.failed: list[str] = []
        self.fatal: list[str] = []
        self._stop = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "retry.backoff.ms": 100,
                "message.timeout.ms": 120_000,
                "request.timeout.ms": 10_000,
                "error_cb": self._on_error,
            }
        )
        self._thread = threading.Thread(target=self._run, name="idempotent-writer", daemon=True)

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal.append(str(error))

    def _on_delivery(self, error: KafkaError | None, message: Any) -> None:
        if error is None:
            self.acked.add(message.value())
        else:
            self.failed.append(str(error))

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            self._producer.produce(TOPIC, value=b"v-%08d" % i, on_delivery=self._on_delivery)
            i += 1
            self._producer.poll(0.002)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> int:
        """Stop producing and wait for every outstanding delivery; messages left over."""
        self._stop.set()
        self._thread.join()
        return self._producer.flush(180)


async def kill_leader_repeatedly(
    process_cluster: Callable[..., Any], wait_for: Any, kills: int
) -> None:
    cluster: ProcessCluster = await process_cluster()
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (
            await admin.create_topics([NewTopic(TOPIC, 1, 3, configs={"min.insync.replicas": "2"})])
        ).all()
    await wait_for(lambda: len(partition_row(cluster, TOPIC).isr) == 3, timeout=30)
    writer = IdempotentWriter(cluster.bootstrap)
    writer.start()
    try:
        for kill in range(kills):
            before = len(writer.acked)
            await wait_for(
                lambda before=before: len(writer.acked) > before + 50,
                timeout=60,
                message=f"progress before kill {kill}",
            )
            row = partition_row(cluster, TOPIC)
            await cluster.kill(row.leader)
            elected = await wait_for(
                lambda row=row: (
                    (r := partition_row(cluster, TOPIC)).leader not in (-1, row.leader) and r
                ),
                timeout=60,
                message=f"a new leader after kill {kill}",
            )
            assert elected.leader_epoch > row.leader_epoch
            assert row.leader not in elected.isr
            await cluster.restart(row.leader)
            await wait_for(
                lambda: len(partition_row(cluster, TOPIC).isr) == 3,
                timeout=60,
                message=f"broker {row.leader} back in the ISR",
            )
    finally:
        left_over = writer.stop()
    assert left_over == 0
    assert writer.fatal == []
    await wait_for(lambda: replicas_identical(cluster), timeout=60, message="identical logs")
    values = consume_all(cluster.bootstrap)
    assert len(values) == len(set(values)), "a record is in the log twice"
    assert writer.acked <= set(values), "an acknowledged record is missing"
    assert len(writer.acked) > kills * 50


async def test_leader_sigkills_lose_and_duplicate_nothing(
    process_cluster: Callable[..., Any], wait_for: Any
) -> None:
    await kill_leader_repeatedly(process_cluster, wait_for, kills=3)


@pytest.mark.slow
@pytest.mark.timeout(900)  # every restart is a new incarnation: fenced, then caught up
async def test_twenty_leader_sigkills_lose_and_duplicate_nothing(
    process_cluster: Callable[..., Any], wait_for: Any
) -> None:
    await kill_leader_repeatedly(process_cluster, wait_for, kills=20)
