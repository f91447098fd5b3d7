"""Elections over the wire: ElectLeaders PREFERRED and UNCLEAN, and the divergence an
unclean election causes (the old leader truncates to the new leader's epoch boundary)."""

from __future__ import annotations

import datetime
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

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.broker.controller import ElectionType
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records import decode_records, iter_batches


async def elect(cluster: ClusterRunner, election_type: ElectionType, *, at: int = 0) -> Any:
    """ElectLeaders v2 for partition 0, sent to ``cluster.brokers[at]``."""
    target = cluster.brokers[at]
    connection = BrokerConnection(target.host, target.port, client_id="election-test")
    await connection.connect()
    try:
        response = await connection.send(
            build_request(
                43,
                2,
                {
                    "election_type": int(election_type),
                    "topic_partitions": [{"topic": TOPIC, "partitions": [0]}],
                    "timeout": datetime.timedelta(seconds=10),
                },
            )
        )
    finally:
        await connection.close()
    return response


def partition_code(response: Any) -> ErrorCode:
    assert int(response.error_code) == ErrorCode.NONE
    return ErrorCode(int(response.replica_election_results[0].partition_result[0].error_code))


def controller_index(cluster: ClusterRunner) -> int:
    for i, b in enumerate(cluster.brokers):
        if b.cluster_controller.is_active():
            return i
    return -1


def values_by_offset(cluster: ClusterRunner, broker_id: int) -> dict[int, bytes]:
    log = broker(cluster, broker_id).replica_manager.partition(TOPIC, 0).log
    found: dict[int, bytes] = {}
    for batch in iter_batches(log.read(0, 1 << 20).records):
        for record in decode_records(batch):
            assert record.value is not None
            found[record.offset] = record.value
    return found


