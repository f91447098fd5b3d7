"""Follower replication between in-process brokers: byte-identical logs, the high
watermark, ISR shrink/expand and min.insync.replicas, leader failover and rejoin."""

from __future__ import annotations

from typing import Any

from helpers.replication import (
    FAST,
    TOPIC,
    broker,
    create_topic,
    in_sync,
    log_bytes,
    partition_row,
    produce,
    restart,
    stop,
)

from mirrorsim.protocol.errors import ErrorCode


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
    fetchers = silent.replica_manager.fetchers
    assert fetchers is not None
    await fetchers.stop()
    await silent.replica_manager.apply_partition_state(
        silent.replica_manager.partition(TOPIC, 0).state
    )
    assert not fetchers.is_following(TOPIC, 0), "a refresh after the stop stays silent"
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
