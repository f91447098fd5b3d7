"""A ``__mirror_state`` write is answered only once every ISR member has it, so a
controlled shutdown of the state partition's leader (which hands the partition to an ISR
member) cannot lose a state a mirror partition already acted on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.replication import FAST, broker, create_topic

from mirrorsim.coordinator.state_machine import MirrorPartitionState, StateUpdate
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.mirror_state_records import MIRROR_STATE_TOPIC

MIRROR = "my-mirror"


def replica_log_ends(cluster: Any, index: int) -> dict[int, int]:
    ends = {}
    for member in cluster.brokers:
        replica = member.replica_manager.partition(MIRROR_STATE_TOPIC, index)
        ends[member.broker_id] = int(replica.log.log_end_offset)
    return ends


async def test_a_state_write_returns_once_every_isr_member_has_it(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=2, configs={**FAST, "mirror.topic.num.partitions": 1})
    await create_topic(cluster, "orders", replicas=(1, 2))
    first = cluster.brokers[0]
    await first.mirrors.state_topic.ensure_created()
    await wait_for(
        lambda: (
            all(len(p.isr) == 2 for p in first.snapshot.topics[MIRROR_STATE_TOPIC].partitions)
            and all(MIRROR_STATE_TOPIC in b.snapshot.topics for b in cluster.brokers)
        ),
        message="__mirror_state in sync on both brokers",
    )
    await wait_for(lambda: first.mirrors.state_topic.leader_of(0) >= 0)
    coordinator = broker(cluster, first.mirrors.state_topic.leader_of(0))
    await wait_for(lambda: 0 in coordinator.mirrors.state_topic.stores())

    for state in (MirrorPartitionState.PREPARING, MirrorPartitionState.MIRRORING):
        await coordinator.mirrors.states.write(MIRROR, "orders", {0: StateUpdate(state=state)})
        ends = replica_log_ends(cluster, 0)
        assert len(set(ends.values())) == 1 and min(ends.values()) > 0, ends

    stored = await coordinator.mirrors.states.read(MIRROR, "orders", [0])
    assert stored[0].state is MirrorPartitionState.MIRRORING


async def test_a_state_read_routed_to_a_stopped_coordinator_fails_at_once_as_retriable(
    start_cluster: Any, wait_for: Any
) -> None:
    """Seed 5, schedule 47 of the chaos soak: a failback's LastMirroredEpochs reached a
    broker whose snapshot still named a stopped broker as the ``__mirror_state`` leader,
    and the read knocked on its door until the api timeout, past the asking cluster's
    3 s request timeout, again and again. The read now fails with
    COORDINATOR_NOT_AVAILABLE at once, and the caller retries with fresh routing.
    Snapshots are refreshed by hand here, so the asker's stays stale after the stop."""
    stale = {"metadata.refresh.interval.ms": 600_000, "mirror.topic.num.partitions": 1}
    cluster = await start_cluster(brokers=2, configs={**FAST, **stale})
    await create_topic(cluster, "orders", replicas=(1, 2))
    first = cluster.brokers[0]
    await first.mirrors.state_topic.ensure_created()

    async def state_topic_led_everywhere() -> bool:
        for b in cluster.brokers:
            await b.refresh_metadata()
        return all(
            MIRROR_STATE_TOPIC in b.snapshot.topics and b.mirrors.state_topic.leader_of(0) >= 0
            for b in cluster.brokers
        )

    await wait_for(state_topic_led_everywhere, message="__mirror_state led, seen by both")
    coordinator = broker(cluster, first.mirrors.state_topic.leader_of(0))
    asker = next(b for b in cluster.brokers if b is not coordinator)
    cluster.brokers.remove(coordinator)
    coordinator.static_configs = {
        **coordinator.static_configs,
        "controlled.shutdown.enable": "false",
    }
    await coordinator.stop()
    assert asker.mirrors.state_topic.leader_of(0) == coordinator.broker_id
    with pytest.raises(KafkaError) as refused:
        async with asyncio.timeout(15):
            await asker.mirrors.states.read(MIRROR, "orders", [0])
    assert refused.value.code == ErrorCode.COORDINATOR_NOT_AVAILABLE


@pytest.mark.parametrize("state", list(MirrorPartitionState))
async def test_every_state_written_through_another_broker_is_stored_as_written(
    start_cluster: Any, wait_for: Any, state: MirrorPartitionState
) -> None:
    """PREPARING is state id 0 on the wire: sent by a partition leader that does not
    coordinate its state, it went out as UNKNOWN (no change), so the coordinator kept
    STOPPED while the leader prepared, and an add waiting for the partition to leave
    STOPPED never saw it leave."""
    cluster = await start_cluster(brokers=2, configs={**FAST, "mirror.topic.num.partitions": 1})
    await create_topic(cluster, "orders", replicas=(1, 2))
    first = cluster.brokers[0]
    await first.mirrors.state_topic.ensure_created()
    await wait_for(lambda: all(MIRROR_STATE_TOPIC in b.snapshot.topics for b in cluster.brokers))
    await wait_for(lambda: first.mirrors.state_topic.leader_of(0) >= 0)
    coordinator = broker(cluster, first.mirrors.state_topic.leader_of(0))
    (writer,) = [b for b in cluster.brokers if b is not coordinator]
    await wait_for(lambda: 0 in coordinator.mirrors.state_topic.stores())
    await wait_for(lambda: writer.mirrors.state_topic.leader_of(0) == coordinator.broker_id)

    stopped = StateUpdate(state=MirrorPartitionState.STOPPED)
    await writer.mirrors.states.write(MIRROR, "orders", {0: stopped})
    await writer.mirrors.states.write(MIRROR, "orders", {0: StateUpdate(state=state)})

    expected = MirrorPartitionState.STOPPED if state is MirrorPartitionState.UNKNOWN else state
    assert coordinator.mirrors.states.read_local(MIRROR, "orders", [0])[0].state is expected
