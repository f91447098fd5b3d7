"""Broker incarnations (KIP-841, KIP-903): a re-registration fences the old incarnation.

In-process brokers; the new incarnation of broker 1 is registered in the shared store
while the old one keeps running, which is what a broker restarted within its session
timeout looks like to the rest of the cluster, with the old process still reachable (a
paused process that resumes, for example). The controller moves broker 1's leadership with
a leader-epoch bump and drops it from the ISR; every request of the old incarnation that
carries its broker epoch is refused; the new one is unfenced once its old roles are gone.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any

import pytest
from helpers.replication import (
    FAST,
    TOPIC,
    broker,
    create_topic,
    in_sync,
    produce,
    restart,
    stop,
    stored_partition,
)

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.broker.controller.alter_partition import BrokerSession, PartitionWriter
from mirrorsim.broker.server import Broker
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode, KafkaError

SESSION_TIMEOUT_MS = int(FAST["broker.session.timeout.ms"])


async def follower_fetch(leader: Broker, replica_id: int, replica_epoch: int) -> ErrorCode:
    """One Fetch v15 from ``replica_id`` at ``replica_epoch``: the partition's error code."""
    partition = leader.replica_manager.partition(TOPIC, 0)
    connection = BrokerConnection(leader.host, leader.port, client_id="fencing-test")
    await connection.connect()
    try:
        response = await connection.send(
            build_request(
                1,
                15,
                {
                    "replica_state": {"replica_id": replica_id, "replica_epoch": replica_epoch},
                    "max_wait": datetime.timedelta(milliseconds=0),
                    "min_bytes": 1,
                    "max_bytes": 1 << 20,
                    "isolation_level": 0,
                    "session_id": 0,
                    "session_epoch": -1,
                    "topics": [
                        {
                            "topic_id": leader.replica_manager.topic_id(TOPIC),
                            "partitions": [
                                {
                                    "partition": 0,
                                    "current_leader_epoch": partition.leader_epoch,
                                    "fetch_offset": 0,
                                    "last_fetched_epoch": -1,
                                    "log_start_offset": 0,
                                    "partition_max_bytes": 1 << 20,
                                }
                            ],
                        }
                    ],
                    "forgotten_topics_data": [],
                    "rack_id": "",
                },
            )
        )
    finally:
        await connection.close()
    return ErrorCode(int(response.responses[0].partitions[0].error_code))


async def replicated_topic(cluster: ClusterRunner, wait_for: Any) -> None:
    await create_topic(cluster)
    await wait_for(lambda: stored_partition(cluster).isr == (1, 2, 3))
    await wait_for(lambda: broker(cluster, 1).replica_manager.partition(TOPIC, 0).is_leader)
    code, _ = await produce(broker(cluster, 1), [b"a", b"b", b"c"])
    assert code == ErrorCode.NONE
    await wait_for(lambda: in_sync(cluster))


async def test_a_new_incarnation_fences_the_old_one(start_cluster: Any, wait_for: Any) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    await replicated_topic(cluster, wait_for)
    old = broker(cluster, 1)
    before = stored_partition(cluster)
    store = cluster.brokers[0].store

    new_epoch = await asyncio.to_thread(store.register_broker, 1, old.host, old.port, None)
    assert new_epoch > old.broker_epoch

    def unfenced() -> bool:
        assert store.heartbeat(1, new_epoch), "the new incarnation's session"
        return not next(b for b in store.brokers() if b.broker_id == 1).fenced

    await wait_for(unfenced, message="the new incarnation unfenced")
    after = stored_partition(cluster)
    assert after.leader not in (-1, 1)
    assert after.leader_epoch > before.leader_epoch
    assert 1 not in after.isr

    # the old incarnation: no session, no ISR write, no follower fetch
    assert not store.heartbeat(1, old.broker_epoch)
    writer = PartitionWriter(store.engine)
    now = int(time.time() * 1000)
    with pytest.raises(KafkaError) as stale:
        writer.alter_isr(
            TOPIC,
            0,
            leader=1,
            leader_epoch=after.leader_epoch,
            expected_isr=after.isr,
            new_isr=(1, *after.isr),
            session=BrokerSession(now, SESSION_TIMEOUT_MS, leader_epoch=old.broker_epoch),
        )
    assert stale.value.code == ErrorCode.STALE_BROKER_EPOCH
    with pytest.raises(KafkaError) as ineligible:
        writer.alter_isr(
            TOPIC,
            0,
            leader=after.leader,
            leader_epoch=after.leader_epoch,
            expected_isr=after.isr,
            new_isr=(*after.isr, 1),
            session=BrokerSession(now, SESSION_TIMEOUT_MS, member_epochs={1: old.broker_epoch}),
        )
    assert ineligible.value.code == ErrorCode.INELIGIBLE_REPLICA
    leader = broker(cluster, after.leader)
    await wait_for(lambda: leader.snapshot.brokers[1].broker_epoch == new_epoch)
    assert await follower_fetch(leader, 1, old.broker_epoch) == ErrorCode.STALE_BROKER_EPOCH
    assert await follower_fetch(leader, 1, new_epoch) == ErrorCode.NONE


async def test_a_restarted_broker_is_unfenced_when_start_returns_and_catches_up(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    await replicated_topic(cluster, wait_for)
    old_epoch = broker(cluster, 1).broker_epoch
    await stop(cluster, 1)
    moved = stored_partition(cluster)
    assert moved.leader not in (-1, 1)
    new_leader = broker(cluster, moved.leader)
    await wait_for(
        lambda: new_leader.replica_manager.partition(TOPIC, 0).is_leader,
        message="the new leader learning of its election",
    )
    code, _ = await produce(new_leader, [b"d"])
    assert code == ErrorCode.NONE

    fresh = await restart(cluster, 1)
    assert fresh.broker_epoch > old_epoch
    registration = next(b for b in fresh.store.brokers() if b.broker_id == 1)
    assert (registration.broker_epoch, registration.fenced) == (fresh.broker_epoch, False)
    assert fresh.replica_manager.partition(TOPIC, 0).is_follower
    await wait_for(lambda: 1 in stored_partition(cluster).isr, message="rejoined")
    assert fresh.replica_manager.partition(TOPIC, 0).log_end_offset >= 4
