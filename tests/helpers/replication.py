"""Replicated topics on in-process clusters: create, produce to, stop and restart brokers."""

from __future__ import annotations

import datetime
from typing import Any

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.broker.server import Broker
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.drills.polling import wait_until
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records import Record, build_batch, iter_batches

FAST = {
    "broker.heartbeat.interval.ms": 100,
    "broker.session.timeout.ms": 1500,
    "metadata.refresh.interval.ms": 100,
    "replica.fetch.wait.max.ms": 100,
    "replica.fetch.backoff.ms": 50,
    "replica.lag.time.max.ms": 1000,
}


TOPIC = "replicated"


async def create_topic(
    cluster: ClusterRunner,
    name: str = TOPIC,
    *,
    replicas: tuple[int, ...] = (1, 2, 3),
    configs: dict[str, str] | None = None,
) -> None:
    """Create ``name`` with one partition on ``replicas``, once the creating broker sees
    each of them alive: a manual assignment naming a broker whose session lapsed (a
    heartbeat delayed on a loaded machine) is refused, as in Kafka."""
    creator = cluster.brokers[0]
    await wait_until(
        lambda: set(replicas) <= {b.broker_id for b in creator.live_brokers()},
        30,
        f"brokers {replicas} alive",
        retry_on=(),
    )
    await creator.controller.create_topic(name, assignments={0: replicas}, configs=configs or {})


def broker(cluster: ClusterRunner, broker_id: int) -> Broker:
    return next(b for b in cluster.brokers if b.broker_id == broker_id)


def partition_row(cluster: ClusterRunner, topic: str = TOPIC) -> Any:
    return cluster.brokers[0].snapshot.topics[topic].partitions[0]


async def produce(
    target: Broker, records: list[bytes], *, acks: int = -1, topic: str = TOPIC
) -> tuple[ErrorCode, int]:
    """One Produce v9 of one batch straight to ``target``: (error code, base offset)."""
    batch = build_batch([Record(i, 1_000 + i, None, value) for i, value in enumerate(records)])
    connection = BrokerConnection(target.host, target.port, client_id="replication-test")
    await connection.connect()
    try:
        response = await connection.send(
            build_request(
                0,
                9,
                {
                    "transactional_id": None,
                    "acks": acks,
                    "timeout": datetime.timedelta(milliseconds=10_000),
                    "topic_data": [
                        {"name": topic, "partition_data": [{"index": 0, "records": batch.data}]}
                    ],
                },
            )
        )
    finally:
        await connection.close()
    answer = response.responses[0].partition_responses[0]
    return ErrorCode(int(answer.error_code)), int(answer.base_offset)


def log_bytes(target: Broker, topic: str = TOPIC) -> bytes:
    """The partition's batches from log start to log end, as stored."""
    log = target.replica_manager.partition(topic, 0).log
    out = bytearray()
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        read = log.read(offset, 1 << 20)
        assert read.records, f"nothing readable at {offset}"
        out += read.records
        offset = list(iter_batches(read.records))[-1].next_offset
    return bytes(out)


def in_sync(cluster: ClusterRunner, topic: str = TOPIC) -> bool:
    """Every replica has the leader's log end offset and high watermark."""
    parts = [
        p
        for b in cluster.brokers
        for p in b.replica_manager.partitions()
        if (p.topic, p.index) == (topic, 0)
    ]
    return len({(p.log_end_offset, p.high_watermark) for p in parts}) == 1


async def restart(cluster: ClusterRunner, broker_id: int) -> Broker:
    """Start broker ``broker_id`` again on its data directory (it was stopped)."""
    fresh = Broker(
        broker_id=broker_id,
        host="127.0.0.1",
        port=0,
        data_dir=cluster.spec.data_dir / f"broker-{broker_id}",
        metadata_url=cluster.spec.effective_metadata_url,
        configs=cluster.spec.configs,
    )
    await fresh.start()
    cluster.brokers.append(fresh)
    return fresh


async def stop(cluster: ClusterRunner, broker_id: int) -> None:
    target = broker(cluster, broker_id)
    cluster.brokers.remove(target)
    await target.stop()


def stored_partition(cluster: ClusterRunner) -> Any:
    """Partition 0 as the metadata store has it now (not a broker's last refresh)."""
    return cluster.brokers[0].store.snapshot().topics[TOPIC].partitions[0]
