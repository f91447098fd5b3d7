"""SIGKILL destination brokers while they mirror, under a continuous acks=all producer.

Two clusters of three broker processes. The source topic has three partitions (RF=3) and
an aiokafka producer writes to it all along; the destination mirrors it with RF=3. The
leader of mirror partition 0, which also leads a ``__mirror_state`` partition, is
SIGKILLed: the controller elects new leaders from the ISR, they load the stored MIRRORING
state and fetch from the source again without preparing (no re-copy), and another broker
takes the ``__mirror_state`` partition over. The killed broker restarts, recovers its
logs, truncates where the new leaders diverge and rejoins the ISR; then the new leader of
partition 0 is killed the same way. In the end every destination replica holds exactly
the source's batches (offsets, leader epochs, bytes), read from the segment files, and
no partition ever failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from helpers.processes import SYSTEM_CONFIGS, partition_row

from mirrorsim.broker.cluster import ClusterSpec
from mirrorsim.broker.supervisor import ProcessCluster
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.errors import KafkaError
from mirrorsim.protocol.records.raw_batch import iter_batches

pytestmark = [pytest.mark.system, pytest.mark.slow]

MIRROR = "dr"
TOPIC = "orders"
PARTITIONS = 3
BROKERS = (1, 2, 3)
MIRROR_STATE_TOPIC = "__mirror_state"
STATE_PARTITIONS = 3
CONFIGS = {
    **SYSTEM_CONFIGS,
    "default.replication.factor": 3,
    "mirror.topic.num.partitions": STATE_PARTITIONS,
    "mirror.fetch.max.wait.ms": 50,
}
TIMEOUT_S = 60
Fingerprint = tuple[int, int, int, bytes]


@contextlib.asynccontextmanager
async def running(cluster: ProcessCluster) -> AsyncIterator[ProcessCluster]:
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


def process_cluster(tmp_path: Path, name: str) -> ProcessCluster:
    return ProcessCluster(
        ClusterSpec(name=name, data_dir=tmp_path / name, brokers=len(BROKERS), configs=CONFIGS)
    )


class ContinuousProducer:
    """Writes to every partition until stopped; counts what the source acknowledged."""

    def __init__(self, bootstrap: str) -> None:
        self.acked = 0
        self._producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ContinuousProducer:
        await self._producer.start()
        self._task = asyncio.create_task(self._run(), name="continuous producer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._producer.stop()

    async def _run(self) -> None:
        i = 0
        while True:
            futures = [
                await self._producer.send(TOPIC, b"value-%08d" % (i + p), partition=p)
                for p in range(PARTITIONS)
            ]
            for future in futures:
                await future
                self.acked += 1
            i += PARTITIONS


def fingerprints(cluster: ProcessCluster, broker_id: int, partition: int) -> list[Fingerprint]:
    """A replica's batches as its segment files hold them (a partial tail is left out)."""
    directory = Path(cluster.data_dir(broker_id)) / f"{TOPIC}-{partition}"
    data = b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))
    return [
        (b.base_offset, b.last_offset, b.partition_leader_epoch, bytes(b.data))
        for b in iter_batches(data, allow_partial_tail=True)
    ]


def leader_log(cluster: ProcessCluster, partition: int) -> list[Fingerprint]:
    return fingerprints(cluster, partition_row(cluster, TOPIC, partition).leader, partition)


def replicas_equal_source(source: ProcessCluster, destination: ProcessCluster) -> bool:
    for partition in range(PARTITIONS):
        expected = leader_log(source, partition)
        if not expected:
            return False
        if any(fingerprints(destination, b, partition) != expected for b in BROKERS):
            return False
    return True


def mirrored_past(destination: ProcessCluster, offsets: dict[int, int]) -> bool:
    """Every destination leader's log reaches past ``offsets`` (partition → offset)."""
    for partition, offset in offsets.items():
        batches = leader_log(destination, partition)
        if not batches or batches[-1][1] < offset:
            return False
    return True


def source_log_ends(source: ProcessCluster) -> dict[int, int]:
    return {p: leader_log(source, p)[-1][1] for p in range(PARTITIONS)}


def full_isr(cluster: ProcessCluster, topic: str, partitions: int) -> bool:
    return all(set(partition_row(cluster, topic, p).isr) == set(BROKERS) for p in range(partitions))


def taken_over(cluster: ProcessCluster, partition: int, killed: int) -> bool:
    row = partition_row(cluster, TOPIC, partition)
    return row.leader not in (-1, killed) and killed not in row.isr


async def mirror_states(destination: ProcessCluster) -> dict[int, str] | None:
    """DescribeMirrors' state per partition, None while some broker cannot answer."""
    try:
        async with Admin(bootstrap=destination.bootstrap) as admin:
            described = await admin.describe_mirrors([MIRROR])
    except (KafkaError, OSError):
        return None
    return {p.partition: p.state for p in described[MIRROR].partitions if p.topic == TOPIC}


async def all_mirroring(destination: ProcessCluster) -> bool:
    states = await mirror_states(destination)
    return states == dict.fromkeys(range(PARTITIONS), "MIRRORING")


