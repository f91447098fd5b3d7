"""The spec's mirroring scenarios about the source: an open transaction at failover, a
compacted source, a source leader move, partition expansion, a source without the new RPCs.

All run on two 3-broker clusters with RF=3 topics. Each test compares the mirrored prefix
batch for batch (base offset, last offset, leader epoch, bytes) on every destination
replica, and the exact offsets a cut removed.
"""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaProducer
from helpers.mirror_scenarios import (
    CONFIGS,
    TOPIC,
    every_replica_equals,
    fail_over,
    leader_of,
    partition_mirror_state,
    replica_logs,
    source_with_records,
    start_mirror,
)
from helpers.mirrors import MIRROR, produce
from helpers.replication import create_topic, stop

from mirrorsim.client import Admin
from mirrorsim.fetcher.plan import EpochSupport
from mirrorsim.protocol.records import RawBatch
from mirrorsim.protocol.records.control import MirrorPidReset, decode_control_batch

Fingerprint = tuple[int, int, int, bytes]


def _source_log(source: Any, topic: str = TOPIC, partition: int = 0) -> list[Fingerprint]:
    leader = leader_of(source, topic) if partition == 0 else None
    if leader is None:
        row = source.brokers[0].snapshot.topics[topic].partitions[partition]
        leader = next(b for b in source.brokers if b.broker_id == row.leader)
    return [
        fingerprint(b) for b in leader.replica_manager.partition(topic, partition).log.batches()
    ]


def fingerprint(batch: RawBatch) -> Fingerprint:
    return batch.base_offset, batch.last_offset, batch.partition_leader_epoch, bytes(batch.data)


def _destination_batches(destination: Any) -> list[RawBatch]:
    return list(leader_of(destination).replica_manager.partition(TOPIC, 0).log.batches())


async def test_failover_cuts_an_open_transaction_at_the_destination_lso_on_every_replica(
    start_cluster: Any, wait_for: Any
) -> None:
    """Source: 0-2 plain, 3 T1 data, 4 T2 data, 5 T1 COMMIT; its LSO is 4 (T2 open).

    The mirror copies offsets 0-3, where T1 is open (its marker was above the source LSO),
    so the destination LSO is 3; failover cuts exactly offset 3 on every replica and
    MIRROR_PID_RESET takes offset 3 in a new epoch.
    """
    source = await source_with_records(start_cluster, 3)
    destination = await start_cluster("backup", brokers=3, configs=CONFIGS)
    first = AIOKafkaProducer(bootstrap_servers=source.bootstrap, transactional_id="t1")
    second = AIOKafkaProducer(bootstrap_servers=source.bootstrap, transactional_id="t2")
    await first.start()
    await second.start()
    try:
        await first.begin_transaction()
        await first.send_and_wait(TOPIC, b"t1", partition=0)
        await second.begin_transaction()
        await second.send_and_wait(TOPIC, b"t2", partition=0)
        await first.commit_transaction()
        source_partition = leader_of(source).replica_manager.partition(TOPIC, 0)
        await wait_for(lambda: source_partition.high_watermark == 6, timeout=10)
        assert source_partition.last_stable_offset == 4
        copied = [b for b in _source_log(source) if b[1] < 4]
        assert copied[-1][:2] == (3, 3)

        await start_mirror(destination, source, wait_for)
        await wait_for(lambda: every_replica_equals(destination, copied), timeout=30)
        await wait_for(
            lambda: (
                leader_of(destination).replica_manager.partition(TOPIC, 0).last_stable_offset == 3
            ),
            timeout=10,
            message="destination LSO 3 (T1 open there)",
        )
        await fail_over(destination, wait_for)
    finally:
        await second.abort_transaction()
        await first.stop()
        await second.stop()

    batches = _destination_batches(destination)
    assert [fingerprint(b) for b in batches[:-1]] == copied[:-1]
    reset = batches[-1]
    assert reset.base_offset == 3
    assert isinstance(decode_control_batch(reset), MirrorPidReset)
    assert reset.partition_leader_epoch > max(b[2] for b in copied)
    expected = [fingerprint(b) for b in batches]
    await wait_for(lambda: every_replica_equals(destination, expected), timeout=30)
    partition = leader_of(destination).replica_manager.partition(TOPIC, 0)
    await wait_for(lambda: partition.high_watermark == 4, timeout=10)
    assert partition.last_stable_offset == 4


async def test_a_compacted_source_keeps_its_offsets_and_gaps_on_every_replica(
    start_cluster: Any, wait_for: Any
) -> None:
    """Keys a b c b c d (one batch each) compacted on the source leader before mirroring:
    offsets 1 and 2 are gone there, and the destination holds the same sparse offsets."""
    source = await start_cluster("primary", brokers=3, configs=CONFIGS)
    await create_topic(source, TOPIC, configs={"cleanup.policy": "compact"})
    producer = AIOKafkaProducer(bootstrap_servers=source.bootstrap, acks=-1)
    await producer.start()
    try:
        for key in "abcbcd":
            await producer.send_and_wait(TOPIC, b"v-" + key.encode(), key=key.encode(), partition=0)
    finally:
        await producer.stop()
    log = leader_of(source).replica_manager.partition(TOPIC, 0).log
    await wait_for(
        lambda: leader_of(source).replica_manager.partition(TOPIC, 0).high_watermark == 6
    )
    log.roll()
    await produce(source.bootstrap, TOPIC, 1, tag="active")
    stats = log.compact()
    compacted = _source_log(source)
    assert stats.records_retained < stats.records_read
    assert [b[0] for b in compacted] == [0, 3, 4, 5, 6]

    destination = await start_cluster("backup", brokers=3, configs=CONFIGS)
    await start_mirror(destination, source, wait_for)
    await wait_for(lambda: every_replica_equals(destination, compacted), timeout=30)
    assert partition_mirror_state(destination) == "MIRRORING"
    await produce(source.bootstrap, TOPIC, 2, tag="after")
    expected = _source_log(source)
    await wait_for(lambda: every_replica_equals(destination, expected), timeout=30)


