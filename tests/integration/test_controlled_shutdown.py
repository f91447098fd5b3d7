"""Controlled shutdown ends with the broker out of every ISR that has another live member
(KRaft's rule), so two brokers stopped one right after the other never both stay in the
ISR, and the one that comes back first is not elected with a log the other may exceed."""

from __future__ import annotations

from typing import Any

from helpers.replication import (
    FAST,
    create_topic,
    in_sync,
    produce,
    restart,
    stop,
    stored_partition,
)

from mirrorsim.protocol.errors import ErrorCode


async def test_a_stopped_follower_has_left_the_isr_when_stop_returns(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    await create_topic(cluster)
    await wait_for(lambda: stored_partition(cluster).isr == (1, 2, 3))
    await stop(cluster, 3)
    assert stored_partition(cluster).isr == (1, 2)
    assert stored_partition(cluster).leader == 1


async def test_back_to_back_stops_leave_only_the_last_in_the_isr(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=FAST)
    await create_topic(cluster, replicas=(1, 2))
    await wait_for(lambda: stored_partition(cluster).isr == (1, 2))
    assert (await produce(cluster.brokers[0], [b"a0"]))[0] == ErrorCode.NONE
    await wait_for(lambda: in_sync(cluster))
    await stop(cluster, 2)
    await stop(cluster, 1)
    assert stored_partition(cluster).isr == (1,)
    # broker 2 alone cannot be elected cleanly; broker 1, back, leads again
    await restart(cluster, 2)
    await restart(cluster, 1)
    await wait_for(lambda: stored_partition(cluster).leader == 1)
