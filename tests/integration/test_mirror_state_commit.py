"""A ``__mirror_state`` write is answered only once every ISR member has it, so a
controlled shutdown of the state partition's leader (which hands the partition to an ISR
member) cannot lose a state a mirror partition already acted on."""

from __future__ import annotations

from typing import Any

from helpers.replication import FAST, broker, create_topic

from mirrorsim.coordinator.state_machine import MirrorPartitionState, StateUpdate
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