async def test_mirroring_follows_a_source_leader_move_without_loss_or_duplicates(
    start_cluster: Any, wait_for: Any
) -> None:
    """The source leader broker stops mid-mirroring: the fetcher finds the new source
    leader and every destination replica ends as the new leader's log, batch for batch."""
    source = await source_with_records(start_cluster, 8)
    destination = await start_cluster("backup", brokers=3, configs=CONFIGS)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(
            MIRROR,
            {
                "bootstrap.servers": source.bootstrap,
                "request.timeout.ms": "2000",
                "default.api.timeout.ms": "2000",
            },
        )
    await start_mirror(destination, source, wait_for, create=False)
    await wait_for(lambda: every_replica_equals(destination, _source_log(source)), timeout=30)

    old_leader = leader_of(source).broker_id
    old_epoch = source.brokers[0].snapshot.topics[TOPIC].partitions[0].leader_epoch
    await stop(source, old_leader)
    await wait_for(
        lambda: (
            source.brokers[0].snapshot.topics[TOPIC].partitions[0].leader not in (old_leader, -1)
        ),
        timeout=15,
        message="a new source leader",
    )
    assert source.brokers[0].snapshot.topics[TOPIC].partitions[0].leader_epoch > old_epoch
    await produce(source.bootstrap, TOPIC, 6, tag="after-move")
    expected = _source_log(source)
    assert expected[-1][2] > old_epoch
    await wait_for(lambda: every_replica_equals(destination, expected), timeout=30)
    assert partition_mirror_state(destination) == "MIRRORING"
    bases = [b[0] for b in replica_logs(destination)[leader_of(destination).broker_id]]
    assert bases == sorted(set(bases))


async def test_source_partition_expansion_reaches_the_destination_and_is_mirrored(
    start_cluster: Any, wait_for: Any
) -> None:
    """CreatePartitions on the source; one metadata sync cycle adds the partition on the
    destination and its records are mirrored byte for byte on every replica."""
    source = await source_with_records(start_cluster, 4)
    destination = await start_cluster("backup", brokers=3, configs=CONFIGS)
    await start_mirror(destination, source, wait_for)
    await wait_for(lambda: every_replica_equals(destination, _source_log(source)), timeout=30)

    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_partitions({TOPIC: 2})).all()
    await wait_for(
        lambda: all(len(b.snapshot.topics[TOPIC].partitions) == 2 for b in source.brokers)
    )
    await produce(source.bootstrap, TOPIC, 6, tag="spread", partitions=2)

    coordinator = await wait_for(lambda: _metadata_coordinator(destination), timeout=15)
    await coordinator.refresh_now(MIRROR)
    await wait_for(
        lambda: all(len(b.snapshot.topics[TOPIC].partitions) == 2 for b in destination.brokers),
        timeout=15,
        message="two partitions on the destination",
    )
    for partition in (0, 1):
        expected = _source_log(source, partition=partition)
        await wait_for(
            lambda p=partition, e=expected: _partition_equals(destination, p, e),
            timeout=30,
            message=f"partition {partition} mirrored on every replica",
        )


def _metadata_coordinator(cluster: Any) -> Any:
    for b in cluster.brokers:
        if MIRROR in b.mirror_metadata._jobs:
            return b.mirror_metadata
    return None


def _partition_equals(cluster: Any, partition: int, expected: list[Fingerprint]) -> bool:
    logs = []
    for b in cluster.brokers:
        try:
            logs.append(
                [
                    fingerprint(x)
                    for x in b.replica_manager.partition(TOPIC, partition).log.batches()
                ]
            )
        except Exception:
            continue
    return len(logs) == 3 and all(log == expected for log in logs)


async def test_a_source_without_the_new_rpcs_or_epoch_apis_is_mirrored_with_fallbacks(
    start_cluster: Any, wait_for: Any
) -> None:
    """The source hides LastMirroredEpochs (97) and OffsetForLeaderEpoch (23) and caps Fetch
    at v11: the destination takes -1 as the LME, trusts its log up to its end (no epoch
    API) and still copies every batch unchanged."""
    old = {**CONFIGS, "test.hidden.api.keys": "97,23,1:11"}
    source = await start_cluster("primary", brokers=3, configs=old)
    await create_topic(source, TOPIC)
    await produce(source.bootstrap, TOPIC, 10, tag="old")
    destination = await start_cluster("backup", brokers=3, configs=CONFIGS)
    await start_mirror(destination, source, wait_for)
    await wait_for(lambda: every_replica_equals(destination, _source_log(source)), timeout=30)
    assert _epoch_support(destination) == {EpochSupport.NONE}

    await produce(source.bootstrap, TOPIC, 5, tag="more")
    await wait_for(lambda: every_replica_equals(destination, _source_log(source)), timeout=30)
    assert partition_mirror_state(destination) == "MIRRORING"


def _epoch_support(destination: Any) -> set[EpochSupport]:
    """How the destination leader's fetcher checks its log against the source."""
    task = leader_of(destination).mirrors.fetchers.fetcher_of((TOPIC, 0))
    assert task is not None
    return {mp.state.epoch_support for mp in task.partitions.values() if mp.state is not None}
