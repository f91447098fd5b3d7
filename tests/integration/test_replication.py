"""Follower replication between in-process brokers: byte-identical logs, the high
watermark, ISR shrink/expand and min.insync.replicas, leader failover and rejoin."""

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


async def test_followers_hold_the_leaders_bytes_and_high_watermark(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    await create_topic(cluster)
    await wait_for(lambda: broker(cluster, 1).replica_manager.partition(TOPIC, 0).is_leader)
    leader = broker(cluster, 1)
    offsets = []
    for i in range(30):
        code, base = await produce(leader, [b"value-%d-%d" % (i, j) for j in range(3)])
        assert code == ErrorCode.NONE
        offsets.append(base)
    assert offsets == list(range(0, 90, 3))
    await wait_for(lambda: in_sync(cluster), message="replicas in sync")
    assert broker(cluster, 2).replica_manager.partition(TOPIC, 0).high_watermark == 90
    expected = log_bytes(leader)
    assert log_bytes(broker(cluster, 2)) == expected
    assert log_bytes(broker(cluster, 3)) == expected
    assert partition_row(cluster).isr == (1, 2, 3)


async def test_min_insync_replicas_after_a_follower_leaves_and_rejoins(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    await create_topic(cluster, configs={"min.insync.replicas": "3"})
    leader = broker(cluster, 1)
    await wait_for(lambda: leader.replica_manager.partition(TOPIC, 0).is_leader)
    assert (await produce(leader, [b"before"]))[0] == ErrorCode.NONE

    await stop(cluster, 3)
    await wait_for(lambda: partition_row(cluster).isr == (1, 2), message="ISR without 3")
    await wait_for(lambda: leader.replica_manager.partition(TOPIC, 0).state.isr == (1, 2))
    assert (await produce(leader, [b"refused"]))[0] == ErrorCode.NOT_ENOUGH_REPLICAS
    assert (await produce(leader, [b"acks-1"], acks=1)) == (ErrorCode.NONE, 1)

    await restart(cluster, 3)
    await wait_for(lambda: partition_row(cluster).isr == (1, 2, 3), message="3 back in ISR")
    await wait_for(lambda: leader.replica_manager.partition(TOPIC, 0).state.isr == (1, 2, 3))
    assert (await produce(leader, [b"after"])) == (ErrorCode.NONE, 2)
    await wait_for(lambda: in_sync(cluster))
    assert log_bytes(broker(cluster, 3)) == log_bytes(leader)


async def test_a_silent_follower_is_dropped_and_a_waiting_produce_fails_after_append(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    await create_topic(cluster, configs={"min.insync.replicas": "3"})
    leader = broker(cluster, 1)
    await wait_for(lambda: leader.replica_manager.partition(TOPIC, 0).is_leader)
    assert (await produce(leader, [b"first"]))[0] == ErrorCode.NONE

    silent = broker(cluster, 3)
    assert silent.replica_manager.fetchers is not None
    await silent.replica_manager.fetchers.stop()
    code, _ = await produce(leader, [b"waits for the ISR"])
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    await wait_for(lambda: partition_row(cluster).isr == (1, 2))
    assert (await produce(leader, [b"refused"]))[0] == ErrorCode.NOT_ENOUGH_REPLICAS


async def test_leader_failover_bumps_the_epoch_and_the_old_leader_rejoins(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    await create_topic(cluster, configs={"min.insync.replicas": "2"})
    await wait_for(lambda: broker(cluster, 1).replica_manager.partition(TOPIC, 0).is_leader)
    for i in range(10):
        assert (await produce(broker(cluster, 1), [b"a-%d" % i]))[0] == ErrorCode.NONE
    await wait_for(lambda: in_sync(cluster))

    await stop(cluster, 1)
    row = await wait_for(
        lambda: (r := partition_row(cluster)).leader == 2 and r,
        message="broker 2 elected",
    )
    assert row.leader_epoch == 1
    assert row.isr == (2, 3)
    new_leader = broker(cluster, 2)
    await wait_for(lambda: new_leader.replica_manager.partition(TOPIC, 0).is_leader)
    assert (await produce(new_leader, [b"b-0"])) == (ErrorCode.NONE, 10)

    old = await restart(cluster, 1)
    await wait_for(lambda: partition_row(cluster).isr == (2, 3, 1), message="1 rejoins")
    await wait_for(lambda: in_sync(cluster))
    assert log_bytes(old) == log_bytes(new_leader)
    epochs = old.replica_manager.partition(TOPIC, 0).log.epoch_cache.epoch_entries
    assert [(e.epoch, e.start_offset) for e in epochs] == [(0, 0), (1, 10)]