def led_partitions(cluster: ProcessCluster, topic: str, count: int, broker_id: int) -> set[int]:
    return {p for p in range(count) if partition_row(cluster, topic, p).leader == broker_id}


def victim(destination: ProcessCluster, mirror_partition: int) -> int:
    """The leader of ``mirror_partition``, which must also lead a ``__mirror_state``
    partition: the kill then moves a mirror leadership and a state coordinator at once."""
    broker_id = partition_row(destination, TOPIC, mirror_partition).leader
    assert led_partitions(destination, MIRROR_STATE_TOPIC, STATE_PARTITIONS, broker_id), (
        f"broker {broker_id} leads no {MIRROR_STATE_TOPIC} partition"
    )
    return broker_id


def destination_log_lines(cluster: ProcessCluster, pattern: str) -> list[str]:
    compiled = re.compile(pattern)
    return [
        line
        for b in BROKERS
        for line in (cluster.spec.data_dir / f"broker-{b}.log").read_text().splitlines()
        if compiled.search(line)
    ]


async def kill_and_restart(
    source: ProcessCluster,
    destination: ProcessCluster,
    producer: ContinuousProducer,
    killed: int,
    wait_for: Any,
) -> None:
    """SIGKILL ``killed`` while the producer runs; the others take over and keep
    mirroring what the source goes on writing; ``killed`` restarts and rejoins every ISR."""
    led_before = {p: partition_row(destination, TOPIC, p) for p in range(PARTITIONS)}
    await destination.kill(killed)
    await wait_for(
        lambda: all(taken_over(destination, p, killed) for p in range(PARTITIONS)),
        timeout=TIMEOUT_S,
        message=f"new leaders and ISRs without broker {killed}",
    )
    for p, row in led_before.items():
        if row.leader == killed:
            assert partition_row(destination, TOPIC, p).leader_epoch > row.leader_epoch
    acked = producer.acked
    await wait_for(lambda: producer.acked > acked + 30, timeout=TIMEOUT_S, message="records")
    produced = source_log_ends(source)
    await wait_for(
        lambda: mirrored_past(destination, produced),
        timeout=TIMEOUT_S,
        message=f"the mirror to go on without broker {killed}",
    )
    await wait_for(lambda: all_mirroring(destination), timeout=TIMEOUT_S, message="MIRRORING")

    await destination.restart(killed)
    await wait_for(
        lambda: full_isr(destination, TOPIC, PARTITIONS),
        timeout=TIMEOUT_S,
        message=f"broker {killed} back in every ISR",
    )
    produced = source_log_ends(source)
    await wait_for(
        lambda: mirrored_past(destination, produced),
        timeout=TIMEOUT_S,
        message=f"the mirror to go on with broker {killed} back",
    )


async def add_topic(destination: ProcessCluster, source: ProcessCluster, wait_for: Any) -> None:
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})

        async def added() -> bool:
            try:
                (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
            except KafkaError as exc:
                if not exc.code.retriable:
                    raise
                return False
            return True

        await wait_for(added, timeout=TIMEOUT_S, message="AddTopicsToMirror to succeed")


async def test_a_sigkilled_destination_broker_loses_nothing_of_the_mirror(
    tmp_path: Path, wait_for: Any
) -> None:
    async with (
        running(process_cluster(tmp_path, "primary")) as source,
        running(process_cluster(tmp_path, "backup")) as destination,
    ):
        async with Admin(bootstrap=source.bootstrap) as admin:
            (await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])).all()
        await wait_for(lambda: full_isr(source, TOPIC, PARTITIONS), timeout=TIMEOUT_S)
        async with ContinuousProducer(source.bootstrap) as producer:
            await wait_for(lambda: producer.acked >= 60, timeout=TIMEOUT_S, message="records")
            await add_topic(destination, source, wait_for)
            await wait_for(
                lambda: all_mirroring(destination), timeout=TIMEOUT_S, message="MIRRORING"
            )
            await wait_for(
                lambda: (
                    full_isr(destination, TOPIC, PARTITIONS)
                    and mirrored_past(destination, dict.fromkeys(range(PARTITIONS), 10))
                ),
                timeout=TIMEOUT_S,
                message="the mirror copying on every replica",
            )

            first = victim(destination, 0)
            await kill_and_restart(source, destination, producer, first, wait_for)
            second = partition_row(destination, TOPIC, 0).leader
            await kill_and_restart(source, destination, producer, second, wait_for)
        await wait_for(
            lambda: replicas_equal_source(source, destination),
            timeout=TIMEOUT_S,
            message="every destination replica equal to the source",
        )
        assert await all_mirroring(destination)
        assert destination_log_lines(destination, rf"partition {TOPIC}-\d+ failed") == []
        prepared = destination_log_lines(destination, rf"partition {TOPIC}-\d+: .*--> PREPARING")
        assert len(prepared) == PARTITIONS, "a new leader prepared (and copied) again"
        assert full_isr(destination, MIRROR_STATE_TOPIC, STATE_PARTITIONS)
