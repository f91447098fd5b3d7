"""A power cut on the partition leader loses no acknowledged record.

Three broker processes, RF=3, min.insync.replicas=2, an acks=all idempotent producer.
SIGKILL keeps what the page cache holds; a power cut does not. The test emulates one:
it kills the leader, cuts its active segment to half its size (the dirty pages the cut
would lose) and restarts it well within its session timeout, so only the new broker
epoch of the re-registration can tell the controller that the broker lost its tail.

The controller must fence the old incarnation: move the leadership to an in-sync replica
with a leader-epoch bump and drop the restarted broker from the ISR. The restarted broker
then follows, truncates to the new leader's epoch boundary, catches up and rejoins the
ISR. Without the fence it came back leading with a full ISR and its followers truncated
their logs to its cut one.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from helpers.processes import SYSTEM_CONFIGS, partition_row
from helpers.replica_files import consume_all, replicas_identical, segment_bytes

from mirrorsim.broker.cluster import ClusterSpec
from mirrorsim.broker.supervisor import ProcessCluster
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic

pytestmark = [pytest.mark.system, pytest.mark.slow]

TOPIC = "kills"
RECORDS = 5_000
SESSION_TIMEOUT_MS = 15_000
"""Far longer than a restart takes: the broker is back before its session expires."""


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[ProcessCluster]:
    spec = ClusterSpec(
        name="primary",
        data_dir=tmp_path / "primary",
        brokers=3,
        configs={**SYSTEM_CONFIGS, "broker.session.timeout.ms": SESSION_TIMEOUT_MS},
    )
    async with ProcessCluster(spec) as running:
        yield running


def produce_acknowledged(bootstrap: str, count: int) -> set[bytes]:
    """Produce ``count`` records with acks=all; the values the cluster acknowledged."""
    acked: set[bytes] = set()

    def on_delivery(error: Any, message: Any) -> None:
        if error is None:
            acked.add(message.value())

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
        }
    )
    for i in range(count):
        producer.produce(TOPIC, value=b"power-%06d" % i, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(60) == 0
    return acked


def cut_active_segment_in_half(cluster: ProcessCluster, broker_id: int) -> int:
    """What a power cut does to a log whose tail was still in dirty pages; bytes lost."""
    directory = Path(cluster.data_dir(broker_id)) / f"{TOPIC}-0"
    active = max(directory.glob("*.log"))
    size = active.stat().st_size
    os.truncate(active, size // 2)
    return size - size // 2


async def test_power_cut_on_the_leader_loses_no_acknowledged_record(
    cluster: ProcessCluster, wait_for: Any
) -> None:
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (
            await admin.create_topics([NewTopic(TOPIC, 1, 3, configs={"min.insync.replicas": "2"})])
        ).all()
    await wait_for(lambda: len(partition_row(cluster, TOPIC).isr) == 3, timeout=30)
    acked = produce_acknowledged(cluster.bootstrap, RECORDS)
    assert len(acked) == RECORDS
    await wait_for(lambda: replicas_identical(cluster), timeout=30, message="identical logs")
    before = partition_row(cluster, TOPIC)
    victim = before.leader
    full_log = len(segment_bytes(cluster, victim))

    await cluster.kill(victim)
    assert cut_active_segment_in_half(cluster, victim) > 0
    await cluster.restart(victim)

    # a broker is ready only once the controller unfenced it: its leadership moved first
    after = partition_row(cluster, TOPIC)
    assert after.leader_epoch > before.leader_epoch, after
    assert after.leader not in (-1, victim), after
    assert victim not in after.isr or len(segment_bytes(cluster, victim)) >= full_log, after

    def rejoined() -> bool:
        row = partition_row(cluster, TOPIC)
        assert row.leader != victim, f"the cut broker leads again: {row}"
        return victim in row.isr

    await wait_for(rejoined, timeout=60, message=f"broker {victim} back in the ISR")
    assert len(segment_bytes(cluster, victim)) >= full_log, "rejoined before catching up"
    await wait_for(lambda: replicas_identical(cluster), timeout=30, message="identical logs")
    values = consume_all(cluster.bootstrap)
    lost = acked - set(values)
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged records lost"