async def test_unclean_election_loses_exactly_the_unreplicated_suffix(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    await create_topic(cluster, replicas=(1, 2))
    await wait_for(lambda: broker(cluster, 1).replica_manager.partition(TOPIC, 0).is_leader)
    for i in range(5):
        assert (await produce(broker(cluster, 1), [b"kept-%d" % i])) == (ErrorCode.NONE, i)
    await wait_for(
        lambda: broker(cluster, 2).replica_manager.partition(TOPIC, 0).log_end_offset == 5
    )

    await stop(cluster, 2)
    await wait_for(lambda: partition_row(cluster).isr == (1,), message="ISR shrinks to [1]")
    for i in range(5, 10):
        assert (await produce(broker(cluster, 1), [b"lost-%d" % i], acks=1)) == (
            ErrorCode.NONE,
            i,
        )

    await stop(cluster, 1)
    await wait_for(lambda: partition_row(cluster).leader == -1, message="partition offline")
    assert partition_row(cluster).isr == (1,)
    lagging = await restart(cluster, 2)
    await wait_for(lambda: 2 in {b.broker_id for b in cluster.brokers[0].live_brokers()})
    await wait_for(lambda: controller_index(cluster) >= 0, message="an active controller")
    preferred = await elect(cluster, ElectionType.PREFERRED, at=controller_index(cluster))
    assert partition_code(preferred) == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert partition_row(cluster).leader == -1

    unclean = await elect(cluster, ElectionType.UNCLEAN, at=controller_index(cluster))
    assert partition_code(unclean) == ErrorCode.NONE
    row = await wait_for(lambda: (r := partition_row(cluster)).leader == 2 and r)
    assert (row.leader_epoch, row.isr) == (2, (2,))
    await wait_for(lambda: lagging.replica_manager.partition(TOPIC, 0).is_leader)
    for i in range(3):
        assert (await produce(lagging, [b"new-%d" % i])) == (ErrorCode.NONE, 5 + i)

    old_leader = await restart(cluster, 1)
    await wait_for(lambda: partition_row(cluster).isr == (2, 1), message="1 rejoins the ISR")
    await wait_for(lambda: in_sync(cluster))
    assert log_bytes(old_leader) == log_bytes(lagging)
    values = values_by_offset(cluster, 1)
    assert values == {
        **{i: b"kept-%d" % i for i in range(5)},
        **{5 + i: b"new-%d" % i for i in range(3)},
    }
    lost = {i: b"lost-%d" % i for i in range(5, 10)}
    assert not set(values.items()) & set(lost.items())
    epochs = old_leader.replica_manager.partition(TOPIC, 0).log.epoch_cache.epoch_entries
    assert [(e.epoch, e.start_offset) for e in epochs] == [(0, 0), (2, 5)]


async def test_elect_leaders_preferred_moves_leadership_back(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    await create_topic(cluster)
    await wait_for(lambda: controller_index(cluster) >= 0)
    not_needed = await elect(cluster, ElectionType.PREFERRED, at=controller_index(cluster))
    assert partition_code(not_needed) == ErrorCode.ELECTION_NOT_NEEDED
    unclean = await elect(cluster, ElectionType.UNCLEAN, at=controller_index(cluster))
    assert partition_code(unclean) == ErrorCode.ELECTION_NOT_NEEDED

    await stop(cluster, 1)
    await wait_for(lambda: partition_row(cluster).leader == 2)
    await restart(cluster, 1)
    await wait_for(lambda: partition_row(cluster).isr == (2, 3, 1))
    await wait_for(lambda: controller_index(cluster) >= 0)
    non_controller = (controller_index(cluster) + 1) % len(cluster.brokers)
    refused = await elect(cluster, ElectionType.PREFERRED, at=non_controller)
    assert int(refused.error_code) == ErrorCode.NOT_CONTROLLER

    moved = await elect(cluster, ElectionType.PREFERRED, at=controller_index(cluster))
    assert partition_code(moved) == ErrorCode.NONE
    row = await wait_for(lambda: (r := partition_row(cluster)).leader == 1 and r)
    assert row.leader_epoch == 2
    await wait_for(lambda: broker(cluster, 1).replica_manager.partition(TOPIC, 0).is_leader)
    assert (await produce(broker(cluster, 1), [b"back"]))[0] == ErrorCode.NONE


async def test_the_controller_moves_leadership_back_to_the_preferred_replica_on_its_own(
    start_cluster: Any, wait_for: Any
) -> None:
    """``auto.leader.rebalance.enable`` (Kafka's default): once the restarted preferred
    replica is back in the ISR, the active controller's next balancing pass makes it the
    leader again, with no ElectLeaders from anyone."""
    cluster = await start_cluster(
        brokers=3, configs={**FAST, "leader.imbalance.check.interval.seconds": 1}
    )
    await create_topic(cluster)
    await stop(cluster, 1)
    await wait_for(lambda: partition_row(cluster).leader == 2)
    await restart(cluster, 1)
    row = await wait_for(
        lambda: (r := partition_row(cluster)).leader == 1 and r,
        timeout=15.0,
        message="the preferred replica leads again",
    )
    assert (row.leader_epoch, set(row.isr)) == (2, {1, 2, 3})
    await wait_for(lambda: broker(cluster, 1).replica_manager.partition(TOPIC, 0).is_leader)
    assert (await produce(broker(cluster, 1), [b"back"]))[0] == ErrorCode.NONE


async def test_a_balancing_pass_moves_nothing_when_auto_rebalance_is_off(
    start_cluster: Any, wait_for: Any
) -> None:
    """The same restart with ``auto.leader.rebalance.enable=false``: a balancing pass run
    on the active controller moves nothing, and the same pass with the config on moves
    exactly the one partition (run by hand, so the test waits on nothing but the ISR)."""
    cluster = await start_cluster(
        brokers=3, configs={**FAST, "auto.leader.rebalance.enable": "false"}
    )
    await create_topic(cluster)
    await stop(cluster, 1)
    await wait_for(lambda: partition_row(cluster).leader == 2)
    await restart(cluster, 1)
    await wait_for(lambda: set(partition_row(cluster).isr) == {1, 2, 3})
    await wait_for(lambda: controller_index(cluster) >= 0)
    controller = cluster.brokers[controller_index(cluster)]
    assert await controller.cluster_controller.balance_leaders() == 0
    assert partition_row(cluster).leader == 2
    controller.static_configs = {
        **controller.static_configs,
        "auto.leader.rebalance.enable": "true",
    }
    assert await controller.cluster_controller.balance_leaders() == 1
    await wait_for(lambda: partition_row(cluster).leader == 1)
